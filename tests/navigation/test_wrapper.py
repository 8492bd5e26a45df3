"""Tests of ExperienceContext on a small text environment of this file: injection span, the
per-episode switch, continual mode, the split guard, warm-up, and stacking with other wrappers."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

from evolver_gym.core import Task, UnicodeText
from wrappers.navigation import (
    EXP_CLOSE,
    EXP_OPEN,
    Experience,
    ExperienceContext,
    OfflineSummarizer,
    build_pool,
    oracle_policy,
    strip_experience,
)

ENV_ID = "test/Shop-v0"
ITEMS = ["red running shoes", "hazelnut ground coffee", "wireless headphones", "cotton bath towel"]


class ShopEnv(gym.Env):
    """Say ``buy[<item>]`` for the item in the instruction; three tries."""

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = UnicodeText(500)
        self.action_space = UnicodeText(100, examples=("buy[thing]",))
        self._tasks = {s: [Task(f"{ENV_ID}/{s}/{i}", ENV_ID, f"i want to buy {item}", split=s,
                                goal={"item": item}, reference=[f"buy[{item}]"]) for i, item in enumerate(ITEMS)]
                       for s in ("train", "dev", "test")}
        self.task: Task | None = None
        self.t = 0

    def tasks(self, split: str) -> list[Task]:
        return list(self._tasks[split])

    def oracle(self, task: Task) -> list[str]:
        return [f"buy[{task.goal['item']}]"]  # from the goal: the public task has no reference

    def _info(self, **kw: Any) -> dict[str, Any]:
        return {"task": self.task.public(), "instruction": self.task.instruction, "step": self.t,
                "action_valid": True, **kw}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        options = options or {}
        assert "experience" not in options  # the wrapper consumes its own option
        if "task" in options:
            self.task = Task.from_dict(options["task"])
        else:
            split = options.get("split", "train")
            self.task = self._tasks[split][options.get("index", int(self.np_random.integers(len(ITEMS))))]
        self.t = 0
        return f"Shop. Instruction: {self.task.instruction}", self._info()

    def step(self, action):
        self.t += 1
        ok = action == f"buy[{self.task.goal['item']}]"
        done = ok or self.t >= 3
        info = self._info()
        if done:
            info.update(success=ok, score=float(ok), evaluation={"item": ok})
        return f"step {self.t}: {'bought' if ok else 'nothing happened'}", float(ok), done, False, info


@pytest.fixture
def shop_pool(pool):
    pool.add([Experience("buying shoes for running", "type buy[...] with the full item name", env_id=ENV_ID),
              Experience("buying coffee", "name the flavor and grind", env_id=ENV_ID),
              Experience("buying shoes for running", "advice from elsewhere", env_id="other/Env-v0")])
    return pool


def test_injects_block_with_exact_span(shop_pool):
    env = ExperienceContext(ShopEnv(), shop_pool, top_k=2)
    obs, info = env.reset(seed=0, options={"split": "train", "index": 0})
    exp = info["experience"]
    s, e = exp["span"]
    assert exp["enabled"] and obs[s:e] == exp["text"] and (s, e) == (0, len(exp["text"]))
    assert exp["text"].startswith(EXP_OPEN) and exp["text"].rstrip().endswith(EXP_CLOSE)
    assert obs[e:] == "Shop. Instruction: i want to buy red running shoes" == strip_experience(obs)
    assert "full item name" in exp["text"] and "elsewhere" not in exp["text"]  # filtered by env
    assert len(exp["ids"]) == 2 and exp["ids"][0] == shop_pool.search("running shoes", env_id=ENV_ID)[0].experience.id
    assert obs in env.observation_space
    _, _, _, _, info2 = env.step("buy[nothing]")
    assert info2["experience"] == exp


def test_switch_off_for_one_episode_and_empty_pool(shop_pool, pool):
    env = ExperienceContext(ShopEnv(), shop_pool)
    obs, info = env.reset(seed=0, options={"experience": False, "split": "train", "index": 0})
    assert info["experience"] == {"enabled": False, "ids": [], "text": "", "span": [0, 0]}
    assert EXP_OPEN not in obs
    _, info = env.reset(seed=0, options={"split": "train", "index": 0})
    assert info["experience"]["enabled"] and info["experience"]["ids"]
    env2 = ExperienceContext(ShopEnv(), shop_pool, enabled=False, threshold=0.99)
    _, info = env2.reset(seed=0, options={"experience": True, "split": "train", "index": 3})
    assert info["experience"] == {"enabled": True, "ids": [], "text": "", "span": [0, 0]}
    with pytest.raises(ValueError, match="'yes'"):
        env.reset(options={"experience": "yes"})


def test_continual_mode_and_split_guard(pool):
    env = ExperienceContext(ShopEnv(), pool, summarizer=OfflineSummarizer(), continual=True)
    for split in ("dev", "test"):
        env.reset(seed=0, options={"split": split, "index": 1})
        env.step("buy[hazelnut ground coffee]")
        assert len(pool) == 0 and env.last_added_ids == []
    env.reset(seed=0, options={"split": "train", "index": 1})
    env.step("buy[hazelnut ground coffee]")
    assert len(pool) == 1 and env.last_added_ids
    added = pool.get(env.last_added_ids)[0]
    assert added.source_task_id == f"{ENV_ID}/train/1" and "coffee" in added.when_to_use
    # the injected experience's use and win are counted on a training episode only
    obs, info = env.reset(seed=0, options={"split": "train", "index": 1})
    assert info["experience"]["ids"] == [added.id]
    env.step("buy[hazelnut ground coffee]")
    assert pool.get([added.id])[0].uses == 1
    env.reset(seed=0, options={"split": "test", "index": 1})
    env.step("buy[x]"), env.step("buy[x]"), env.step("buy[x]")
    assert pool.get([added.id])[0].uses == 1


class _Leaky:
    def summarize(self, trajectories):
        return [Experience("anything", "credited to another task", env_id=ENV_ID, source_task_id="dev/7")]


def test_summary_for_another_task_is_refused(pool):
    env = ExperienceContext(ShopEnv(), pool, summarizer=_Leaky(), continual=True)
    env.reset(seed=0, options={"split": "train", "index": 0})
    env.step("buy[red running shoes]")
    assert len(pool) == 0


def test_constructor_names_bad_values(pool):
    for kwargs, needle in [({"top_k": 0}, "top_k"), ({"threshold": 2.0}, "threshold"),
                           ({"max_chars": 5}, "max_chars"), ({"continual": "yes"}, "continual.*'yes'"),
                           ({"summarizer": "offline"}, "summarizer"),
                           ({"train_splits": "train"}, "train_splits")]:
        with pytest.raises((ValueError, TypeError), match=needle):
            ExperienceContext(ShopEnv(), pool, **kwargs)


def test_warmup_builds_from_training_tasks_only(pool):
    env = ShopEnv()
    stats = build_pool(env, oracle_policy(env), pool, OfflineSummarizer(), rollouts_per_task=2, seed=3)
    assert stats["tasks"] == 4 and stats["episodes"] == 8 and stats["successes"] == 8
    assert len(pool) == stats["added"] == 4
    with pytest.raises(ValueError, match="dev/0"):
        build_pool(env, oracle_policy(env), pool, OfflineSummarizer(), tasks=env.tasks("dev")[:1])


def test_stacks_with_gymnasium_and_project_wrappers(shop_pool):
    from gymnasium.wrappers import OrderEnforcing, RecordEpisodeStatistics, TimeLimit

    from wrappers.attribution import Attribution, RuleAttributor

    inner = Attribution(TimeLimit(OrderEnforcing(ShopEnv()), max_episode_steps=2), RuleAttributor())
    env = RecordEpisodeStatistics(ExperienceContext(inner, shop_pool, top_k=1))
    obs, info = env.reset(seed=1, options={"split": "train", "index": 0})
    s, e = info["experience"]["span"]
    assert obs[s:e] == info["experience"]["text"] != ""
    env.step("buy[wrong]")
    _, _, term, trunc, info = env.step("buy[wrong]")
    assert trunc and "episode" in info and len(info["attribution"]["labels"]) == 2
    assert info["experience"]["span"] == [s, e]
    # and the other way round: experience inside, attribution outside
    env = Attribution(ExperienceContext(ShopEnv(), shop_pool), RuleAttributor())
    obs, info = env.reset(seed=1, options={"split": "train", "index": 0})
    assert obs.startswith(EXP_OPEN)
    _, _, term, _, info = env.step("buy[red running shoes]")
    assert term and info["attribution"]["labels"][0]["step"] == 0 and info["experience"]["ids"]


def test_bad_argument_opens_no_pool(tmp_path):
    # The pool is opened only after every argument is checked: nothing is created, nothing left open.
    import gymnasium as gym

    import evolver_gym  # noqa: F401

    uri = tmp_path / "never.db"
    with pytest.raises(ValueError, match="top_k must be a positive int"):
        ExperienceContext(gym.make("evolver/WebShop-v0", num_products=50), str(uri), top_k=0)
    assert not list(tmp_path.iterdir())
