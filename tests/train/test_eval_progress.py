"""evolver eval is never silent for minutes: a line before the first batch, then one per batch with an ETA."""

from __future__ import annotations

import re

import gymnasium as gym

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_train.evaluation import OraclePolicy, evaluate_policy

WEBSHOP = "evolver/WebShop-v0"
KW = {"num_products": 200, "max_steps": 8, "goals": "synthetic"}


def test_progress_announces_the_work_then_reports_each_batch_with_an_eta(capsys):
    env = gym.make(WEBSHOP, **KW)
    tasks = env.unwrapped.tasks("dev")[:5]
    oracle = OraclePolicy(tasks, env.unwrapped.oracle)
    env.close()
    report = evaluate_policy(None, oracle.tokenizer, WEBSHOP, tasks=tasks, env_kwargs=KW, k=1, batch_size=2,
                             generate=oracle.generate, rollout=oracle.rollout, progress=True)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "eval: 5 episodes (5 dev tasks x k=1) in batches of 2, a line after each batch"
    assert [re.match(r"eval: (\d+)/5 episodes, (\d+) successful \(\d+s, ETA \d+s\)$", line).group(1, 2)
            for line in lines[1:]] == [("2", "2"), ("4", "4"), ("5", "5")]
    assert lines[-1].endswith("ETA 0s)") and report["success_rate"] == 1.0
    evaluate_policy(None, oracle.tokenizer, WEBSHOP, tasks=tasks, env_kwargs=KW, k=1, generate=oracle.generate,
                    rollout=oracle.rollout)
    assert capsys.readouterr().err == ""  # progress=False: quiet
