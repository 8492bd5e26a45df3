"""avalon_v0.env()'s wrappers: PettingZoo's order and bounds checks, reading the raw env directly.

They must keep every check of PettingZoo's AssertOutOfBoundsWrapper and OrderEnforcingWrapper, and
the loop a user writes on them (NumPy integer actions from the mask) must play exactly the game the
raw env plays with Python ints.
"""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper

from arena import avalon_v0


def test_env_is_wrapped_by_pettingzoo_s_wrappers():
    e = avalon_v0.env(num_players=5)
    assert isinstance(e, OrderEnforcingWrapper) and isinstance(e.env, AssertOutOfBoundsWrapper)
    assert isinstance(e.unwrapped, avalon_v0.raw_env)
    text = avalon_v0.env(num_players=5, variant="text")
    assert isinstance(text, OrderEnforcingWrapper) and isinstance(text.env, avalon_v0.raw_env)


def test_order_checks_before_reset():
    e = avalon_v0.env(num_players=5)
    for name in ("agents", "agent_selection", "rewards", "terminations", "truncations", "infos", "num_agents"):
        with pytest.raises(AttributeError, match="before reset"):
            getattr(e, name)
        assert not hasattr(e, name)
    with pytest.raises(AttributeError, match="before reset"):
        e.last()
    with pytest.raises(AssertionError, match="reset"):
        e.step(0)
    with pytest.raises(AttributeError, match="private"):
        e._secret  # noqa: B018 - PettingZoo refuses private names through a wrapper
    e.reset(seed=0)
    assert e.num_agents == 5 and e.agent_selection in e.agents
    assert e._cumulative_rewards == e.unwrapped._cumulative_rewards


@pytest.mark.parametrize("bad", [59, -1, np.int64(59), np.int8(-3), 1.5, "TEAM: 0, 1"])
def test_bounds_check_refuses_actions_outside_the_space(bad):
    e = avalon_v0.env(num_players=5, discussion_rounds=0)
    e.reset(seed=0)
    with pytest.raises(AssertionError, match="action space"):
        e.step(bad)


def test_none_is_refused_for_a_live_seat_and_required_for_a_finished_one():
    e = avalon_v0.env(num_players=5, discussion_rounds=0)
    e.reset(seed=0)
    with pytest.raises(AssertionError, match="action space"):
        e.step(None)
    for _agent in e.agent_iter():
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            with pytest.raises(ValueError, match="None"):
                e.step(0)
            e.step(None)
        else:
            e.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert e.agents == []


def test_user_loop_with_numpy_actions_plays_the_raw_env_s_game():
    """The wrapped env with np.int64 actions and the raw env with ints: the same stream, step by step."""
    wrapped = avalon_v0.env(num_players=5, discussion_rounds=0)
    raw = avalon_v0.raw_env(num_players=5, discussion_rounds=0)
    for seed in range(3):
        wrapped.reset(seed=seed)
        raw.reset(seed=seed)
        rng = np.random.default_rng(seed)
        steps = 0
        for agent in wrapped.agent_iter():
            assert agent == raw.agent_selection
            got, want = wrapped.last(), raw.last()
            assert got[0]["text"] == want[0]["text"]
            np.testing.assert_array_equal(got[0]["observation"], want[0]["observation"])
            np.testing.assert_array_equal(got[0]["action_mask"], want[0]["action_mask"])
            assert got[1:] == want[1:]
            if got[2] or got[3]:
                wrapped.step(None)
                raw.step(None)
                continue
            action = rng.choice(np.flatnonzero(got[0]["action_mask"]))
            assert isinstance(action, np.integer)
            wrapped.step(action)
            raw.step(int(action))
            assert wrapped.infos == raw.infos and wrapped.rewards == raw.rewards
            steps += 1
        assert raw.agents == [] and steps > 10
        assert all(i == 0 for i in raw._invalid.values())  # NumPy codes were played, not refused


def test_agent_iter_keeps_pettingzoo_s_order_checks():
    e = avalon_v0.env(num_players=5, discussion_rounds=0)
    with pytest.raises(AssertionError, match="reset"):
        e.agent_iter()
    e.reset(seed=0)
    it = iter(e.agent_iter())
    first = next(it)
    assert first == e.unwrapped.agent_selection
    with pytest.raises(AssertionError, match="step"):
        next(it)  # no step() since the last agent was handed out
    assert len(list(e.agent_iter(max_iter=0))) == 0
