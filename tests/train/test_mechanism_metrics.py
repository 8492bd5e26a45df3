"""The mechanisms' own metrics in short tiny-policy runs, each checked against a value computed apart:
the importance ratio and the experience rows' clip (num_iterations 1 and 2), injection rate, the
experience pool's additions and merges, the synthetic share and the attributor's oracle agreement."""

from __future__ import annotations

import math
import os
from pathlib import Path

import gymnasium as gym
import pytest
import torch

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from evolver_gym.core import Task  # noqa: E402
from evolver_train.envs import build_training_environment  # noqa: E402
from evolver_train.train_cli import parse_config  # noqa: E402
from evolver_train.trainer import EvolverGRPOTrainer  # noqa: E402
from wrappers.navigation import NavigationConfig  # noqa: E402
from wrappers.navigation.plugin import training_hooks as navigation_hooks  # noqa: E402

from .fixtures import ENV_ID, GuessEnv, HintWrapper, tiny_policy  # noqa: E402
from .test_trainer import _config, _trainer  # noqa: E402


def _logs(trainer):
    return [h for h in trainer.state.log_history if "loss" in h]


def _strip_run(tmp_path: Path, **kw):
    hooks = [navigation_hooks(NavigationConfig(experience_share=0.5, experience_mode="strip"))]
    trainer = _trainer(tmp_path, env_factory=lambda: HintWrapper(GuessEnv()), hooks=hooks, learning_rate=0.5, **kw)
    trainer.train()
    return _logs(trainer)


def test_reused_batch_moves_the_ratio_and_the_experience_clip_acts(tmp_path):
    """num_iterations=2: old log-probs come from the generation pass on the stripped training prompt, so
    the first pass sees a ratio of exactly 1 on every row (stripped ones included) and the second a
    moved ratio that the experience rows' own clip cuts."""
    logs = _strip_run(tmp_path, num_iterations=2, max_steps=2)
    assert len(logs) == 2
    first, second = logs
    assert "env/success_rate" in first and "env/success_rate" not in second  # one generation, used twice
    assert first["exp/stripped_rate"] == 0.5
    # Were the old log-probs taken on the sampling prompt (with experience), stripped rows would not be at 1.
    assert first["ratio/max_deviation"] < 1e-5 and first["exp/ratio_max_deviation"] < 1e-5
    assert first["clip_ratio/experience_region_mean"] == 0.0
    assert second["ratio/max_deviation"] > 0.05 and second["exp/ratio_max_deviation"] > 0.05
    assert max(h["clip_ratio/experience_region_mean"] for h in logs) > 0.0
    assert second["clip_ratio/experience_region_mean"] == pytest.approx(
        second["clip_ratio/experience_low_mean"] + second["clip_ratio/experience_high_mean"])


def test_one_iteration_one_step_per_generation_keeps_the_ratio_at_one(tmp_path):
    """The documented limit: without a reused batch TRL has no old log-probs and no clip can act."""
    logs = _strip_run(tmp_path, num_iterations=1, max_steps=2)
    assert len(logs) == 2 and all("env/success_rate" in h for h in logs)
    for h in logs:
        assert h["ratio/mean"] == 1.0 and h["ratio/max_deviation"] == 0.0
        assert h["clip_ratio/region_mean"] == 0.0 and h["clip_ratio/experience_region_mean"] == 0.0


