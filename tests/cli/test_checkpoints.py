"""Resuming: ``resume_from_checkpoint: true`` takes the last complete checkpoint, and a run killed (SIGKILL)
in the middle of a checkpoint save always resumes.

The killed runs are real processes: a trainer in a subprocess kills itself with SIGKILL at a chosen point
inside the save of its step-2 checkpoint (after the weights, after ``trainer_state.json``, inside the
plugin state's ``on_save``), with ``save_total_limit: 1``; the test then resumes in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from transformers import TrainerCallback

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from evolver_train import train_cli  # noqa: E402
from evolver_train.checkpoints import (  # noqa: E402
    COMPLETE_FILE,
    checkpoint_problem,
    last_complete_checkpoint,
    resolve_resume,
)
from evolver_train.errors import ConfigError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

_KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from pathlib import Path
    from transformers.trainer_callback import TrainerState
    from tests.train.test_trainer import CountingPool, _config, GuessEnv
    from tests.train.fixtures import tiny_policy
    from evolver_train.trainer import EvolverGRPOTrainer, TrainingHooks

    where = {where!r}

    def die():
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    pool = CountingPool()
    model, tok = tiny_policy()
    cfg = _config(Path({tmp!r}), max_steps=3, save_strategy="steps", save_steps=1, save_total_limit=1)
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, hooks=TrainingHooks(task_sampler=pool.sample,
                                 stateful={{"pool": pool}}), processing_class=tok)

    def at_step_2(original):
        def wrapped(*args, **kwargs):
            if trainer.state.global_step == 2 and where.startswith("before:"):
                die()
            out = original(*args, **kwargs)
            if trainer.state.global_step == 2 and where.startswith("after:"):
                die()
            return out
        return wrapped

    if where == "before:optimizer":  # the weights are written, the optimizer is not
        trainer._save_optimizer_and_scheduler = at_step_2(trainer._save_optimizer_and_scheduler)
    elif where == "after:trainer_state":  # everything of the trainer's own, nothing of ours
        TrainerState.save_to_json = at_step_2(TrainerState.save_to_json)
    elif where == "before:plugin_state":  # after the trainer's rotation: the plugin state is not written
        trainer.save_plugin_state = at_step_2(trainer.save_plugin_state)
    trainer.train()
""")


def _killed_run(tmp_path: Path, where: str) -> Path:
    script = _KILLED_RUN.format(root=str(ROOT), tmp=str(tmp_path), where=where)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == -9, proc.stderr[-3000:]  # killed inside the save of checkpoint-2
    out = tmp_path / "out"
    assert (out / "checkpoint-2").is_dir() and not (out / "checkpoint-2" / COMPLETE_FILE).exists()
    return out


def _resume(tmp_path: Path, capsys):
    from evolver_train.trainer import PLUGIN_STATE_FILE, EvolverGRPOTrainer, TrainingHooks
    from tests.train.fixtures import GuessEnv, tiny_policy
    from tests.train.test_trainer import CountingPool, _config

    class Steps(TrainerCallback):  # the steps trained in this process
        done: list[int] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.done.append(state.global_step)

    pool = CountingPool()
    model, tok = tiny_policy()
    cfg = _config(tmp_path, max_steps=3, save_strategy="steps", save_steps=1, save_total_limit=1)
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, hooks=TrainingHooks(task_sampler=pool.sample,
                                 stateful={"pool": pool}), processing_class=tok, callbacks=[Steps()])
    trainer.train(resume_from_checkpoint=True)
    err = capsys.readouterr().err
    return Steps.done, pool, err, PLUGIN_STATE_FILE


@pytest.mark.parametrize("where", [
    "before:plugin_state",
    pytest.param("before:optimizer", marks=pytest.mark.slow),
    pytest.param("after:trainer_state", marks=pytest.mark.slow),
])
def test_a_sigkill_during_a_checkpoint_save_leaves_a_run_that_resumes(tmp_path, capsys, where):
    out = _killed_run(tmp_path, where)
    # The previous checkpoint survives the kill (old ones are deleted only once the new one is complete).
    assert last_complete_checkpoint(str(out), report=lambda _: None) == str(out / "checkpoint-1")
    assert checkpoint_problem(str(out / "checkpoint-2")) is not None

    steps, pool, err, plugin_file = _resume(tmp_path, capsys)
    assert "skipping checkpoint-2: incomplete" in err, err
    # Resumed after step 1: steps 2 and 3 were trained here, with the plugin state of step 1 restored.
    assert steps == [2, 3]
    assert pool.served == 6  # 2 groups per step: 2 restored + 4
    final = out / "checkpoint-3"
    assert checkpoint_problem(str(final)) is None
    assert json.loads((final / plugin_file).read_text())["hooks"]["pool"]["served"] == 6
    # save_total_limit: 1 holds again once the newest checkpoint is complete; the killed one was replaced.
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-3"]


