import gymnasium as gym
import pytest

from evolver_gym.core import (
    Step,
    Task,
    TokenRecord,
    Trajectory,
    UnicodeText,
    derive_seed,
    make_random,
    make_rng,
    read_jsonl,
    record_episode,
    write_jsonl,
)


def test_unicode_space_accepts_any_printable_text():
    space = UnicodeText(50)
    assert "click[< prev]" in space
    assert "ünïcödé — 价格 ≤ $40!" in space
    assert "line one\nline two\ttab" in space
    assert "x" * 51 not in space
    assert "\x00bell\x07" not in space
    assert 3 not in space and None not in space


def test_unicode_space_sample_draws_examples_deterministically():
    a = UnicodeText(100, examples=("search[a]", "click[b]"), seed=3)
    b = UnicodeText(100, examples=("search[a]", "click[b]"), seed=3)
    draws = [a.sample() for _ in range(20)]
    assert draws == [b.sample() for _ in range(20)]
    assert set(draws) == {"search[a]", "click[b]"}
    plain = UnicodeText(10, seed=0)
    assert all(plain.sample() in plain for _ in range(50))


def test_unicode_space_rejects_bad_arguments():
    with pytest.raises(ValueError, match="-1"):
        UnicodeText(-1)
    with pytest.raises(ValueError):
        UnicodeText(5, examples=("far too long example",))


def test_derived_seeds_are_stable_and_distinct():
    assert derive_seed(1, "a") == derive_seed(1, "a")
    assert derive_seed(1, "a") != derive_seed(2, "a")
    assert 0 <= derive_seed("x") < 2**63
    assert make_rng(5, "t").integers(1 << 30) == make_rng(5, "t").integers(1 << 30)
    assert make_random(5, "t").random() == make_random(5, "t").random()


def test_token_record_validates_and_extends():
    rec = TokenRecord(prompt_ids=[1, 2])
    rec.extend([5, 6], model=True, step=0, logprobs=[-0.1, -0.2])
    rec.extend([7], model=False, step=0)
    assert rec.env_mask == [1, 1, 0] and rec.step_ids == [0, 0, 0] and rec.logprobs[-1] == 0.0
    with pytest.raises(ValueError):
        rec.extend([8], model=True, step=1)
    with pytest.raises(ValueError, match="env_mask"):
        TokenRecord(prompt_ids=[], completion_ids=[1], env_mask=[], step_ids=[0], logprobs=[0.0])


class _CountEnv(gym.Env):
    """Reach 3 by saying 'inc'; anything else is invalid."""

    action_space = UnicodeText(20, examples=("inc",))
    observation_space = UnicodeText(100)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.n = 0
        return "n=0", {"task": Task("count/0", "count", "count to 3").public()}

    def step(self, action):
        valid = action == "inc"
        self.n += valid
        done = self.n >= 3
        return f"n={self.n}", float(done), done, False, {"action_valid": valid, "success": done, "score": float(done)}


def test_record_episode_and_jsonl_roundtrip(tmp_path):
    actions = iter(["inc", "oops", "inc", "inc"])
    traj = record_episode(_CountEnv(), lambda obs, info: next(actions), seed=0)
    assert traj.actions == ["inc", "oops", "inc", "inc"]
    assert traj.success and traj.terminated and traj.score == 1.0
    assert traj.steps[1].info["action_valid"] is False
    traj.tokens = TokenRecord(prompt_ids=[1])
    path = tmp_path / "t.jsonl"
    assert write_jsonl(path, [traj, traj]) == 2
    back = list(read_jsonl(path))
    assert back[0].to_dict() == traj.to_dict()
    assert isinstance(back[0].steps[0], Step) and isinstance(back[0], Trajectory)