def test_experience_clip_metrics_count_each_row_against_its_own_clip(tmp_path):
    hooks = [navigation_hooks(NavigationConfig(experience_share=0.5, experience_clip_high=0.6))]
    trainer = _trainer(tmp_path, hooks=hooks, max_steps=1)
    b, t = 2, 3
    inputs = {"prompt_ids": torch.tensor([[5, 6], [5, 6]]), "prompt_mask": torch.ones(b, 2, dtype=torch.long),
              "completion_ids": torch.tensor([[7, 8, 9], [7, 8, 9]]),
              "completion_mask": torch.ones(b, t, dtype=torch.long), "num_items_in_batch": torch.tensor(6.0),
              "clip_high": torch.tensor([0.6, float("nan")]), "prompt_edit": torch.tensor([0, -1])}
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
            torch.ones(b, 5, dtype=torch.long), t)
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); this test calls the loss directly
    metrics = trainer._metrics["train"]

    def loss(shift_experience_row: float, advantages: torch.Tensor) -> dict[str, float]:
        metrics.clear()
        old = logps - torch.tensor([[shift_experience_row], [-0.5]])
        trainer._compute_loss(trainer.model, {**inputs, "old_per_token_logps": old, "advantages": advantages})
        return {k: v[-1] for k, v in metrics.items()}

    # Row 0 (experience): ratio e^0.5 = 1.65 > 1 + 0.6 with A > 0: clipped above. Row 1: ratio e^-0.5 = 0.61
    # < 1 - 0.2 with A < 0: clipped below, and not an experience row.
    m = loss(0.5, torch.tensor([[1.0] * 3, [-1.0] * 3]))
    assert m["clip_ratio/experience_high_mean"] == 1.0 and m["clip_ratio/experience_low_mean"] == 0.0
    assert m["clip_ratio/experience_region_mean"] == 1.0
    assert m["exp/ratio_mean"] == pytest.approx(math.exp(0.5), rel=1e-5)
    assert m["clip_ratio/high_mean"] == 0.5 and m["clip_ratio/low_mean"] == 0.5  # TRL's, all rows
    assert m["ratio/mean"] == pytest.approx((math.exp(0.5) + math.exp(-0.5)) / 2, rel=1e-5)
    assert m["ratio/max_deviation"] == pytest.approx(math.exp(0.5) - 1, rel=1e-5)
    # Ratio 1.49: inside the experience clip (1.6), though outside TRL's 1.2.
    m = loss(0.4, torch.tensor([[1.0] * 3, [-1.0] * 3]))
    assert m["clip_ratio/experience_region_mean"] == 0.0 and m["clip_ratio/high_mean"] == 0.0
    # A negative advantage on the experience row: only the lower clip counts (1.65 is not below 0.8).
    m = loss(0.5, torch.tensor([[-1.0] * 3, [-1.0] * 3]))
    assert m["clip_ratio/experience_region_mean"] == 0.0
    m = loss(-0.5, torch.tensor([[-1.0] * 3, [-1.0] * 3]))
    assert m["clip_ratio/experience_low_mean"] == 1.0 and m["clip_ratio/low_mean"] == 1.0


def _run(tmp_path: Path, *args: str):
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=GuessEnv)
    return parse_config(["--model_name_or_path", "tiny", "--env-id", ENV_ID, "--output_dir", str(tmp_path / "out"),
                         "--per_device_train_batch_size", "8", "--num_generations", "4", "--max-turns", "4",
                         "--max-episode-tokens", "200", "--max-turn-tokens", "6", "--report_to", "none",
                         "--save_strategy", "no", "--disable_tqdm", "true", "--learning_rate", "0.05", *args])


def test_injection_rate_and_the_pools_real_size(tmp_path):
    from wrappers.navigation import Experience, ExperiencePool

    uri = str(tmp_path / "exp.db")
    with ExperiencePool(uri=uri) as seeded:
        seeded.add([Experience(when_to_use=f"find the number {i}", content="guess in the middle first",
                               env_id=ENV_ID, source_task_id=f"guess/train/{i}") for i in range(3)])
    run = _run(tmp_path, "--wrappers", "navigation", "--experience-uri", uri, "--experience-share", "0.5",
               "--experience-threshold", "-1.0", "--experience-summarizer-min-score", "0.0", "--max_steps", "3")
    built = build_training_environment(run.train, run.mechanisms)
    pool = built.services["experience_pool"]
    assert len(pool) == 3
    added, merged = [], []
    add = pool.add

    def counting_add(experiences, **kw):  # the expected counts, from the ids each summary ended up under
        stored = {e.id for e in pool.all()}
        ids = add(experiences, **kw)
        added.append(len(set(ids) - stored))
        merged.append(len(ids) - len(set(ids) - stored))
        return ids

    pool.add = counting_add
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, run.train, built.env_factory, tasks=built.train_tasks, hooks=built.hooks,
                                 processing_class=tok)
    trainer.train()
    logs = _logs(trainer)
    assert [h["exp/injection_rate"] for h in logs] == [0.5] * 3  # = experience_share: every lookup matched
    assert [h["exp/requested_rate"] for h in logs] == [0.5] * 3
    assert logs[0]["exp/pool_size"] == 3.0
    assert sum(h["exp/added"] for h in logs) == sum(added) == len(pool) - 3
    assert sum(h["exp/merged"] for h in logs) == sum(merged) > 0  # the same tasks recur: summaries merge
    assert logs[1]["exp/pool_size"] == 3 + logs[0]["exp/added"]
    assert trainer.plugin_state["totals"]["exp/added"] == len(pool) - 3


class HindsightGuessEnv(GuessEnv):
    """The game with a hindsight proposer (the questioning mechanism needs one): the last guess as a task."""

    def hindsight_task(self, trajectory):
        digits = [c for c in trajectory.steps[-1].action if c.isdigit()] if trajectory.steps else []
        if not digits:
            return None
        return trajectory.task.derive(instruction=f"find the number {digits[0]}", goal={"target": int(digits[0])},
                                      reference=[f"guess[{digits[0]}]"], proposer="hindsight")


