"""Shared fixtures of the sandbox security tests: an env, a bare sandbox, and the "next step works" check."""

from __future__ import annotations

import pytest

from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.appworld.sandbox import Sandbox, SandboxConfig

LOGIN = (
    "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
    "me = apis.supervisor.show_profile()\n"
    "tok = apis.notes.login(username=me['email'], password=pw['notes'])['access_token']\n"
)


def answers_next_step(env: AppWorldEnv) -> None:
    """The env still answers correctly: code runs, an API call goes through, the episode is not over."""
    obs, reward, terminated, truncated, info = env.step(
        "print(6 * 7, len(apis.api_docs.show_app_descriptions()) > 3)"
    )
    assert obs.endswith("42 True\n"), obs[-500:]
    assert info["action_valid"] and not terminated and reward == 0.0
    assert obs in env.observation_space


def no_api(app, api, kwargs):
    return 404, {"message": "no API in this test"}


@pytest.fixture(scope="module")
def env():
    e = AppWorldEnv(split="train", timeout_s=2.0, max_steps=10**6)
    e.reset(options={"split": "train", "index": 0})
    yield e
    e.close()


@pytest.fixture(scope="module")
def sandbox():
    sb = Sandbox(SandboxConfig(wall_s=5.0))
    sb.reset()
    yield sb
    sb.close()


def unguarded(sb: Sandbox, code: str) -> str:
    """Output of ``code`` run with the real builtins (a cell that escaped the language layer)."""
    return sb._execute_unguarded(code, no_api).output


def sandbox_answers(sb: Sandbox) -> None:
    res = sb.execute("print(sum(range(7)))", no_api)
    assert res.output.endswith("21\n") and res.ok, res.output
