"""Test fixtures for the trainer: a multi-turn guessing game on the environment contract, two
contract-shaped annotation wrappers (attribution labels, injected experience), and a tiny policy.

The game: guess a hidden number in 0..9; each observation says "higher" or "lower". A correct
guess ends the episode with success and score 1; otherwise the episode ends after ``max_steps``.
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, UnicodeText

ENV_ID = "test/Guess-v0"
# Lenient on purpose: the first digit of the action is the guess, so an untrained policy that emits
# digits sometimes wins and GRPO groups have reward variance from the first step.
_DIGIT = re.compile(r"\d")


class GuessEnv(gym.Env):
    """Guess the hidden digit; feedback says higher/lower."""

    metadata = {"render_modes": []}

    def __init__(self, max_steps: int = 4, num_tasks: int = 10):
        self.max_steps = max_steps
        self._tasks = [Task(task_id=f"guess/train/{i}", env_id=ENV_ID, instruction=f"find the number {i % 10}",
                            goal={"target": i % 10}, reference=[f"guess[{i % 10}]"]) for i in range(num_tasks)]
        self.observation_space = UnicodeText(2000)
        self.action_space = UnicodeText(100, examples=("guess[5]",))
        self.task: Task | None = None

    def tasks(self, split: str = "train") -> list[Task]:
        return list(self._tasks)

    def oracle(self, task: Task) -> list[str]:
        return list(task.reference)

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {"task": self.task.public(), "instruction": self.task.instruction, "step": self.t,
                "action_valid": True, **extra}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "task" in options:
            self.task = Task.from_dict(options["task"])
        else:
            self.task = self._tasks[int(self.np_random.integers(len(self._tasks)))]
        self.t, self.low, self.high = 0, 0, 9
        return f"guess a number from 0 to 9 . task : {self.task.instruction}", self._info()

    def step(self, action: str):
        self.t += 1
        target = int(self.task.goal["target"])
        m = _DIGIT.search(str(action))
        extra: dict[str, Any] = {}
        if m is None:
            obs, reward, done = f"invalid action : {str(action)[:40]} . use guess [ n ]", 0.0, False
            extra = {"action_valid": False, "error": "unparsable action"}
        else:
            n = int(m.group(0))
            done = n == target
            reward = 1.0 if done else 0.0
            obs = "correct" if done else ("higher" if n < target else "lower")
        truncated = not done and self.t >= self.max_steps
        info = self._info(progress=1.0 if done else 0.0, **extra)
        if done or truncated:
            info.update(success=bool(done), score=float(done), evaluation={"target": target})
        return obs, reward, bool(done), bool(truncated), info


class LabelWrapper(gym.Wrapper):
    """Writes ``info["attribution"]`` on the final step (contract shape): GOOD for valid guesses."""

    def reset(self, **kwargs: Any):
        self.valid: list[bool] = []
        return self.env.reset(**kwargs)

    def step(self, action: str):
        obs, r, term, trunc, info = self.env.step(action)
        self.valid.append(bool(info.get("action_valid", True)))
        if term or trunc:
            info["attribution"] = {"attributor": "test", "fallback": False, "labels": [
                {"step": i, "label": "GOOD" if v else "BAD", "score": 1.0 if v else -1.0, "reason": ""}
                for i, v in enumerate(self.valid)]}
        return obs, r, term, trunc, info


class HintWrapper(gym.Wrapper):
    """Injects a fixed experience block into the first observation when ``options["experience"]``."""

    TEXT = " experience : guess in the middle first . "

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        if (options or {}).get("experience"):
            obs = self.TEXT + obs
            self.exp = {"enabled": True, "ids": ["e1"], "text": self.TEXT, "span": [0, len(self.TEXT)]}
        else:
            self.exp = {"enabled": False, "ids": [], "text": "", "span": [0, 0]}
        info["experience"] = self.exp
        return obs, info

    def step(self, action: str):
        obs, r, term, trunc, info = self.env.step(action)
        info["experience"] = self.exp
        return obs, r, term, trunc, info


def vocabulary_texts() -> list[str]:
    env = GuessEnv()
    texts = [t.instruction for t in env.tasks()] + [f"guess[{i}]" for i in range(10)]
    texts += ["guess a number from 0 to 9 . task :", "correct higher lower invalid action : use guess [ n ]",
              HintWrapper.TEXT]
    return texts


def tiny_policy(seed: int = 0, hidden: int = 32):
    """A word-level tokenizer over the game's texts and a ~20k-parameter Llama built from a config."""
    from evolver_train.policy import TinyPolicyConfig, build_tiny_policy, build_word_tokenizer

    tok = build_word_tokenizer(vocabulary_texts())
    tok.padding_side = "left"
    model = build_tiny_policy(tok, TinyPolicyConfig(hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2,
                                                    intermediate_size=2 * hidden, max_position_embeddings=512),
                              seed=seed)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model, tok
