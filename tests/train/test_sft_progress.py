"""The warm start reports its progress (ETA, TensorBoard) and resumes a killed run to the same weights."""

from __future__ import annotations

import shutil

import pytest

from evolver_train.errors import ConfigError
from evolver_train.sft import SFTConfig, finished_sft_mismatch, train_sft

ENV_KWARGS = {"num_products": 200, "max_steps": 8, "goals": "synthetic"}
SMALL = dict(env_kwargs=ENV_KWARGS, max_minutes=0, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_demonstrations=40, batch_size=4, max_steps=12, log_every=4, relabel_ids="b0([a-z0-9]{8})")


def _weights(folder):
    import torch

    from evolver_train.policy import load_policy

    model, _ = load_policy(str(folder))
    return {k: v.clone() for k, v in model.state_dict().items()}, torch


def test_progress_lines_tensorboard_and_checkpoints(tmp_path, capsys):
    config = SFTConfig(output_dir=str(tmp_path / "sft"), save_steps=5, save_total_limit=2, **SMALL)
    train_sft(config)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("sft: step ")]
    assert [line.split()[2] for line in lines] == ["4/12", "8/12", "12/12"]
    assert all(", ETA " in line and "tokens/s" in line for line in lines) and lines[-1].endswith("ETA 0m00s)")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "sft" / "runs"))
    events.Reload()
    assert {"sft/loss", "sft/loss_ema", "sft/learning_rate", "sft/tokens_per_second"} <= set(events.Tags()["scalars"])
    assert [e.step for e in events.Scalars("sft/loss")] == list(range(1, 13))
    # checkpoints every 5 steps, the newest 2 kept
    assert sorted(p.name for p in (tmp_path / "sft" / "checkpoints").iterdir()) == ["step-10", "step-5"]
    # progress settings do not make a finished run look different
    other = SFTConfig(**{**config.__dict__, "output_dir": str(tmp_path / "sft"), "report_to": "none", "save_steps": 0})
    assert finished_sft_mismatch(tmp_path / "sft", other) is None


def test_a_killed_run_resumes_to_the_weights_of_an_uninterrupted_one(tmp_path, capsys):
    full = SFTConfig(output_dir=str(tmp_path / "full"), save_steps=5, save_total_limit=2, report_to="none", **SMALL)
    train_sft(full)
    # the state a run killed after step 5 leaves behind: its step-5 checkpoint and nothing else
    killed = tmp_path / "killed"
    shutil.copytree(tmp_path / "full" / "checkpoints" / "step-5", killed / "checkpoints" / "step-5")
    capsys.readouterr()
    # continued under another time limit (the one that stopped it, say): the same run
    train_sft(SFTConfig(**{**full.__dict__, "output_dir": str(killed), "max_minutes": 60.0}))
    out = capsys.readouterr().out
    assert f"sft: resuming from {killed / 'checkpoints' / 'step-5'} at step 5 of 12" in out
    assert "sft: step 4/12" not in out and "sft: step 8/12" in out
    a, torch = _weights(tmp_path / "full")
    b, _ = _weights(killed)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # the loss history recorded with the checkpoint (learning_curves.png draws it) spans the kill
    import json

    def losses(folder):
        return [(r["step"], r["loss"]) for r in json.loads((folder / "sft_config.json").read_text())["log_history"]]

    assert losses(tmp_path / "full") == losses(killed) and [s for s, _ in losses(killed)] == [4, 8, 12]
    # other settings never resume from it: a fresh run, and the stale checkpoints go
    capsys.readouterr()
    train_sft(SFTConfig(**{**full.__dict__, "output_dir": str(killed), "learning_rate": 1e-2, "save_steps": 0}))
    out = capsys.readouterr().out
    assert "not resuming from" in out and "resuming from" not in out.replace("not resuming from", "")
    assert not (killed / "checkpoints").exists()
    c, _ = _weights(killed)
    assert not all(torch.equal(a[k], c[k]) for k in a)


@pytest.mark.parametrize("bad, needle", [
    ({"report_to": "wandb"}, "report_to must be 'tensorboard' or 'none', got 'wandb'"),
    ({"save_steps": -1}, "save_steps must be an int >= 0, got -1"),
    ({"save_total_limit": 0}, "save_total_limit must be an int >= 1, got 0"),
    ({"resume": "yes"}, "resume must be true or false, got 'yes'")])
def test_bad_progress_settings_name_the_value(bad, needle):
    with pytest.raises(ConfigError, match=needle):
        SFTConfig(**bad)


def test_demonstration_collection_and_synthesis_report_progress(capsys):
    import gymnasium as gym

    import evolver_gym  # noqa: F401
    from evolver_train.sft import _Ticker, collect_demonstrations

    ticker = _Ticker("demonstrations", 10, "played", every=0.0)
    ticker(0)
    env = gym.make("evolver/WebShop-v0", **ENV_KWARGS)
    demos = collect_demonstrations(env, env.unwrapped.tasks("train"), 10, imperfect_share=0.0, progress=ticker)
    lines = capsys.readouterr().out.splitlines()
    assert len(demos) == 10 and len(lines) == 9  # 1..9 of 10; the last one is the caller's to report
    assert lines[0].startswith("sft: demonstrations: 1/10 played (") and ", ETA " in lines[0]
    assert lines[-1].startswith("sft: demonstrations: 9/10 played (")
