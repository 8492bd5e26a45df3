"""``evolver/AppWorldReal-v0``: the real AppWorld behind ``appworld serve environment``, over HTTP.

* ``RealAppWorldEnv`` - same actions, observations, reward and ``info`` as ``AppWorldEnv``, but the
  world, tasks and tests are AppWorld's own, served by a process the adapter starts (or one
  already running at ``base_url``). This process never imports ``appworld``: its pins (pydantic
  v1, old FastAPI) live in their own virtualenv. See ``docs/appworld.md``.
* ``appworld_server_reachable`` - whether a server answers at a URL (used by tests to skip).
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import gymnasium as gym

from evolver_gym.core.spaces import UnicodeText
from evolver_gym.core.task import Task

__all__ = ["RealAppWorldEnv", "appworld_server_reachable"]

ENV_ID = "evolver/AppWorldReal-v0"
SPLITS = ("train", "dev", "test_normal", "test_challenge")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def appworld_server_reachable(base_url: str, timeout: float = 2.0) -> bool:
    """True when something answers HTTP at ``base_url`` (any status)."""
    try:
        urllib.request.urlopen(base_url.rstrip("/") + "/", timeout=timeout)
        return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


class RealAppWorldEnv(gym.Env[str, str]):
    """Adapter to a real ``appworld serve environment`` server (one server per env instance).

    Args:
        server_command: Command that starts the server; ``{port}`` is replaced by a free port, e.g.
            ``"/opt/appworld-venv/bin/appworld serve environment --port {port}"``. Ignored if
            ``base_url`` is given. Default: ``$EVOLVER_APPWORLD_SERVER_CMD``.
        base_url: URL of a server that is already running (default ``$EVOLVER_APPWORLD_URL``).
        appworld_root: Folder holding AppWorld's ``data/`` (for task ids per split; default
            ``$APPWORLD_ROOT``).
        split: Default split. ``max_steps``: step cap (40). ``experiment_name``: output folder name
            on the server side (unique per instance by default). ``startup_timeout_s``: wait for the
            server (120). ``request_timeout_s``: per request (AppWorld's own cell timeout is 100 s).

    Example:
        >>> env = RealAppWorldEnv(base_url="http://127.0.0.1:8000")  # doctest: +SKIP
        >>> obs, info = env.reset(options={"task_id": "82e2fac_1"})  # doctest: +SKIP
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        server_command: str | list[str] | None = None,
        base_url: str | None = None,
        appworld_root: str | None = None,
        split: str = "train",
        max_steps: int = 40,
        experiment_name: str | None = None,
        startup_timeout_s: float = 120.0,
        request_timeout_s: float = 150.0,
        render_mode: str | None = None,
    ):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        self.split, self.max_steps, self.render_mode = split, max_steps, render_mode
        self.server_command = server_command or os.environ.get("EVOLVER_APPWORLD_SERVER_CMD")
        self.base_url = (base_url or os.environ.get("EVOLVER_APPWORLD_URL") or "").rstrip("/") or None
        self._user_url = self.base_url is not None
        self.appworld_root = appworld_root or os.environ.get("APPWORLD_ROOT")
        self.experiment_name = experiment_name or f"evolver-{os.getpid()}-{id(self):x}"
        self.startup_timeout_s, self.request_timeout_s = startup_timeout_s, request_timeout_s
        if self.base_url is None and not self.server_command:
            raise ValueError(
                "RealAppWorldEnv needs base_url (or $EVOLVER_APPWORLD_URL) or server_command "
                "(or $EVOLVER_APPWORLD_SERVER_CMD); see docs/appworld.md"
            )
        self.action_space = UnicodeText(200_000, examples=("print(apis.api_docs.show_app_descriptions())",))
        self.observation_space = UnicodeText(1_000_000)
        self._proc: subprocess.Popen | None = None
        self._task: Task | None = None
        self._steps, self._done, self._last_obs = 0, False, ""

    # -- server ------------------------------------------------------------------------------
    def _ensure_server(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        if self._user_url:  # a server the user runs; requests will fail clearly if it is down
            return
        port = _free_port()
        cmd = self.server_command
        argv = [
            a.replace("{port}", str(port)) for a in (shlex.split(cmd) if isinstance(cmd, str) else list(cmd))
        ]
        self._proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        self.base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + self.startup_timeout_s
        while not appworld_server_reachable(self.base_url, timeout=1.0):
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"the AppWorld server command exited with code {self._proc.returncode}: {argv}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"no AppWorld server at {self.base_url} after {self.startup_timeout_s}s")
            time.sleep(0.5)

    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        req = urllib.request.Request(
            self.base_url + path,
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=self.request_timeout_s) as resp:
            data = json.loads(resp.read().decode() or "null")
        return data.get("output") if isinstance(data, dict) and "output" in data else data

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base_url + path, timeout=self.request_timeout_s) as resp:
            data = json.loads(resp.read().decode() or "null")
        return data.get("output") if isinstance(data, dict) and "output" in data else data

    # -- tasks -------------------------------------------------------------------------------
    def tasks(self, split: str | None = None) -> list[Task]:
        """Task records (ids and split; instruction filled on reset) from ``data/datasets/<split>.txt``."""
        split = split or self.split
        if not self.appworld_root:
            raise ValueError("set appworld_root or $APPWORLD_ROOT to list AppWorld task ids")
        path = Path(self.appworld_root) / "data" / "datasets" / f"{split}.txt"
        ids = [x.strip() for x in path.read_text().splitlines() if x.strip()]
        return [Task(task_id=i, env_id=ENV_ID, instruction="", split=split) for i in ids]

    def profile(self) -> dict[str, Any]:
        return {
            "env_id": ENV_ID,
            "entities": {},
            "attributes": {},
            "operations": {"note": "see apis.api_docs inside the episode"},
        }

    def oracle(self, task: Task) -> list[str]:
        raise NotImplementedError("the real AppWorld keeps its solutions encrypted; no oracle is available")

    def hindsight_task(self, trajectory: Any) -> None:
        return None

    # -- gym API -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        if "task" in options:
            task_id = Task.from_dict(options["task"]).task_id
        elif "task_id" in options:
            task_id = str(options["task_id"])
        else:
            tasks = self.tasks(options.get("split", self.split))
            index = int(options["index"]) if "index" in options else int(self.np_random.integers(len(tasks)))
            task_id = tasks[index].task_id
        self._ensure_server()
        self._post(
            "/initialize",
            {
                "task_id": task_id,
                "experiment_name": self.experiment_name,
                "max_interactions": max(self.max_steps, 1) + 1,
            },
        )
        spec = self._get(f"/tasks/{task_id}") or {}
        sup = spec.get("supervisor", {})
        self._task = Task(
            task_id=task_id,
            env_id=ENV_ID,
            instruction=spec.get("instruction", ""),
            split=options.get("split", self.split),
            goal={"supervisor": sup, "datetime": spec.get("datetime")},
        )
        from .env import render_prompt

        self._steps, self._done = 0, False
        self._last_obs = render_prompt(self._task)
        return self._last_obs, self._info(True)

    def _info(self, valid: bool, error: str | None = None) -> dict[str, Any]:
        info = {
            "task": self._task.public(),
            "instruction": self._task.instruction,
            "step": self._steps,
            "action_valid": valid,
        }
        if error:
            info["error"] = error
        return info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            return (
                "The episode has ended; call reset().",
                0.0,
                True,
                False,
                self._info(False, "step after end"),
            )
        self._steps += 1
        try:
            obs = str(self._post("/execute", {"task_id": self._task.task_id, "code": str(action)}))
            terminated = bool(self._post("/task_completed", {"task_id": self._task.task_id}))
            valid, error = True, None
        except (urllib.error.URLError, OSError, ValueError) as e:
            obs, terminated, valid, error = (
                f"Execution failed. Traceback:\nAppWorld server error: {e}",
                False,
                False,
                str(e),
            )
        truncated = not terminated and self._steps >= self.max_steps
        info = self._info(valid, error)
        reward = 0.0
        if terminated or truncated:
            self._done = True
            ev = self.evaluate()
            info.update(success=ev["success"], score=float(ev["success"]), evaluation=ev)
            reward = float(ev["success"])
        self._last_obs = obs
        return obs, reward, terminated, truncated, info

    def evaluate(self) -> dict[str, Any]:
        """AppWorld's ``TestTracker.to_dict()`` with ``pass_share`` and ``difficulty`` added."""
        raw = self._post("/evaluate", {"task_id": self._task.task_id, "suppress_errors": True}) or {}
        passes, failures = raw.get("passes", []), raw.get("failures", [])
        n = len(passes) + len(failures)
        return {
            **raw,
            "success": bool(raw.get("success", n > 0 and not failures)),
            "passes": passes,
            "failures": failures,
            "num_tests": n,
            "pass_share": len(passes) / n if n else 0.0,
            "difficulty": raw.get("difficulty"),
        }

    def render(self) -> str | None:
        return self._last_obs if self.render_mode == "ansi" else None

    def close(self) -> None:
        if self._task is not None and self.base_url:
            try:
                self._post("/close", {"task_id": self._task.task_id})
            except (urllib.error.URLError, OSError, ValueError):
                pass
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._proc = None
        super().close()
