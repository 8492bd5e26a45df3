"""Fuzzed hostile actions: no exception out of step(), every observation in the observation space.

Both AppWorld ids (``conftest.FLAVOURS``) take the same actions. CI runs a few thousand actions per
mode; the full 10,000 per mode is the slow test (and ``benchmarks/appworld_fuzz.py``, whose figures are
in benchmarks/results/appworld.md).
"""

from __future__ import annotations

import pytest

from evolver_gym.appworld.fuzz import fuzz_actions, fuzz_env

from .conftest import FLAVOURS


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("mode,n", [("tool", 3000), ("code", 1500)])
def test_fuzz(flavour, mode, n):
    env = flavour.make(split="train", action_mode=mode, timeout_s=0.3)
    report = fuzz_env(env, fuzz_actions(n, mode, seed=1))
    env.close()
    assert report["steps"] == n and report["exceptions"] == 0 and report["outside_space"] == 0, report


@pytest.mark.slow
@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("mode", ["tool", "code"])
def test_fuzz_10k(flavour, mode):
    env = flavour.make(split="train", action_mode=mode, timeout_s=0.3)
    report = fuzz_env(env, fuzz_actions(10_000, mode, seed=0))
    env.close()
    assert report["steps"] == 10_000 and report["exceptions"] == 0 and report["outside_space"] == 0, report
