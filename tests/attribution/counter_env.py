"""A tiny text environment following the project's single-agent contract, for wrapper tests.

The agent must bring a counter from 0 to ``target`` and ``submit``. Actions: ``inc``, ``dec``,
``wait``, ``submit``; anything else is invalid. ``info["progress"] = clip(x / target, 0, 1)``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, UnicodeText

SECRET = "SECRET-REFERENCE-7f3a"


class CounterEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, target: int = 2) -> None:
        self.target = target
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.x = 0
        self.t = 0
        self.task = Task("counter/train/0", "test/Counter-v0", f"Bring the counter to {target} and submit.",
                         goal={"target": target}, reference=["inc"] * target + ["submit", SECRET])

    def _info(self, valid: bool = True, error: str | None = None) -> dict[str, Any]:
        info = {"task": self.task.public(), "instruction": self.task.instruction, "step": self.t,
                "action_valid": valid, "progress": max(0.0, min(1.0, self.x / self.target))}
        if error is not None:
            info["error"] = error
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.x, self.t = 0, 0
        return f"Counter at 0. {self.task.instruction}", self._info()

    def step(self, action: str):
        self.t += 1
        action = str(action).strip()
        if action == "submit":
            success = self.x == self.target
            info = self._info()
            info.update(success=success, score=1.0 if success else 0.0,
                        evaluation={"x": self.x, "target": self.target, "hidden": SECRET})
            return f"Submitted {self.x}.", float(success), True, False, info
        if action not in ("inc", "dec", "wait"):
            return (f"Invalid action {action!r}: use inc, dec, wait or submit.", 0.0, False, False,
                    self._info(False, f"unknown action {action!r}"))
        self.x += {"inc": 1, "dec": -1, "wait": 0}[action]
        return f"Counter at {self.x}.", 0.0, False, False, self._info()
