"""SuperSuit's Gymnasium vector helper over a text environment: its async vector env runs on the
shared-memory text space like gym.make_vec does."""

from __future__ import annotations

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401 - registers the ids


def test_gym_vec_env_multiprocessing_steps_a_text_environment():
    # imported here: a module-level reference breaks doctest collection (supersuit's __getattr__ raises
    # ImportError, not AttributeError, for `__wrapped__`)
    ss = pytest.importorskip("supersuit", reason="SuperSuit's vector helpers need `supersuit` (extra: scale)")
    env = gym.make("evolver/WebShop-v0", num_products=200)
    sync = ss.gym_vec_env_v0(env, 2, multiprocessing=False)
    asyn = ss.gym_vec_env_v0(env, 2, multiprocessing=True)  # the env is pickled into each worker
    try:
        assert isinstance(asyn, gym.vector.AsyncVectorEnv)
        out = []
        for vec in (sync, asyn):
            obs, _ = vec.reset(seed=3)
            step = vec.step(("search[blue shoes]", "search[shampoo]"))
            out.append((obs, step[0], step[1].tolist()))
        assert out[0] == out[1] and all(o.startswith("WebShop") for o in out[1][0])
    finally:
        sync.close()
        asyn.close()
        env.close()
