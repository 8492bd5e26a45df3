#!/usr/bin/env bash
# Create .venv and install evolver-gym with every extra (and the dev and docs tools), offline-friendly.
# torch is installed first at a pinned CPU-capable version (TORCH_SPEC to override), so that the
# "torch>=..." requirement of the train extra is already met and pip never pulls a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
python -c "import torch" 2>/dev/null || python -m pip install -q "$TORCH_SPEC"
python -m pip install -q -e ".[all,dev,docs]"
echo "evolver-gym installed in $(pwd)/.venv"