def test_synthetic_share_is_the_share_of_rows_on_synthesised_tasks(tmp_path):
    from wrappers.questioning import TaskPool

    env_id = "test/GuessHindsight-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=HindsightGuessEnv)
    path = str(tmp_path / "tasks.sqlite")
    synthetic = [Task(task_id=f"guess/synthetic/{i}", env_id=ENV_ID, instruction=f"find the number {i}",
                      goal={"target": i}, reference=[f"guess[{i}]"], origin="synthetic") for i in range(0, 10, 2)]
    TaskPool(path).add_many(synthetic)
    run = _run(tmp_path, "--wrappers", "questioning", "--questioning-pool", path, "--max_steps", "3",
               "--env-id", env_id)
    built = build_training_environment(run.train, run.mechanisms)
    assert built.samples_tasks
    (hooks,) = built.hooks
    drawn: list[list[dict]] = []
    sample = hooks.task_sampler

    def recording_sampler(n, seed):
        drawn.append(sample(n, seed))
        return drawn[-1]

    hooks.task_sampler = recording_sampler
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, run.train, built.env_factory, hooks=built.hooks, processing_class=tok)
    trainer.train()
    expected = [sum(t.get("origin") == "synthetic" for t in tasks) / len(tasks) for tasks in drawn]
    assert len(expected) == 3 and 0 < sum(expected) < 3  # seed and synthetic tasks both drawn
    assert [h["tasks/synthetic_rate"] for h in _logs(trainer)] == pytest.approx(expected)


def test_imported_tasks_join_the_pool_as_synthetic_and_are_drawn(tmp_path):
    """questioning_import: a synthesis's tasks.jsonl (the warm start's) enters the pool beside the split's."""
    from evolver_gym.core import write_jsonl

    env_id = "test/GuessHindsight-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=HindsightGuessEnv)
    path = tmp_path / "tasks.jsonl"
    write_jsonl(path, [Task(task_id=f"guess/synthetic/{i}", env_id=env_id, instruction=f"find the number {i}",
                            goal={"target": i}, reference=[f"guess[{i}]"], origin="synthetic") for i in range(5)])
    run = _run(tmp_path, "--wrappers", "questioning", "--questioning-import", str(path), "--env-id", env_id)
    built = build_training_environment(run.train, run.mechanisms)
    (hooks,) = built.hooks
    pool = hooks.stateful["task_pool"].pool
    assert len(pool.ids(origin="synthetic")) == 5 and len(pool.ids(origin="seed")) == len(built.train_tasks) > 0
    drawn = hooks.task_sampler(200, 0)
    assert {t["origin"] for t in drawn} == {"seed", "synthetic"}
    # A resumed run imports again into the same pool: nothing is added twice.
    again = build_training_environment(run.train, run.mechanisms)
    assert len(again.hooks[0].stateful["task_pool"].pool) == len(pool)


def test_questioning_import_refuses_what_it_cannot_read(tmp_path):
    from evolver_train.errors import ConfigError

    with pytest.raises(ConfigError, match="questioning_import.*missing.jsonl"):
        _run(tmp_path, "--wrappers", "questioning", "--questioning-import", str(tmp_path / "missing.jsonl"))
    with pytest.raises(ConfigError, match="questioning_import 'warm_start' needs a warm start that synthesises"):
        _run(tmp_path, "--wrappers", "questioning", "--questioning-import", "warm_start")
    with pytest.raises(ConfigError, match="questioning_import must be a path or None"):
        _run(tmp_path, "--wrappers", "questioning", "--questioning-import", " ")
    other = tmp_path / "other.jsonl"
    other.write_text(Task(task_id="x/1", env_id="other/Env-v0", instruction="x").to_json() + "\n")
    run = _run(tmp_path, "--wrappers", "questioning", "--questioning-import", str(other))
    with pytest.raises(ValueError, match="questioning_import .*other.jsonl' line 1 is a task of 'other/Env-v0'"):
        build_training_environment(run.train, run.mechanisms)


def _attribution_layer(env):
    from wrappers.attribution import Attribution

    while not isinstance(env, Attribution):
        env = env.env
    return env


def _train_one_step(run):
    """Train ``run`` (one logged step) on its own mechanisms; returns the trainer and that step's log."""
    built = build_training_environment(run.train, run.mechanisms)
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, run.train, built.env_factory, tasks=built.train_tasks, hooks=built.hooks,
                                 processing_class=tok)
    trainer.train()
    (log,) = _logs(trainer)
    return trainer, log


