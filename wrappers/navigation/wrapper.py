"""``ExperienceContext``: retrieved experience injected into the first observation of an episode.

* ``ExperienceContext`` - the Gymnasium wrapper.
* ``EXP_OPEN`` / ``EXP_CLOSE`` - the fixed delimiters of the injected block.
* ``format_block`` - the exact block text for a list of experiences.
* ``strip_experience`` - remove injected blocks from a text (what the trainer does before the loss).
* ``is_training_task`` - the split guard: only training-split episodes may enter a pool.
* ``ExperiencePayload`` - the typed ``info["experience"]`` record, ``from_info`` / ``to_info``.
* ``summarize_into_pool`` - finished training episodes -> experiences of their own tasks -> the pool.

The block is placed at the very start of the first observation, so ``info["experience"]["span"]``
is ``[0, len(text)]`` whenever something was injected.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

from evolver_gym.core import Task, Trajectory
from evolver_gym.core.spaces import UnicodeText

from ..plugin import TrajectoryRecorder
from .pool import ExperiencePool, Hit, PoolConfig
from .record import Experience

__all__ = ["ExperienceContext", "ExperiencePayload", "Summarizer", "EXP_OPEN", "EXP_CLOSE", "format_block",
           "strip_experience", "is_training_task", "summarize_into_pool", "TRAIN_SPLITS", "LEARN_SPLITS"]

EXP_OPEN = "<EXP>"
EXP_CLOSE = "</EXP>"
_HEADER = "Some related experience to help you complete the task:"
_BLOCK_RE = re.compile(re.escape(EXP_OPEN) + r".*?" + re.escape(EXP_CLOSE) + r"\n\n", re.DOTALL)
TRAIN_SPLITS = ("train",)
#: The splits ``ExperienceContext`` learns from by default: the training split, and ``explore`` (the goal-free
#: start states that tasks synthesised with ``seed_split="none"`` keep as their split; never held out).
LEARN_SPLITS = ("train", "explore")


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


@dataclass
class ExperiencePayload:
    """``info["experience"]``: what was injected into the first observation of the episode.

    Example:
        >>> p = ExperiencePayload.from_info({"experience": {"enabled": True, "ids": ["e1"], "text": "<EXP>x",
        ...                                                  "span": [0, 6]}})
        >>> p.used, p.strip("<EXP>xobservation")
        (True, 'observation')
        >>> ExperiencePayload.from_info({}) is None
        True
    """

    enabled: bool = False
    ids: list[str] = field(default_factory=list)
    text: str = ""
    span: list[int] = field(default_factory=lambda: [0, 0])

    @classmethod
    def from_info(cls, info: dict[str, Any], key: str = "experience") -> ExperiencePayload | None:
        """The payload under ``info[key]``, or ``None`` when the wrapper did not write one."""
        raw = info.get(key)
        if not isinstance(raw, dict):
            return None
        return cls(enabled=bool(raw.get("enabled", False)), ids=[str(i) for i in raw.get("ids", [])],
                   text=str(raw.get("text", "")), span=[int(x) for x in raw.get("span", [0, 0])])

    def to_info(self) -> dict[str, Any]:
        """A fresh dict for ``info`` (callers may edit it without touching the wrapper's state)."""
        return {"enabled": self.enabled, "ids": list(self.ids), "text": self.text, "span": list(self.span)}

    @property
    def used(self) -> bool:
        """Whether experience text was injected."""
        return bool(self.text)

    def strip(self, observation: str) -> str:
        """``observation`` without the injected span (unchanged when nothing was injected)."""
        start, end = self.span
        if not self.used or end <= start:
            return observation
        return observation[:start] + observation[end:]


def summarize_into_pool(pool: ExperiencePool, summarizer: Summarizer, trajectories: Sequence[Trajectory],
                        train_splits: Sequence[str] = TRAIN_SPLITS) -> list[str]:
    """Summarise training-split episodes, grouped by task, and add what they yield to ``pool``.

    Two guards: only training-split tasks are summarised, and an experience is kept only when it
    credits a task of its own group. Returns the ids added (or merged into).
    """
    groups: dict[str, list[Trajectory]] = {}
    for traj in trajectories:
        if is_training_task(traj.task, train_splits):
            groups.setdefault(traj.task.task_id, []).append(traj)
    added: list[str] = []
    for group in groups.values():
        own = {t.task.task_id for t in group}
        new = [e for e in summarizer.summarize(group) if e.source_task_id in own]
        if new:
            added += pool.add(new)
    return added


def _open_pool(pool: Any) -> ExperiencePool:
    if isinstance(pool, ExperiencePool):
        return pool
    if isinstance(pool, Mapping):
        pool = PoolConfig(**pool)
    if isinstance(pool, (str, PoolConfig)):
        return ExperiencePool(pool)
    raise TypeError(f"pool must be an ExperiencePool, a PoolConfig, its fields or a URI, got {type(pool).__name__}")



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
            added after every training-split episode. ``None``: the
            :class:`~wrappers.navigation.summarize_offline.OfflineSummarizer` (no model; successful
            episodes become recipes).
        continual: Learn from the episodes seen: summarise training-split episodes into the pool
            (dev/test never enter it). On by default; ``False`` only retrieves.
        summary_batch: Episodes of one task gathered before they are summarised together (so an
            LLM summarizer can contrast successes and failures).
        count_uses: Record uses and wins of the injected experiences after training episodes.
        train_splits: The splits that count as training (default ``LEARN_SPLITS``: ``train`` and the
            ``explore`` split of tasks synthesised from goal-free start states).
        info_key: The ``info`` key written (default ``"experience"``).

    An episode that cannot be learned from (its split is not a training split, or the env reports no
    ``info["task"]``) is skipped with a ``RuntimeWarning`` saying why, once per reason, so a pool that stays
    empty never does so silently; ``skipped`` counts such episodes by reason.

    ``info`` keys written, on reset and carried on every step (an :class:`ExperiencePayload`):
        ``info[info_key] = {"enabled": bool, "ids": [str], "text": str, "span": [start, end]}``,
        where ``obs[start:end] == text`` in the first observation (``[0, 0]`` and empty when nothing
        was injected).

    Example:
        >>> import tempfile, gymnasium as gym, evolver_gym
        >>> from wrappers.navigation import Experience, ExperiencePool
        >>> pool = ExperiencePool(uri=tempfile.mkdtemp() + "/x.db", threshold=-1.0)
        >>> _ = pool.add([Experience(when_to_use="buying shoes", content="search the type first",
        ...                          env_id="evolver/WebShop-v0")])
        >>> env = ExperienceContext(gym.make("evolver/WebShop-v0", num_products=50), pool, top_k=1)
        >>> obs, info = env.reset(seed=0, options={"split": "dev", "index": 0})
        >>> s, e = info["experience"]["span"]; obs[s:e] == info["experience"]["text"] and e > 0
        True
        >>> obs, info = env.reset(seed=0, options={"split": "dev", "index": 0, "experience": False})
        >>> info["experience"]["ids"]
        []
        >>> pool.close()

    Change logs:
     * v0.3.0 - learns by default (``continual=True``, the offline summarizer); ``train_splits`` default
       ``LEARN_SPLITS``; a warning, once, when finished episodes cannot be learned from.
     * v0.2.0 - ``info_key``; ``step`` before ``reset`` raises ``ResetNeeded``.
     * v0.1.0 - Initially added.
    """

    def __init__(self, env: gym.Env, pool: ExperiencePool | PoolConfig | Mapping[str, Any] | str, *,
                 top_k: int | None = None,
                 threshold: float | None = None, enabled: bool = True, filter_env: bool = True,
                 max_chars: int = 4000, summarizer: Summarizer | None = None, continual: bool = True,
                 summary_batch: int = 1, count_uses: bool = True,
                 train_splits: Sequence[str] = LEARN_SPLITS, info_key: str = "experience") -> None:
        # Arguments first: a pool this wrapper opens is never left open by a bad argument.
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be a positive int or None, got {top_k!r}")
        if threshold is not None and not -1.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must lie in [-1, 1] or be None, got {threshold!r}")
        if not isinstance(max_chars, int) or max_chars < 100:
            raise ValueError(f"max_chars must be an int >= 100, got {max_chars!r}")
        if not isinstance(continual, bool):
            raise ValueError(f"continual must be True or False, got {continual!r}")
        if continual and summarizer is None:
            from .summarize_offline import OfflineSummarizer

            summarizer = OfflineSummarizer()
        if summarizer is not None and not isinstance(summarizer, Summarizer):
            raise TypeError(f"summarizer must have summarize(trajectories), got {type(summarizer).__name__}")
        if not isinstance(summary_batch, int) or summary_batch < 1:
            raise ValueError(f"summary_batch must be a positive int, got {summary_batch!r}")
        if isinstance(train_splits, str) or not train_splits:
            raise ValueError(f"train_splits must be a non-empty sequence of split names, got {train_splits!r}")
        if not isinstance(info_key, str) or not info_key:
            raise ValueError(f"info_key must be a non-empty string, got {info_key!r}")
        self._owns_pool = not isinstance(pool, ExperiencePool)
        pool = _open_pool(pool)
        gym.utils.RecordConstructorArgs.__init__(
            self, pool={k: v for k, v in asdict(pool.config).items() if k != "token"},
            top_k=top_k, threshold=threshold, enabled=enabled, filter_env=filter_env,
            max_chars=max_chars, continual=continual, summary_batch=summary_batch, count_uses=count_uses,
            train_splits=tuple(train_splits), info_key=info_key)
        gym.Wrapper.__init__(self, env)
        self.pool, self.top_k, self.threshold = pool, top_k, threshold
        self.enabled, self.filter_env, self.max_chars = bool(enabled), bool(filter_env), max_chars
        self.summarizer, self.continual, self.summary_batch = summarizer, bool(continual), summary_batch
        self.count_uses, self.train_splits, self.info_key = bool(count_uses), tuple(train_splits), info_key
        inner = env.observation_space
        if isinstance(inner, UnicodeText):
            # The first observation grows by the block: widen the space so it stays a member.
            self.observation_space = UnicodeText(inner.max_length + max_chars, examples=inner.examples)
        self._payload = ExperiencePayload(enabled=self.enabled)
        # The stored episode shows the observation without experience: no feedback loop.
        self._recorder = TrajectoryRecorder(exclude=(info_key,), keep_info=self.continual)
        self._buffers: dict[str, list[Trajectory]] = {}
        self.last_added_ids: list[str] = []
        self.skipped: dict[str, int] = {}

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
        self.last_added_ids = []
        payload = ExperiencePayload(enabled=enabled)
        if enabled:
            instruction = info.get("instruction") or (task or {}).get("instruction") or ""
            env_id = (task or {}).get("env_id") or (self.env.spec.id if self.env.spec else None)
            hits = self.retrieve(instruction, env_id)
            block, used = _format([h.experience for h in hits], self.max_chars)
            if block:
                payload = ExperiencePayload(True, [h.experience.id for h in hits[:used]], block, [0, len(block)])
                obs = block + obs
        self._payload = payload
        if isinstance(task, dict):
            self._recorder.start(payload.strip(obs), info, task=Task.from_dict(task))
        else:
            self._recorder.trajectory = None
            if self.continual:
                self._skip("no task", f"the env reports no info['task'] on reset "
                                      f"({type(self.env.unwrapped).__name__}), so episodes cannot be summarised")
        self._reset_done = True
        info[self.info_key] = payload.to_info()
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not getattr(self, "_reset_done", False):
            raise gym.error.ResetNeeded("ExperienceContext: call reset() before step()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        info[self.info_key] = self._payload.to_info()
        if self._recorder.active:
            self._recorder.record(action, obs, float(reward), info)
            if terminated or truncated:
                self._finish(self._recorder.finish(terminated, truncated, info))
        if terminated or truncated:
            self._reset_done = False
        return obs, reward, terminated, truncated, info

    def _skip(self, reason: str, why: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if self.skipped[reason] == 1:
            warnings.warn(f"ExperienceContext learns nothing from this episode: {why}", RuntimeWarning, stacklevel=3)

    def _finish(self, traj: Trajectory) -> None:
        if not is_training_task(traj.task, self.train_splits):
            # the split guard: dev/test episodes never touch the pool
            if self.continual:
                split = traj.task.split
                self._skip(f"split {split}", f"its task's split {split!r} is not a training split "
                                             f"(train_splits={list(self.train_splits)}); held-out episodes never "
                                             f"enter the pool")
            return
        if self.count_uses and self._payload.ids:
            self.pool.record_use(self._payload.ids, won=traj.success)
        if not self.continual or self.summarizer is None:
            return
        group = self._buffers.setdefault(traj.task.task_id, [])
        group.append(traj)
        if len(group) >= self.summary_batch:
            del self._buffers[traj.task.task_id]
            self.last_added_ids = summarize_into_pool(self.pool, self.summarizer, group, self.train_splits)

    def close(self) -> None:
        super().close()
        if self._owns_pool:
            self.pool.close()
