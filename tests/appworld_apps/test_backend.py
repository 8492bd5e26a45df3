"""The host side without the apps: finding the interpreter, saying why the apps cannot run, bad arguments."""

import sys

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.appworld_apps import backend
from evolver_gym.appworld_apps.backend import AppsServer, AppsServerError


def test_an_interpreter_without_appworld_is_named(monkeypatch):
    monkeypatch.setenv("EVOLVER_APPWORLD_PYTHON", sys.executable)
    backend._package_problem.cache_clear()
    reason = backend.unavailable_reason()
    assert reason is not None and "no appworld package" in reason and sys.executable in reason
    with pytest.raises(AppsServerError, match="no appworld package"):
        AppsServer()
    env = gym.make("evolver/AppWorldApps-v0").unwrapped  # the server starts lazily: make never fails
    with pytest.raises(AppsServerError, match="no appworld package"):
        env.reset()
    backend._package_problem.cache_clear()


def test_world_cache_folder_follows_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("EVOLVER_APPWORLD_APPS_CACHE", str(tmp_path))
    assert backend.world_dir(3) == tmp_path / f"world-seed3-v{backend.WORLD_VERSION}"


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="-1"):
        AppsServer(python=sys.executable, timeout_s=-1)
    for kwargs, bad in (({"split": "nope"}, "'nope'"), ({"action_mode": "x"}, "'x'"), ({"max_steps": 0}, "0")):
        with pytest.raises(ValueError, match=bad):
            gym.make("evolver/AppWorldApps-v0", **kwargs)


def test_server_world_version_matches_the_host():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(backend.__file__).with_name("_server.py").read_text())
    versions = [n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "WORLD_VERSION"]
    assert versions == [backend.WORLD_VERSION]
