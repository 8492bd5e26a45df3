"""``info["allowed_actions"]`` on WebShop: the clicks a page accepts, ``None`` where the search bar is free."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import evolver_gym  # noqa: F401 - registers the environment ids

SMALL = {"num_products": 200, "max_steps": 10}


def _env(shaping):
    env = gym.make("evolver/WebShop-v0", **SMALL)
    for name in shaping:
        env = env.unwrapped.observation_shaper(name)(env)
    return env


def _replay(shaping, reset, actions):
    env = _env(shaping)
    env.reset(**reset)
    for action in actions:
        env.step(action)
    return env


@pytest.mark.parametrize("shaping", [[], ["top_results=3", "numbered_results"]])
def test_every_listed_action_is_accepted_and_a_search_bar_lists_none(shaping):
    for episode in range(3):
        rng = np.random.default_rng(episode)
        reset = {"seed": episode, "options": {"split": "dev", "index": episode}}
        env = _env(shaping)
        _, info = env.reset(**reset)
        taken: list[str] = []
        done, checked = False, 0
        while not done:
            allowed = info["allowed_actions"]
            available = info["available_actions"]
            assert "allowed_actions" in info
            if available["has_search_bar"]:
                assert allowed is None  # the search text is free
                words = info["instruction"].split()
                action = "search[" + " ".join(rng.choice(words, size=min(4, len(words)), replace=False)) + "]"
            else:
                assert isinstance(allowed, list) and all(isinstance(a, str) for a in allowed)
                assert allowed == [f"click[{c}]" for c in available["clickables"]]
                for candidate in allowed:  # each one, stepped from this page, is a valid action
                    probe = _replay(shaping, reset, taken)
                    assert probe.step(candidate)[4]["action_valid"], (taken, candidate)
                    probe.close()
                    checked += 1
                probe = _replay(shaping, reset, taken)  # a click the page does not list is refused
                assert not probe.step("click[not on this page]")[4]["action_valid"]
                probe.close()
                action = allowed[int(rng.integers(len(allowed)))]
            _, _, terminated, truncated, info = env.step(action)
            assert info["action_valid"], (action, info.get("error"))
            taken.append(action)
            done = terminated or truncated
        if terminated:  # a purchase ends the episode: nothing more is accepted
            assert info["allowed_actions"] == []
        assert checked > 0
        env.close()
