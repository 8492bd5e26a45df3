#!/bin/bash
# honest_split.py from the questioning worktree, one thread
cd /work/wt-q && PYTHONPATH=/work/wt-q OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 exec /work/main/.venv/bin/python benchmarks/honest_split.py --num-threads 1 "$@"
