"""A multi-process launch that did not set up distributed training fails loudly instead of training copies."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    # What torch.distributed.run gives rank 0 of `accelerate launch --num_processes 2`, no CUDA device visible.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELERATE_")}
    env.update({"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29999", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1",
                **extra})
    return env


@pytest.mark.slow  # two processes import TRL and build the run: ~45 s on 2 cores
def test_accelerate_launch_without_cpu_backend_fails_loudly(tmp_path):
    import yaml

    config = yaml.safe_load((ROOT / "configs/basic.yaml").read_text())
    config.update(output_dir=str(tmp_path / "run"), max_steps=1)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELERATE_")}
    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", "configs/accelerate/multi_cpu.yaml",
           "--main_process_port", str(port), "-m", "evolver_train.cli", "train", "--config", str(tmp_path / "run.yaml")]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0, done.stderr[-2000:]
    refusals = [line for line in done.stderr.splitlines()
                if line.startswith("evolver train: this process is one of WORLD_SIZE=2 launched processes")]
    assert len(refusals) == 2, done.stderr[-3000:]  # each rank says why
    assert "distributed_type NO" in refusals[0] and "ACCELERATE_USE_CPU=true" in refusals[0]
    assert not (tmp_path / "run").exists()  # refused before anything was trained or written


def test_check_passes_single_process_and_a_real_cpu_process_group():
    code = "from evolver_train.launch import check_distributed_launch as c; c(); print('ok')"
    single = {k: v for k, v in _env().items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=single, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    # one rank of a world of one, with accelerate on CPUs: gloo, distributed, the check passes
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=_env(WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", ACCELERATE_USE_CPU="true"))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.parametrize("value", ["two", "2.5"])
def test_a_malformed_world_size_is_named(value):
    code = "from evolver_train.launch import check_distributed_launch as c; c()"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(WORLD_SIZE=value), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and f"WORLD_SIZE must be an integer, got {value!r}" in done.stderr
