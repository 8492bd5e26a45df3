"""The plugin makes a policy better: a CPU-sized regression test of learning.

* Multi-turn: two goals (3 and 8) that the first observation does not name; the policy must guess, read
  "higher"/"lower" and guess again within two turns. An untrained policy succeeds in about 5% of
  episodes; always guessing 3 then 8 succeeds in all. The plugin's GRPO must reach 60% of that optimum
  within 30 steps (it reaches about 75-80%).
* Single-turn: the goal is named in the observation ("find the number 3"), one answer. From the same
  initialisation and settings, the plugin's mean reward over steps 11-40 must be within 0.15 of TRL's
  stock ``GRPOTrainer`` on the same prompts and reward (mean over two seeds; both move from about 0.05
  to about 0.5 in these steps).
"""

from __future__ import annotations

import os
import re

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from evolver_gym.core import Task  # noqa: E402
from evolver_train.config import EvolverGRPOConfig  # noqa: E402
from evolver_train.trainer import EvolverGRPOTrainer  # noqa: E402

from .fixtures import ENV_ID, GuessEnv, tiny_policy  # noqa: E402

TARGETS = [3, 8, 3, 8]  # four tasks: one step's four groups


class TwoTargets(GuessEnv):
    """The guessing game over two targets; ``named`` puts the target in the instruction."""

    def __init__(self, max_steps: int = 2, named: bool = False):
        super().__init__(max_steps=max_steps)
        self._tasks = [Task(task_id=f"two/{i}", env_id=ENV_ID,
                            instruction=f"find the number {t}" if named else "find the number",
                            goal={"target": t}, reference=[f"guess[{t}]"]) for i, t in enumerate(TARGETS)]


def _settings(seed: int, steps: int) -> dict:
    return dict(per_device_train_batch_size=32, num_generations=8, max_steps=steps, learning_rate=0.01,
                lr_scheduler_type="constant", loss_type="dapo", beta=0.0, temperature=1.0, seed=seed,
                report_to="none", save_strategy="no", disable_tqdm=True, logging_steps=1)


def _plugin_curve(tmp_path, seed: int, steps: int, turns: int, named: bool) -> list[float]:
    model, tok = tiny_policy(seed=seed)
    cfg = EvolverGRPOConfig(output_dir=str(tmp_path / f"plugin-{seed}-{turns}"), max_turns=turns,
                            max_episode_tokens=200, max_turn_tokens=6, rollout_seed=seed, outcome_key="success",
                            kl_to_start_interval=0, **_settings(seed, steps))
    trainer = EvolverGRPOTrainer(model, cfg, lambda: TwoTargets(max_steps=turns, named=named),
                                 tasks=TwoTargets(named=named).tasks(), processing_class=tok)
    trainer.train()
    return [h["env/success_rate"] for h in trainer.state.log_history if "env/success_rate" in h]


def _stock_curve(tmp_path, seed: int, steps: int) -> list[float]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, tok = tiny_policy(seed=seed)
    env = TwoTargets(named=True)
    rows = []
    for task in env.tasks():
        observation, _ = env.reset(options={"task": task})
        rows.append({"prompt": [{"role": "user", "content": observation}], "target": task.goal["target"]})

    def reward(prompts, completions, target, **kwargs):  # the environment's rule: the first digit is the guess
        out = []
        for completion, goal in zip(completions, target):
            text = completion[0]["content"] if isinstance(completion, list) else completion
            digit = re.search(r"\d", text)
            out.append(float(digit is not None and int(digit.group(0)) == goal))
        return out

    cfg = GRPOConfig(output_dir=str(tmp_path / f"stock-{seed}"), max_completion_length=6, bf16=False,
                     **_settings(seed, steps))
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=cfg, train_dataset=Dataset.from_list(rows),
                          processing_class=tok)
    trainer.train()
    return [h["reward"] for h in trainer.state.log_history if "reward" in h]


def test_multi_turn_grpo_reaches_most_of_the_optimum(tmp_path):
    curve = _plugin_curve(tmp_path, seed=0, steps=30, turns=2, named=False)
    assert len(curve) == 30
    start, end = sum(curve[:3]) / 3, sum(curve[-10:]) / 10
    assert start < 0.2, curve  # near chance
    assert end >= 0.6, curve  # the optimum is 1.0 (guess 3, then 8 on "higher")


def test_single_turn_grpo_learns_as_fast_as_trls_stock_trainer(tmp_path):
    ours, stock = [], []
    for seed in (0, 1):
        ours += _plugin_curve(tmp_path, seed=seed, steps=40, turns=1, named=True)[10:]
        stock += _stock_curve(tmp_path, seed=seed, steps=40)[10:]
    assert len(ours) == len(stock) == 60
    ours_mean, stock_mean = sum(ours) / len(ours), sum(stock) / len(stock)
    assert stock_mean > 0.2 and ours_mean > 0.2  # both learn: from about 0.05 at the start
    assert ours_mean == pytest.approx(stock_mean, abs=0.15), (ours_mean, stock_mean)
