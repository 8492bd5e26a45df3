"""Shared fixtures of the sandbox security tests: the env, a bare sandbox, and the "next step works" check.

The env-level cases run against both AppWorld ids, ``evolver/AppWorld-v0`` (this project's apps, in the
host) and ``evolver/AppWorldApps-v0`` (AppWorld's real apps in their own process; skipped with the reason
where they are not installed: ``bash scripts/setup.sh appworld-apps``). The cases are the same; a
``Flavour`` holds the little that differs: the notes app's name, the active task's status, and how the
test reads the host's side (API calls made, notes stored, tables changed), never the agent's view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.appworld.db import diff_databases
from evolver_gym.appworld.sandbox import Sandbox, SandboxConfig
from evolver_gym.appworld_apps.backend import unavailable_reason

APPS_REASON = unavailable_reason()


@dataclass(frozen=True)
class Flavour:
    """One env id the cases run against, and what differs between the two."""

    env_id: str
    notes: str  # the notes app: "notes" (embedded) or "simple_note" (AppWorld's)
    active_status: str  # what show_active_task()['status'] says while the task runs

    @property
    def real_apps(self) -> bool:
        return self.env_id == "evolver/AppWorldApps-v0"

    @property
    def login(self) -> str:
        """Code that logs the supervisor in to the notes app as ``tok``."""
        return (
            "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
            "me = apis.supervisor.show_profile()\n"
            f"tok = apis.{self.notes}.login(username=me['email'], password=pw[{self.notes!r}])['access_token']\n"
        )

    def make(self, **kwargs: Any):
        return gym.make(self.env_id, **kwargs).unwrapped

    def calls(self, env) -> int:
        """API calls the host has let through to the apps so far."""
        return env.num_calls if self.real_apps else env._ctx.num_calls

    def notes_titled(self, env, title: str, prefix: bool = False) -> list[str]:
        """The contents of the notes titled ``title`` (or, with ``prefix``, starting with it) in the world now;
        the cases use titles no generated world has at reset."""
        if not self.real_apps:
            rows = env._dbs.query("notes", "SELECT title, content FROM notes")
        else:
            rows = [row for d in env.diffs() if d.name == "simple_note.notes"
                    for i, row in d.end_rows.items() if i in d.added]
        return [r["content"] for r in rows if (r["title"].startswith(title) if prefix else r["title"] == title)]

    def snapshot(self, env) -> Any:
        """The world's state, for :meth:`changed_since`."""
        if not self.real_apps:
            return env._dbs.copy()
        return {d.name: (d.added, d.updated, d.removed, d.end_rows) for d in env.diffs()}

    def changed_since(self, env, snap: Any) -> list[str]:
        """The tables that changed since ``snap``."""
        if not self.real_apps:
            return [d.name for d in diff_databases(snap, env._dbs)]
        now = self.snapshot(env)
        return sorted(name for name in set(snap) | set(now) if snap.get(name) != now.get(name))


EMBEDDED = Flavour("evolver/AppWorld-v0", notes="notes", active_status="active")
REAL_APPS = Flavour("evolver/AppWorldApps-v0", notes="simple_note", active_status="None")
FLAVOURS = [
    pytest.param(EMBEDDED, id="AppWorld-v0"),
    pytest.param(
        REAL_APPS,
        id="AppWorldApps-v0",
        marks=pytest.mark.skipif(APPS_REASON is not None, reason=f"AppWorld's apps are not installed: {APPS_REASON}"),
    ),
]
LOGIN = EMBEDDED.login


def answers_next_step(env) -> None:
    """The env still answers correctly: code runs, an API call goes through, the episode is not over."""
    obs, reward, terminated, truncated, info = env.step(
        "print(6 * 7, len(apis.api_docs.show_app_descriptions()) > 3)"
    )
    assert obs.endswith("42 True\n"), obs[-500:]
    assert info["action_valid"] and not terminated and reward == 0.0
    assert obs in env.observation_space


def no_api(app, api, kwargs):
    return 404, {"message": "no API in this test"}


@pytest.fixture(scope="module", params=FLAVOURS)
def flavour(request) -> Flavour:
    return request.param


@pytest.fixture(scope="module")
def env(flavour):
    e = flavour.make(split="train", timeout_s=2.0, max_steps=10**6)
    e.reset(options={"split": "train", "index": 0})
    yield e
    e.close()


@pytest.fixture(scope="module", params=[pytest.param(None, id="bare"), FLAVOURS[1]])
def sandbox(request):
    """A bare sandbox, or the one ``evolver/AppWorldApps-v0`` runs its cells in (its app server alive beside it)."""
    if request.param is None:
        sb = Sandbox(SandboxConfig(wall_s=5.0))
        sb.reset()
        yield sb
        sb.close()
        return
    e = request.param.make(split="train", timeout_s=5.0)
    e.reset(options={"split": "train", "index": 0})
    yield e._sandbox
    e.close()


def unguarded(sb: Sandbox, code: str) -> str:
    """Output of ``code`` run with the real builtins (a cell that escaped the language layer)."""
    return sb._execute_unguarded(code, no_api).output


def sandbox_answers(sb: Sandbox) -> None:
    res = sb.execute("print(sum(range(7)))", no_api)
    assert res.output.endswith("21\n") and res.ok, res.output
