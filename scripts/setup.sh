#!/usr/bin/env bash
# Create .venv and install evolver-gym with every extra (and the dev and docs tools), offline-friendly.
# torch is installed first at a pinned CPU-capable version (TORCH_SPEC to override), so that the
# "torch>=..." requirement of the train extra is already met and pip never pulls a CUDA build.
# Every other package is pinned by scripts/constraints.txt, the versions the recorded figures were measured
# with (EVOLVER_CONSTRAINTS names another file; set it empty for the newest versions pyproject.toml allows).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
python -c "import torch" 2>/dev/null || python -m pip install -q "$TORCH_SPEC"
CONSTRAINTS=${EVOLVER_CONSTRAINTS-scripts/constraints.txt}
if [ -z "$CONSTRAINTS" ]; then
  python -m pip install -q -e ".[all,dev,docs]"
elif ! python -m pip install -q -c "$CONSTRAINTS" -e ".[all,dev,docs]"; then
  # A pinned version this Python or platform has no build of: install anyway, and say what it costs.
  echo "setup: the versions pinned in $CONSTRAINTS do not install here; installing the newest allowed" \
       "versions instead (seeds then need not reproduce the figures in benchmarks/RESULTS.md)" >&2
  python -m pip install -q -e ".[all,dev,docs]"
fi
echo "evolver-gym installed in $(pwd)/.venv"
