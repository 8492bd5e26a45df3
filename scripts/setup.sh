#!/usr/bin/env bash
# Create .venv and install evolver-gym with every extra (and the dev and docs tools), offline-friendly.
# torch is installed first at a pinned CPU-capable version (TORCH_SPEC to override), so that the
# "torch>=..." requirement of the train extra is already met and pip never pulls a CUDA build.
# Every other package is pinned by scripts/constraints.txt, the versions the recorded figures were measured
# with (EVOLVER_CONSTRAINTS names another file; set it empty for the newest versions pyproject.toml allows).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# AppWorld's real apps (evolver/AppWorldApps-v0, docs/appworld-apps.md): appworld==0.1.3.post1 pins pydantic v1
# and an old FastAPI, so it gets its own virtualenv, .venv-appworld, which a server process runs from; .venv is
# left untouched. Opt-in: `bash scripts/setup.sh appworld-apps` (this step alone) or EVOLVER_APPWORLD_APPS=1.
appworld_apps() {
  [ -x .venv-appworld/bin/python ] || "$PY" -m venv .venv-appworld
  .venv-appworld/bin/python -m pip install -q -c scripts/constraints-appworld.txt "${APPWORLD_SPEC:-appworld==0.1.3.post1}"
  .venv-appworld/bin/appworld install >/dev/null  # unpacks the encrypted app code into that install
  echo "AppWorld's apps installed in $(pwd)/.venv-appworld"
}
if [ "${1:-}" = appworld-apps ]; then appworld_apps; exit 0; fi
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
# The Diplomacy engine (arena.diplomacy_v0): AGPL-3.0, so outside `all` and never bundled; the
# arena.diplomacy tests skip without it. EVOLVER_DIPLOMACY=0 leaves it out.
if [ "${EVOLVER_DIPLOMACY:-1}" != 0 ]; then
  python -m pip install -q ${CONSTRAINTS:+-c "$CONSTRAINTS"} -e ".[diplomacy]" ||
    echo "setup: the diplomacy engine did not install; the arena.diplomacy tests will skip" >&2
fi
# BFCL-v3 multi-turn (evolver/BFCL-v0): bfcl-eval without its dependency tree, whose pins (numpy 1.26.4,
# hosted-LLM SDKs) must not enter this environment (docs/bfcl.md). BFCL_SPEC= (empty) skips it.
BFCL_SPEC=${BFCL_SPEC-bfcl-eval==2026.3.23}
[ -z "$BFCL_SPEC" ] || python -m pip install -q --no-deps "$BFCL_SPEC"
[ "${EVOLVER_APPWORLD_APPS:-0}" != 1 ] || appworld_apps
echo "evolver-gym installed in $(pwd)/.venv"
