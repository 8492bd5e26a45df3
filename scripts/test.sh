#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The docstring examples of the packages run too (doctests), so documentation cannot drift from code.
exec .venv/bin/python -m pytest -m "not slow and not gpu" tests \
  --doctest-modules evolver_gym wrappers arena evolver_train "$@"
