"""The ``SelfQuestioning`` wrapper: episodes drawn from a curated pool of seed and synthetic tasks.

* ``SelfQuestioning`` - on reset without an explicit task, draws a task from a :class:`TaskPool` under
  a :class:`Curriculum`; proposes new tasks itself (a :class:`Synthesizer` cycle) when its pool runs
  dry of unplayed synthetic tasks or on a schedule; scores judge-graded synthetic tasks with a
  :class:`ReferenceJudge`; records each episode's outcome so the curriculum follows the policy.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, make_rng
from evolver_gym.core.llm import ChatClient, LLMError

from ..plugin import TrajectoryRecorder
from .curriculum import Curriculum, CurriculumConfig
from .judge import ReferenceJudge, needs_judge
from .plugin import QuestioningPayload
from .pool import TaskPool
from .synthesis import SynthesisConfig, Synthesizer, build_synthesizer

__all__ = ["SelfQuestioning"]


class SelfQuestioning(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Draws tasks from a curated pool under a curriculum, proposes new ones, and grades what the env cannot check.

    On ``reset`` without ``options["task"]``, ``options["task_id"]`` or ``options["split"]``, a task
    is drawn from ``pool`` by the curriculum (judge-graded tasks only when a judge is configured)
    (seeded: ``reset(seed=s)`` restarts the draw stream
    from ``s``) and handed to the env as ``options={"task": ...}`` with its ``reference`` removed, so
    the reference never reaches the env, its observations or the acting policy. An explicit
    ``task_id`` found in the pool is resolved from the pool; other explicit options pass through.

    Self-proposing (``propose``): before such a draw, the wrapper runs a synthesis cycle (explore the
    env, propose tasks from what happened, filter, admit; :class:`Synthesizer`) asking for
    ``propose_tasks`` new tasks when

    * the pool runs dry: every synthetic task in it has been played at least once (or there is none,
      so the first reset proposes), or
    * ``propose_every`` episodes have finished since the last cycle (``0``: only when dry).

    A cycle that admits nothing is not retried on the dry rule before ``propose_every`` (or 8) more
    episodes. The explorations run on the wrapped env between episodes: wrappers outside this one
    never see them, wrappers inside it see them as ordinary episodes (``ExperienceContext`` below this
    wrapper may learn from an exploration that happens to succeed). ``propose`` defaults to on when the
    wrapper makes its own pool (``pool=None``) and off when a pool is given (``evolver train`` runs its
    cycles on the training schedule).

    A synthetic task whose goal the env cannot check (``metadata["grader"] == "judge"``) is scored
    at the end of its episode by the judge against its reference: the last reward becomes the
    judge's score in [0, 1], ``info["success"]``/``info["score"]`` are replaced, the env's own
    breakdown moves to ``info["evaluation"]["env"]``, earlier rewards are 0 and the env's
    ``progress`` (measured against the parent goal) is dropped. When the episode ends, its outcome
    is appended to the task's pass-rate history (``record_outcomes=True``).

    Every ``info`` carries (a :class:`~wrappers.questioning.plugin.QuestioningPayload`)::

        info["questioning"] = {
            "origin": "seed" | "synthetic",
            "task_id": str,
            "difficulty": float | None,   # 1 - current windowed pass rate, else the task's own
            "parent_id": str | None,
            "judge": bool,                # True when the judge, not the env, scores this episode
        }

    After each cycle, ``last_proposal`` holds ``{"episode": int, "admitted": [task ids], "seconds": float,
    "reason": "dry" | "schedule"}`` and ``proposals`` counts the cycles run.

    Args:
        env: The environment (any env following the project's single-agent contract).
        pool: A :class:`TaskPool`, the path of its SQLite file, or ``None``: a pool in memory holding the
            env's ``seed_split`` tasks.
        curriculum: A :class:`CurriculumConfig` (or a ready :class:`Curriculum` on the same pool).
        judge: A :class:`ReferenceJudge` or a ``ChatClient`` to build one; needed for judge tasks.
        propose: Whether the wrapper proposes tasks itself; ``None``: on exactly when ``pool`` is ``None``.
        propose_tasks: Tasks asked of each synthesis cycle.
        propose_every: Also run a cycle every this many finished episodes; ``0``: only when the pool runs dry.
        synthesis: A :class:`SynthesisConfig` for the default pipeline (:func:`build_synthesizer` on the
            wrapped env, model-free, lexical dedup only), or a ready :class:`Synthesizer` on the same pool
            (an LLM explorer or proposer, embeddings...). ``None``: ``SynthesisConfig(batch=16, max_rounds=4,
            seed=seed, seed_split=seed_split, add_seed_tasks=False)``: a cycle explores at most 64 episodes.
        seed_split: The split whose tasks seed a pool the wrapper makes, and its explorations.
        record_outcomes: Append each finished episode's outcome to the pool.
        seed: Seed of the task-draw stream until ``reset(seed=...)`` gives one, and of the synthesis.
        info_key: The ``info`` key written.

    Example:
        >>> import gymnasium as gym, evolver_gym
        >>> env = SelfQuestioning(gym.make("evolver/WebShop-v0", num_products=50), propose_tasks=4)
        >>> obs, info = env.reset(seed=0)           # the empty pool of synthetic tasks: a cycle runs first
        >>> env.proposals, len(env.last_proposal["admitted"]) > 0
        (1, True)
        >>> info["questioning"]["origin"] in ("seed", "synthetic") and info["questioning"]["task_id"] in env.pool
        True

        With a pool of one's own (no proposing unless asked):

        >>> import tempfile
        >>> base = gym.make("evolver/WebShop-v0", num_products=50)
        >>> pool = TaskPool(tempfile.mkdtemp() + "/pool.sqlite")
        >>> pool.add_many(base.unwrapped.tasks("train")[:4])
        4
        >>> env = SelfQuestioning(base, pool)
        >>> obs, info = env.reset(seed=0)
        >>> info["questioning"]["origin"], info["questioning"]["task_id"] in pool, env.proposals
        ('seed', True, 0)

    Change logs:
     * v0.3.0 - ``pool`` optional (a pool of the env's tasks); self-proposing (``propose``,
       ``propose_tasks``, ``propose_every``, ``synthesis``).
     * v0.2.0 - ``QuestioningPayload``; the shared ``TrajectoryRecorder`` for judge-graded episodes.
     * v0.1.0 - Initially added
    """

    def __init__(self, env: gym.Env, pool: TaskPool | str | None = None,
                 curriculum: CurriculumConfig | Curriculum | None = None,
                 judge: ReferenceJudge | ChatClient | None = None, *, propose: bool | None = None,
                 propose_tasks: int = 8, propose_every: int = 0,
                 synthesis: SynthesisConfig | Synthesizer | None = None, seed_split: str = "train",
                 record_outcomes: bool = True, seed: int = 0, info_key: str = "questioning"):
        gym.utils.RecordConstructorArgs.__init__(
            self, pool=pool if isinstance(pool, str) else getattr(pool, "path", None), propose=propose,
            propose_tasks=propose_tasks, propose_every=propose_every, seed_split=seed_split,
            record_outcomes=record_outcomes, seed=seed, info_key=info_key, _disable_deepcopy=True)
        gym.Wrapper.__init__(self, env)
        if propose is not None and not isinstance(propose, bool):
            raise TypeError(f"SelfQuestioning.propose must be True, False or None, got {propose!r}")
        if not isinstance(propose_tasks, int) or isinstance(propose_tasks, bool) or propose_tasks < 1:
            raise ValueError(f"SelfQuestioning.propose_tasks must be a positive int, got {propose_tasks!r}")
        if not isinstance(propose_every, int) or isinstance(propose_every, bool) or propose_every < 0:
            raise ValueError(f"SelfQuestioning.propose_every must be an int >= 0, got {propose_every!r}")
        if synthesis is not None and not isinstance(synthesis, (SynthesisConfig, Synthesizer)):
            raise TypeError(f"SelfQuestioning.synthesis must be a SynthesisConfig, a Synthesizer or None, "
                            f"got {type(synthesis).__name__}: {synthesis!r}")
        if not isinstance(seed_split, str) or not seed_split:
            raise ValueError(f"SelfQuestioning.seed_split must be a non-empty string, got {seed_split!r}")
        own_pool = pool is None
        if own_pool:
            pool = TaskPool(None)
            tasks = getattr(env.unwrapped, "tasks", None)
            if callable(tasks) and seed_split != "none":
                try:
                    pool.add_many(tasks(seed_split))
                except (KeyError, ValueError) as exc:
                    raise ValueError(f"SelfQuestioning.seed_split {seed_split!r}: the env has no such split "
                                     f"({exc})") from None
        elif isinstance(pool, str):
            pool = TaskPool(pool)
        if not isinstance(pool, TaskPool):
            raise TypeError(f"SelfQuestioning.pool must be a TaskPool, a path string or None, "
                            f"got {type(pool)}: {pool!r}")
        if isinstance(curriculum, Curriculum):
            if curriculum.pool is not pool:
                raise ValueError("SelfQuestioning: the curriculum must sample from the same pool")
            self.curriculum = curriculum
        elif curriculum is None or isinstance(curriculum, CurriculumConfig):
            self.curriculum = Curriculum(pool, curriculum)
        else:
            raise TypeError(f"SelfQuestioning.curriculum must be a CurriculumConfig or Curriculum, "
                            f"got {type(curriculum)}")
        if judge is not None and not isinstance(judge, ReferenceJudge):
            if not isinstance(judge, ChatClient):
                raise TypeError(f"SelfQuestioning.judge must be a ReferenceJudge or ChatClient, got {type(judge)}")
            judge = ReferenceJudge(judge)
        if not isinstance(info_key, str) or not info_key:
            raise ValueError(f"SelfQuestioning.info_key must be a non-empty string, got {info_key!r}")
        self.pool, self.judge, self.record_outcomes, self.info_key = pool, judge, bool(record_outcomes), info_key
        self.propose = own_pool if propose is None else propose
        self.propose_tasks, self.propose_every = propose_tasks, propose_every
        self.synthesizer: Synthesizer | None = None
        if self.propose:
            if isinstance(synthesis, Synthesizer):
                if synthesis.pool is not pool:
                    raise ValueError("SelfQuestioning: the synthesizer must add to the wrapper's pool")
                self.synthesizer = synthesis
            else:
                config = synthesis or SynthesisConfig(batch=16, max_rounds=4, seed=int(seed), seed_split=seed_split,
                                                      add_seed_tasks=False)
                try:
                    # Model-free and offline: lexical dedup only (embeddings would load a sentence model).
                    self.synthesizer = build_synthesizer(env, pool, config, embedder=None)
                except ValueError as exc:
                    raise ValueError(f"SelfQuestioning cannot propose tasks for {type(env.unwrapped).__name__}: "
                                     f"{exc}; pass propose=False, or synthesis=<a Synthesizer with an LLM "
                                     f"proposer>") from None
        elif not len(pool):
            raise ValueError(f"SelfQuestioning: the task pool is empty and propose is off: fill the pool, or let "
                             f"the wrapper propose tasks (propose=True); {type(env.unwrapped).__name__} gave no "
                             f"{seed_split!r} task")
        self.proposals = 0
        self.last_proposal: dict[str, Any] | None = None
        self._episodes = 0
        self._last_cycle_episode = 0
        self._retry_after = 0
        self._rng = make_rng(int(seed), "questioning")
        self._task: Task | None = None
        self._in_pool = False
        self._recorder = TrajectoryRecorder(keep_info=False)
        self._q: QuestioningPayload | None = None
        self._excluded: tuple[int, frozenset[str]] = (-1, frozenset())

    # -- proposing -----------------------------------------------------------------------
    def _dry(self) -> bool:
        """No synthetic task in the pool is still unplayed (outcomes of difficulty estimates do not count)."""
        synthetic = self.pool.ids(origin="synthetic")
        if not synthetic:
            return True
        played = {t for t, hist in self.pool.histories(synthetic).items() if hist}
        return played.issuperset(synthetic)

    def _maybe_propose(self) -> None:
        if self.synthesizer is None:
            return
        since = self._episodes - self._last_cycle_episode
        reason = None
        if self.propose_every and since >= self.propose_every:
            reason = "schedule"
        elif self._episodes >= self._retry_after and self._dry():
            reason = "dry"
        if reason is None:
            return
        self.propose_now(reason=reason)

    def propose_now(self, n: int | None = None, *, reason: str = "call") -> list[str]:
        """Run one synthesis cycle now, asking for ``n`` tasks (default ``propose_tasks``); returns the ids
        admitted."""
        if self.synthesizer is None:
            raise RuntimeError("SelfQuestioning was built with propose=False: it has no synthesizer")
        before = set(self.pool.ids(origin="synthetic", status=None))
        began = time.perf_counter()
        self.synthesizer.cycle(self.propose_tasks if n is None else int(n))
        admitted = [t for t in self.pool.ids(origin="synthetic", status=None) if t not in before]
        self.proposals += 1
        self._last_cycle_episode = self._episodes
        if not admitted:
            self._retry_after = self._episodes + (self.propose_every or 8)
            if self.proposals == 1 or reason == "call":
                warnings.warn(f"SelfQuestioning: a synthesis cycle admitted no task (see "
                              f"wrapper.synthesizer.report['stages']); retrying after "
                              f"{self.propose_every or 8} episodes", RuntimeWarning, stacklevel=3)
        self._excluded = (-1, frozenset())
        self.last_proposal = {"episode": self._episodes, "admitted": admitted,
                              "seconds": round(time.perf_counter() - began, 3), "reason": reason}
        return admitted

    # -- reset ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self._rng = make_rng(int(seed), "questioning")
        options = dict(options or {})
        task: Task | None = None
        if "task" in options:
            task = Task.from_dict(options["task"])
        elif "task_id" in options and options["task_id"] in self.pool:
            task = self.pool.get(options.pop("task_id"))
        elif "task_id" not in options and "split" not in options:
            self._maybe_propose()
            task = self.pool.get(self.curriculum.sample(self._rng, self._unjudgeable()))
        if task is not None:
            if needs_judge(task) and self.judge is None:
                raise RuntimeError(f"task {task.task_id!r} is graded by a judge, but SelfQuestioning has no judge")
            options["task"] = Task.from_dict(task.public())  # the reference stays here
        obs, info = self.env.reset(seed=seed, options=options or None)
        if task is None:  # the env chose the task itself (split/index, unknown id)
            task = Task.from_dict(info["task"]) if "task" in info else Task("unknown", "unknown", "")
        self._task, self._in_pool = task, task.task_id in self.pool
        judged = needs_judge(task)
        difficulty = self.curriculum.difficulty(task.task_id) if self._in_pool else None
        self._q = QuestioningPayload(origin=task.origin, task_id=task.task_id,
                                     difficulty=difficulty if difficulty is not None else task.difficulty,
                                     parent_id=task.parent_id, judge=judged)
        self._recorder.trajectory = None
        if judged:
            self._recorder.start(obs, info, task=Task.from_dict(task.public()))
        info = dict(info)
        if judged:
            info.pop("progress", None)
        info[self.info_key] = self._q.to_info()
        return obs, info

    def _unjudgeable(self) -> frozenset[str]:
        """Judge-graded tasks, excluded from draws while there is no judge (cached per pool size)."""
        if self.judge is not None:
            return frozenset()
        n = len(self.pool)
        if self._excluded[0] != n:
            self._excluded = (n, frozenset(t.task_id for t in self.pool.tasks(origin="synthetic") if needs_judge(t)))
        return self._excluded[1]

    # -- step ----------------------------------------------------------------------------
    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._task is None:
            raise gym.error.ResetNeeded("SelfQuestioning: call reset() before step()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        done = bool(terminated or truncated)
        judged = self._recorder.active
        if judged:
            info.pop("progress", None)
            self._recorder.record(action, obs, 0.0, {})
            reward = 0.0
            if done:
                reward, info = self._grade(obs, info)
        info[self.info_key] = self._q.to_info()
        judge_failed = judged and "error" in info.get("evaluation", {})
        if done:
            self._episodes += 1
        if done and self.record_outcomes and self._in_pool and "success" in info and not judge_failed:
            self.curriculum.update(self._task.task_id, bool(info["success"]))
        return obs, float(reward), terminated, truncated, info

    def _grade(self, obs: Any, info: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        assert self._recorder.trajectory is not None and self._task is not None
        traj = self._recorder.trajectory
        self._recorder.trajectory = None
        traj.metadata["final_observation"] = obs
        env_eval = {k: info.pop(k) for k in ("success", "score", "evaluation") if k in info}
        try:
            result = self.judge.score(self._task, traj)
        except LLMError as exc:
            # A failed judge is not a failed episode: the outcome is not recorded, reward is 0.
            info.update(success=False, score=0.0,
                        evaluation={"grader": "judge", "error": f"{exc.kind}: {exc}", "env": env_eval})
            return 0.0, info
        info.update(success=result.success, score=result.score,
                    evaluation={"grader": "judge", "score": result.score, "reason": result.reason, "env": env_eval})
        return result.score, info
