"""Multi-process training on CPU (gloo): a GRPO group split across ranks gives the advantages of one
process, and ``accelerate launch`` runs the trainer on 2 processes that split the batch and stay in sync."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch.distributed as dist
import torch.multiprocessing as mp

from evolver_train.advantages import EpisodeSignals, combine_step_advantages, gather_episodes

G = 4  # group size; 2 rows per rank, so each group of 4 is split 2 + 2 over the ranks


def _episodes():
    rng = np.random.default_rng(0)
    out = []
    for _ in range(8):  # 2 groups of 4
        k = int(rng.integers(1, 4))
        out.append({"outcome": float(rng.integers(0, 2)), "rewards": rng.random(k).round(2).tolist(),
                    "labels": rng.choice([-1.0, 1.0], k).tolist(), "anchors": [f"s{j}" for j in range(k)]})
    return out


def _advantages(records):
    signals = [EpisodeSignals(group=j // G, outcome=r["outcome"], step_rewards=r["rewards"], labels=r["labels"],
                              anchors=r["anchors"]) for j, r in enumerate(records)]
    adv, _ = combine_step_advantages(signals, alpha=0.2, omega=1.0, gamma=0.9)
    return adv


def _worker(rank, world, port, batches, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        for local in batches[rank]:
            merged, mine = gather_episodes(local)
            out.put((rank, [a.tolist() for a in _advantages(merged)[mine]]))
    finally:
        dist.destroy_process_group()


def test_split_group_matches_single_process():
    records = _episodes()
    single = [a.tolist() for a in _advantages(records)]
    # TRL's layout with per-device batch 2 and 2 ranks over 2 generation batches:
    # generation batch b has 4 rows = 1 group; rank 0 holds rows 0-1, rank 1 rows 2-3.
    per_rank = {0: [records[0:2], records[4:6]], 1: [records[2:4], records[6:8]]}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, 2, port, per_rank, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in range(4)]  # spawn + imports: slow on a loaded machine
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    got = {0: [], 1: []}
    for rank, adv in results:
        got[rank].append(adv)
    # Each generation batch is one whole group: its single-process advantages.
    group0 = [a.tolist() for a in _advantages(records[0:4])]
    group1 = [a.tolist() for a in _advantages(records[4:8])]
    assert got[0][0] == group0[0:2] and got[1][0] == group0[2:4]
    assert got[0][1] == group1[0:2] and got[1][1] == group1[2:4]
    # And in the whole-batch computation the same numbers appear (groups are independent).
    assert single[0:4] == group0 and single[4:8] == group1
    # A rank alone would compute something different: the split matters.
    alone = [a.tolist() for a in _advantages(records[0:2])]
    assert alone != group0[0:2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_accelerate_launch_two_cpu_processes_train_in_sync(tmp_path):
    # accelerate's multi-process launcher (torch.distributed.run) with ACCELERATE_USE_CPU: MULTI_CPU on gloo.
    root = Path(__file__).resolve().parents[2]
    # PYTHONFAULTHANDLER: should a rank abort, its Python stack is in stderr (the assertion message).
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "--main_process_port", str(_free_port()), str(root / "tests/train/distributed_run.py"), str(tmp_path)]
    done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, timeout=600)
    written = sorted(p.name for p in tmp_path.glob("rank*.json"))
    assert done.returncode == 0, f"records written: {written}\n{done.stderr[-3000:]}"
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for r, rec in enumerate(ranks):
        assert (rec["rank"], rec["world"], rec["backend"]) == (r, 2, "gloo")
        assert rec["distributed_type"].endswith("MULTI_CPU")
        assert len(rec["played"]) == 8  # 2 steps x 4 rows per device: one whole group of G=4 per step
    # each rank played its own groups (the global batch of 8 rows = 2 groups is split, not duplicated)
    assert set(ranks[0]["played"]).isdisjoint(ranks[1]["played"])
    # gradients were all-reduced: both ranks hold the same trained weights, and training moved them
    assert ranks[0]["before"] == ranks[1]["before"] and ranks[0]["after"] == ranks[1]["after"]
    assert ranks[0]["after"] != ranks[0]["before"]