def test_completion_record_catches_a_changed_file_and_a_cut_trainer_state(tmp_path):
    run = tmp_path / "run"
    for step in (1, 2):
        folder = run / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"x" * 100)
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    # Before any completion record (older runs): a whole trainer_state.json is enough.
    assert last_complete_checkpoint(str(run), report=lambda _: None) == str(run / "checkpoint-2")
    (run / "checkpoint-2" / "trainer_state.json").write_text('{"global_st')
    lines = []
    assert last_complete_checkpoint(str(run), report=lines.append) == str(run / "checkpoint-1")
    assert lines == ["skipping checkpoint-2: incomplete (trainer_state.json is cut short "
                     "(Unterminated string starting at: line 1 column 2 (char 1)))"]
    # With records, a folder without one is incomplete, and a file whose size changed is named.
    from evolver_train.checkpoints import write_completion_record

    write_completion_record(str(run / "checkpoint-1"), 1)
    (run / "checkpoint-2" / "trainer_state.json").write_text('{"global_step": 2}')
    assert "no checkpoint_complete.json" in checkpoint_problem(str(run / "checkpoint-2"))
    (run / "checkpoint-1" / "model.safetensors").write_bytes(b"x" * 50)
    assert checkpoint_problem(str(run / "checkpoint-1")) == (
        "model.safetensors has 50 bytes, 100 when the save finished")
    with pytest.raises(ConfigError, match=r"resume_from_checkpoint: '.*checkpoint-1' is incomplete \(model"):
        resolve_resume(str(run / "checkpoint-1"), str(run))
    with pytest.raises(ConfigError, match="no such checkpoint folder 'nope'"):
        resolve_resume("nope", str(run))
    lines = []
    assert resolve_resume("True", str(run), report=lines.append) is None
    assert lines[-1] == f"resume_from_checkpoint: no complete checkpoint in {str(run)!r}; starting at step 0"


RECIPE = """\
model_name_or_path: tiny
env_id: evolver/WebShop-v0
env_kwargs: {num_products: 100, max_steps: 4}
num_train_tasks: 8
max_steps: 2
per_device_train_batch_size: 4
num_generations: 2
max_turns: 3
max_episode_tokens: 128
max_turn_tokens: 8
max_observation_tokens: 64
report_to: none
evolver_eval_episodes: 0
save_strategy: steps
save_steps: 1
logging_steps: 1
disable_tqdm: true
"""


@pytest.mark.parametrize("spelling", ["True", pytest.param("true", marks=pytest.mark.slow)])
def test_evolver_train_resume_from_checkpoint_true_resumes_from_the_last_checkpoint(tmp_path, capsys, spelling):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(RECIPE)
    out = tmp_path / "run"
    assert train_cli.main(["--config", str(recipe), "--output_dir", str(out)]) == 0
    assert checkpoint_problem(str(out / "checkpoint-2")) is None
    capsys.readouterr()
    rc = train_cli.main(["--config", str(recipe), "--output_dir", str(out), "--max_steps", "3",
                         "--resume_from_checkpoint", spelling])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert f"resume_from_checkpoint: resuming from {out / 'checkpoint-2'}" in err
    # Steps 1-2 come from checkpoint-2 as they were logged (a run from step 0 would time them again).
    before = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())["log_history"]
    after = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())["log_history"]
    assert [row["step"] for row in after if "loss" in row] == [1, 2, 3]
    assert after[:2] == before[:2] and before[0]["step_time"] > 0


def test_evolver_eval_refuses_an_incomplete_checkpoint_in_one_line(tmp_path, capsys, monkeypatch):
    from evolver_train.checkpoints import write_completion_record
    from evolver_train.cli import main

    monkeypatch.delenv("EVOLVER_DEBUG", raising=False)
    run = tmp_path / "run"
    for step in (1, 2):
        (run / f"checkpoint-{step}").mkdir(parents=True)
        (run / f"checkpoint-{step}" / "config.json").write_text("{}")
    (run / "checkpoint-1" / "trainer_state.json").write_text("{}")
    write_completion_record(str(run / "checkpoint-1"), 1)
    rc = main(["eval", "--checkpoint", str(run / "checkpoint-2"), "--env-id", "evolver/WebShop-v0", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert err.endswith("checkpoint-2' is incomplete (no trainer_state.json: the save did not finish)"), err
