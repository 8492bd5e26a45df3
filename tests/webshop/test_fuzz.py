"""Property-based fuzzing: no string, however hostile, makes the env raise or change state wrongly."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolver_gym.webshop import WebShopEnv

ENV = WebShopEnv(num_products=200, max_steps=10_000)

_grammar = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda a, b: f"{a}[{b}]",
        st.sampled_from(["search", "click", "Click", " SEARCH ", "buy", ""]),
        st.text(max_size=40),
    ),
    st.sampled_from(
        [
            "click[buy now]",
            "click[< prev]",
            "click[next >]",
            "click[back to search]",
            "click[description]",
            "search[shampoo]",
            "search[]",
            "click[]",
            "[x]",
            "search[[a]]",
            "click[search]",
            "\x00",
            "search[\u202e\u0000]",
            "click[" + "a" * 5000 + "]",
        ]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_grammar, min_size=1, max_size=12), st.integers(0, 50))
def test_any_action_sequence_never_raises(actions, seed):
    obs, info = ENV.reset(seed=seed)
    for action in actions:
        before = ENV._state.copy()
        obs, reward, terminated, truncated, info = ENV.step(action)
        assert isinstance(obs, str) and isinstance(reward, float)
        assert {"task", "instruction", "step", "action_valid", "available_actions", "allowed_actions",
            "progress"} <= info.keys()
        assert 0.0 <= info["progress"] <= 1.0
        if not info["action_valid"]:
            assert info["error"] and reward == 0.0
            assert ENV._state.page == before.page and ENV._state.options == before.options
            assert ENV._state.asin == before.asin and ENV._state.page_num == before.page_num
        if terminated or truncated:
            assert {"success", "score", "evaluation"} <= info.keys()
            break


def test_non_string_actions_are_invalid_not_errors():
    ENV.reset(seed=0)
    for bad in (None, 3, b"search[x]", ["click[x]"]):
        obs, reward, terminated, truncated, info = ENV.step(bad)
        assert info["action_valid"] is False and "string" in info["error"]


def test_step_after_end_is_reported():
    ENV.reset(seed=1)
    for action in ENV.oracle(ENV._task):
        ENV.step(action)
    obs, reward, terminated, truncated, info = ENV.step("search[more]")
    assert terminated and reward == 0.0 and not info["action_valid"] and "reset" in info["error"]
