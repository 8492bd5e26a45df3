"""RealAppWorldEnv: runs only against a reachable ``appworld serve environment``."""

from __future__ import annotations

import os

import pytest

from evolver_gym.appworld.real import RealAppWorldEnv, appworld_server_reachable

URL = os.environ.get("EVOLVER_APPWORLD_URL")
CMD = os.environ.get("EVOLVER_APPWORLD_SERVER_CMD")
ROOT = os.environ.get("APPWORLD_ROOT")


def test_needs_a_server_or_a_command(monkeypatch):
    monkeypatch.delenv("EVOLVER_APPWORLD_URL", raising=False)
    monkeypatch.delenv("EVOLVER_APPWORLD_SERVER_CMD", raising=False)
    with pytest.raises(ValueError, match="base_url"):
        RealAppWorldEnv()
    with pytest.raises(ValueError, match="split"):
        RealAppWorldEnv(base_url="http://127.0.0.1:9", split="nope")
    assert not appworld_server_reachable("http://127.0.0.1:9", timeout=0.5)


@pytest.mark.skipif(
    not ((URL and appworld_server_reachable(URL)) or CMD) or not ROOT,
    reason="no AppWorld server reachable: set EVOLVER_APPWORLD_URL (running server) or "
    "EVOLVER_APPWORLD_SERVER_CMD, and APPWORLD_ROOT (see docs/appworld.md)",
)
def test_real_episode_round_trip():
    env = RealAppWorldEnv(split="dev")
    try:
        obs, info = env.reset(options={"split": "dev", "index": 0})
        assert info["instruction"] and info["instruction"] in obs
        obs, *_ = env.step("print(apis.api_docs.show_app_descriptions())")
        assert "supervisor" in obs
        obs, reward, term, trunc, info = env.step("apis.supervisor.complete_task()")
        assert term and "evaluation" in info and reward in (0.0, 1.0)
    finally:
        env.close()