def test_rule_attributor_agreement_with_the_oracle(tmp_path):
    from wrappers.attribution import RuleAttributor, evaluate_attributor

    trainer, log = _train_one_step(_run(tmp_path, "--wrappers", "attribution", "--attributor", "rules",
                                        "--attribution-alpha", "0.2", "--max_steps", "1"))
    # Each environment played one episode, ended by the game itself (max_turns = its 4 steps).
    trajectories = [_attribution_layer(env).last_trajectory for env in trainer.env_pool.envs]
    assert len(trajectories) == 8 and all(t is not None for t in trajectories)
    expected = evaluate_attributor(RuleAttributor(), trajectories)
    assert 0.0 < expected["accuracy"] < 1.0  # the rules and the oracle disagree on some steps
    assert log["attr/oracle_agreement"] == pytest.approx(expected["accuracy"])
    assert log["attr/oracle_kappa"] == pytest.approx(expected["kappa"])
    assert log["attr/oracle_checked_rate"] == 1.0


def test_the_oracle_attributor_is_not_compared_with_itself(tmp_path):
    _, log = _train_one_step(_run(tmp_path, "--wrappers", "attribution", "--attributor", "oracle", "--max_steps", "1"))
    assert log["attr/labelled_rate"] == 1.0 and "attr/oracle_agreement" not in log


def test_the_step_line_shows_what_the_mechanisms_ask_for(tmp_path):
    """The printed line's mechanism entries come from the hooks' ``progress``, not from the trainer."""
    from transformers.trainer_callback import TrainerState

    from evolver_train.trainer import ConciseProgressCallback
    from wrappers.attribution import AttributionConfig
    from wrappers.attribution.plugin import training_hooks as attribution_hooks

    hooks = [navigation_hooks(NavigationConfig(experience_share=0.5)), attribution_hooks(AttributionConfig())]
    model, tok = tiny_policy()
    args = _config(tmp_path, disable_tqdm=False)
    trainer = EvolverGRPOTrainer(model, args, lambda: HintWrapper(GuessEnv()), tasks=GuessEnv().tasks(), hooks=hooks,
                                 processing_class=tok)
    (line,) = [c for c in trainer.callback_handler.callbacks if isinstance(c, ConciseProgressCallback)]
    written: list[str] = []
    line.training_bar = type("Bar", (), {"write": lambda self, text: written.append(text)})()
    state = TrainerState(global_step=3, is_world_process_zero=True)
    line.on_log(args, state, None, logs={"env/success_rate": 0.25, "exp/injection_rate": 0.5,
                                         "clip_ratio/experience_region_mean": 0.0125, "attr/oracle_agreement": 0.75,
                                         "clip_ratio/region_mean": 0.01, "loss": 0.1, "frac_reward_zero_std": 0.5,
                                         "kl_to_start": 0.002})
    assert written == ["step 3: success 0.25 | exp 0.50 | exp clip 0.01 | agree 0.75 | zero-var groups 0.50 | "
                       "kl 0.0020 | clip 0.010 | surrogate loss 0.1000"]


def test_synthetic_share_sets_the_share_of_groups_on_synthesised_tasks(tmp_path):
    """questioning_synthetic_share: that share of the groups is drawn from synthesised tasks, counted in the
    trainer's batches; without it, 5 synthesised tasks among 10 human ones get about a third of the draws."""
    from evolver_gym.core import write_jsonl

    env_id = "test/GuessHindsight-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=HindsightGuessEnv)
    path = tmp_path / "tasks.jsonl"
    write_jsonl(path, [Task(task_id=f"guess/synthetic/{i}", env_id=env_id, instruction=f"find the number {i}",
                            goal={"target": i}, reference=[f"guess[{i}]"], origin="synthetic") for i in range(5)])

    def share(*args: str) -> float:
        run = _run(tmp_path / "-".join(args), "--wrappers", "questioning", "--questioning-import", str(path),
                   "--env-id", env_id, *args)
        (hooks,) = build_training_environment(run.train, run.mechanisms).hooks
        drawn = hooks.task_sampler(600, 0)
        return sum(t["origin"] == "synthetic" for t in drawn) / len(drawn)

    assert abs(share() - 1 / 3) < 0.06
    assert abs(share("--questioning-synthetic-share", "0.8") - 0.8) < 0.05
    assert share("--questioning-synthetic-share", "0") == 0.0
    with pytest.raises(ValueError, match="questioning_synthetic_share must be None or a number in \\[0, 1\\], got 1.5"):
        _run(tmp_path, "--wrappers", "questioning", "--questioning-synthetic-share", "1.5")

    # In training: the logged share of the rows on synthesised tasks follows the setting.
    run = _run(tmp_path / "train", "--wrappers", "questioning", "--questioning-import", str(path), "--env-id", env_id,
               "--questioning-synthetic-share", "0.5", "--max_steps", "4", "--per_device_train_batch_size", "16")
    built = build_training_environment(run.train, run.mechanisms)
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, run.train, built.env_factory, hooks=built.hooks, processing_class=tok)
    trainer.train()
    rates = [h["tasks/synthetic_rate"] for h in _logs(trainer)]
    assert len(rates) == 4 and 0.2 <= sum(rates) / 4 <= 0.8
