#!/usr/bin/env bash
# Prepared GPU check, at most 10 minutes on one GPU: installs the vllm extra, fetches the offline chat
# model, runs a few GRPO steps of configs/smollm2_webshop.yaml with vLLM in colocate mode and prints
# rollout and update tokens/s, peak memory and the held-out success before and after.
#   bash scripts/gpu_check.sh              # on a machine with a CUDA GPU
#   bash scripts/gpu_check.sh --dry-run    # CPU, no install, tiny policy: checks the wiring (CI)
# Other arguments go to scripts/gpu_check.py (--steps, --tasks, --eval-tasks, --model).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
if [[ " $* " == *" --dry-run "* ]]; then
  exec timeout 600 "$PY" scripts/gpu_check.py "$@"
fi
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
  || { echo "gpu_check: no CUDA device visible; use --dry-run on CPU" >&2; exit 2; }
# vLLM brings the CUDA build of torch it was compiled against.
"$PY" -m pip install -q -e ".[vllm]"
"$PY" -m evolver_train.cli models fetch smollm2-135m-instruct
exec timeout 540 "$PY" scripts/gpu_check.py "$@"
