"""``ExperienceContext``: retrieved experience injected into the first observation of an episode.

* ``ExperienceContext`` - the Gymnasium wrapper.
* ``EXP_OPEN`` / ``EXP_CLOSE`` - the fixed delimiters of the injected block.
* ``format_block`` - the exact block text for a list of experiences.
* ``strip_experience`` - remove injected blocks from a text (what the trainer does before the loss).
* ``is_training_task`` - the split guard: only training-split episodes may enter a pool.

The block is placed at the very start of the first observation, so ``info["experience"]["span"]``
is ``[0, len(text)]`` whenever something was injected.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

from evolver_gym.core import Step, Task, Trajectory
from evolver_gym.core.spaces import UnicodeText

from .pool import ExperiencePool, Hit, PoolConfig
from .record import Experience

__all__ = ["ExperienceContext", "Summarizer", "EXP_OPEN", "EXP_CLOSE", "format_block", "strip_experience",
           "is_training_task", "TRAIN_SPLITS"]

EXP_OPEN = "<EXP>"
EXP_CLOSE = "</EXP>"
_HEADER = "Some related experience to help you complete the task:"
_BLOCK_RE = re.compile(re.escape(EXP_OPEN) + r".*?" + re.escape(EXP_CLOSE) + r"\n\n", re.DOTALL)
TRAIN_SPLITS = ("train",)


@runtime_checkable
class Summarizer(Protocol):
    """Turns finished trajectories (all of one task) into experiences."""

    def summarize(self, trajectories: Sequence[Trajectory]) -> list[Experience]: ...


def is_training_task(task: Task | dict[str, Any] | None, train_splits: Sequence[str] = TRAIN_SPLITS) -> bool:
    """True only for a task whose split is a training split (unknown split: False)."""
    if task is None:
        return False
    split = task.split if isinstance(task, Task) else task.get("split")
    return isinstance(split, str) and split in train_splits


def _clean(text: str) -> str:
    # Stored text is model output: keep it printable and unable to close the block early.
    text = "".join(c if (c.isprintable() or c in "\n\t") else " " for c in text)
    return text.replace(EXP_OPEN, "<exp>").replace(EXP_CLOSE, "</exp>").strip()


def format_block(experiences: Sequence[Experience], max_chars: int = 4000) -> str:
    """The injected block: delimiters, a header and one numbered item per experience.

    Items that would push the block past ``max_chars`` are dropped (then truncated, for the first).
    """
    return _format(experiences, max_chars)[0]


def _format(experiences: Sequence[Experience], max_chars: int) -> tuple[str, int]:
    items: list[str] = []
    frame = len(EXP_OPEN) + len(_HEADER) + len(EXP_CLOSE) + 4
    for n, exp in enumerate(experiences, 1):
        item = f"{n}. When: {_clean(exp.when_to_use)}\n   Advice: {_clean(exp.content)}"
        room = max_chars - frame - sum(len(i) + 1 for i in items) - 1
        if len(item) > room:
            if items or room < 40:
                break
            item = item[: room - 3] + "..."
        items.append(item)
    if not items:
        return "", 0
    return f"{EXP_OPEN}{_HEADER}\n" + "\n".join(items) + f"\n{EXP_CLOSE}\n\n", len(items)


def strip_experience(text: str) -> str:
    """``text`` with every injected experience block removed."""
    return _BLOCK_RE.sub("", text)


def _open_pool(pool: Any) -> ExperiencePool:
    if isinstance(pool, ExperiencePool):
        return pool
    if isinstance(pool, Mapping):
        pool = PoolConfig(**pool)
    if isinstance(pool, (str, PoolConfig)):
        return ExperiencePool(pool)
    raise TypeError(f"pool must be an ExperiencePool, a PoolConfig, its fields or a URI, got {type(pool).__name__}")


def _empty(enabled: bool) -> dict[str, Any]:
    return {"enabled": enabled, "ids": [], "text": "", "span": [0, 0]}


class ExperienceContext(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Inject the top-k experiences for the task's instruction into the first observation.

    Args:
        env: A text environment (its ``info`` has ``instruction`` and ``task``).
        pool: The :class:`ExperiencePool` to retrieve from (and add to, in continual mode), or where
            one lives: a URI (``http://host:19530`` for a Milvus server shared by many processes), a
            :class:`PoolConfig` or its fields as a mapping. The pool's configuration (without its
            token) is recorded in the spec, so ``gym.make(env.spec)`` rebuilds the wrapper; a pool
            the wrapper opened itself is closed with the environment.
        top_k: Experiences per episode (``None``: the pool's default).
        threshold: Minimum similarity (``None``: the pool's default).
        enabled: Whether episodes get experience unless ``reset(options={"experience": ...})`` says.
        filter_env: Retrieve only experiences of the task's environment.
        max_chars: Longest injected block, in characters.
        summarizer: Turns finished episodes into experiences; with ``continual=True`` they are
            added after every training-split episode.
        continual: Add experience after training-split episodes (dev/test never enter the pool).
        summary_batch: Episodes of one task gathered before they are summarised together (so an
            LLM summarizer can contrast successes and failures).
        count_uses: Record uses and wins of the injected experiences after training episodes.
        train_splits: The splits that count as training.

    ``info`` keys written, on reset and carried on every step:
        ``info["experience"] = {"enabled": bool, "ids": [str], "text": str, "span": [start, end]}``,
        where ``obs[start:end] == text`` in the first observation (``[0, 0]`` and empty when nothing
        was injected).

    Example:
        >>> env = ExperienceContext(gym.make("evolver/WebShop-v0"), pool)        # doctest: +SKIP
        >>> obs, info = env.reset(seed=0)                                          # doctest: +SKIP
        >>> s, e = info["experience"]["span"]; obs[s:e] == info["experience"]["text"]  # doctest: +SKIP
        True
        >>> obs, info = env.reset(seed=0, options={"experience": False})          # doctest: +SKIP
    """

    def __init__(self, env: gym.Env, pool: ExperiencePool | PoolConfig | Mapping[str, Any] | str, *,
                 top_k: int | None = None,
                 threshold: float | None = None, enabled: bool = True, filter_env: bool = True,
                 max_chars: int = 4000, summarizer: Summarizer | None = None, continual: bool = False,
                 summary_batch: int = 1, count_uses: bool = True,
                 train_splits: Sequence[str] = TRAIN_SPLITS) -> None:
        self._owns_pool = not isinstance(pool, ExperiencePool)
        pool = _open_pool(pool)
        gym.utils.RecordConstructorArgs.__init__(
            self, pool={k: v for k, v in dataclasses.asdict(pool.config).items() if k != "token"},
            top_k=top_k, threshold=threshold, enabled=enabled, filter_env=filter_env,
            max_chars=max_chars, continual=continual, summary_batch=summary_batch, count_uses=count_uses,
            train_splits=tuple(train_splits))
        gym.Wrapper.__init__(self, env)
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be a positive int or None, got {top_k!r}")
        if threshold is not None and not -1.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must lie in [-1, 1] or be None, got {threshold!r}")
        if not isinstance(max_chars, int) or max_chars < 100:
            raise ValueError(f"max_chars must be an int >= 100, got {max_chars!r}")
        if continual and summarizer is None:
            raise ValueError("continual=True needs a summarizer, got summarizer=None")
        if summarizer is not None and not isinstance(summarizer, Summarizer):
            raise TypeError(f"summarizer must have summarize(trajectories), got {type(summarizer).__name__}")
        if not isinstance(summary_batch, int) or summary_batch < 1:
            raise ValueError(f"summary_batch must be a positive int, got {summary_batch!r}")
        if isinstance(train_splits, str) or not train_splits:
            raise ValueError(f"train_splits must be a non-empty sequence of split names, got {train_splits!r}")
        self.pool, self.top_k, self.threshold = pool, top_k, threshold
        self.enabled, self.filter_env, self.max_chars = bool(enabled), bool(filter_env), max_chars
        self.summarizer, self.continual, self.summary_batch = summarizer, bool(continual), summary_batch
        self.count_uses, self.train_splits = bool(count_uses), tuple(train_splits)
        inner = env.observation_space
        if isinstance(inner, UnicodeText):
            # The first observation grows by the block: widen the space so it stays a member.
            self.observation_space = UnicodeText(inner.max_length + max_chars, examples=inner.examples)
        self._exp_info: dict[str, Any] = _empty(self.enabled)
        self._trajectory: Trajectory | None = None
        self._last_obs = ""
        self._buffers: dict[str, list[Trajectory]] = {}
        self.last_added_ids: list[str] = []

    def retrieve(self, instruction: str, env_id: str | None) -> list[Hit]:
        """The experiences an episode with this instruction gets."""
        if not instruction.strip():
            return []
        return self.pool.search(instruction, top_k=self.top_k, threshold=self.threshold,
                                env_id=env_id if self.filter_env else None)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        enabled = self.enabled
        if options and "experience" in options:
            flag = options["experience"]
            if not isinstance(flag, bool):
                raise ValueError(f"options['experience'] must be True or False, got {flag!r}")
            enabled = flag
            options = {k: v for k, v in options.items() if k != "experience"} or None
        obs, info = self.env.reset(seed=seed, options=options)
        task = info.get("task")
        self._trajectory = Trajectory(task=Task.from_dict(task)) if isinstance(task, dict) else None
        self._last_obs = obs
        self.last_added_ids = []
        exp_info = _empty(enabled)
        if enabled:
            instruction = info.get("instruction") or (task or {}).get("instruction") or ""
            env_id = (task or {}).get("env_id") or (self.env.spec.id if self.env.spec else None)
            hits = self.retrieve(instruction, env_id)
            block, used = _format([h.experience for h in hits], self.max_chars)
            if block:
                obs = block + obs
                exp_info = {"enabled": True, "ids": [h.experience.id for h in hits[:used]], "text": block,
                            "span": [0, len(block)]}
        self._exp_info = exp_info
        info["experience"] = dict(exp_info, ids=list(exp_info["ids"]), span=list(exp_info["span"]))
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info["experience"] = dict(self._exp_info, ids=list(self._exp_info["ids"]),
                                  span=list(self._exp_info["span"]))
        if self._trajectory is not None:
            # The stored episode shows the observation without experience: no feedback loop.
            self._trajectory.steps.append(Step(self._last_obs, action, float(reward),
                                               {k: v for k, v in info.items() if k != "experience"}))
        self._last_obs = obs
        if (terminated or truncated) and self._trajectory is not None:
            self._finish(self._trajectory, info, terminated, truncated)
            self._trajectory = None
        return obs, reward, terminated, truncated, info

    def _finish(self, traj: Trajectory, info: dict[str, Any], terminated: bool, truncated: bool) -> None:
        traj.success = bool(info.get("success", False))
        traj.score = float(info.get("score", traj.total_reward))
        traj.terminated, traj.truncated = bool(terminated), bool(truncated)
        if not is_training_task(traj.task, self.train_splits):
            return  # the split guard: dev/test episodes never touch the pool
        if self.count_uses and self._exp_info["ids"]:
            self.pool.record_use(self._exp_info["ids"], won=traj.success)
        if not self.continual or self.summarizer is None:
            return
        group = self._buffers.setdefault(traj.task.task_id, [])
        group.append(traj)
        if len(group) >= self.summary_batch:
            del self._buffers[traj.task.task_id]
            new = [e for e in self.summarizer.summarize(group) if self._admissible(e, group)]
            self.last_added_ids = self.pool.add(new) if new else []

    def close(self) -> None:
        super().close()
        if self._owns_pool:
            self.pool.close()

    def _admissible(self, exp: Experience, group: list[Trajectory]) -> bool:
        # Second guard: a summarizer may only credit experience to this group's training task.
        return exp.source_task_id in {t.task.task_id for t in group}
