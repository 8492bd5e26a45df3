"""The ``SelfQuestioning`` wrapper: episodes drawn from a curated pool of seed and synthetic tasks.

* ``SelfQuestioning`` - on reset without an explicit task, draws a task from a :class:`TaskPool` under
  a :class:`Curriculum`; scores judge-graded synthetic tasks with a :class:`ReferenceJudge`; records
  each episode's outcome so the curriculum follows the policy.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, make_rng
from evolver_gym.core.llm import ChatClient, LLMError

from ..plugin import TrajectoryRecorder
from .curriculum import Curriculum, CurriculumConfig
from .judge import ReferenceJudge, needs_judge
from .plugin import QuestioningPayload
from .pool import TaskPool

__all__ = ["SelfQuestioning"]


class SelfQuestioning(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Draws tasks from a curated pool under a curriculum, and grades what the env cannot check.

    On ``reset`` without ``options["task"]``, ``options["task_id"]`` or ``options["split"]``, a task
    is drawn from ``pool`` by the curriculum (judge-graded tasks only when a judge is configured)
    (seeded: ``reset(seed=s)`` restarts the draw stream
    from ``s``) and handed to the env as ``options={"task": ...}`` with its ``reference`` removed, so
    the reference never reaches the env, its observations or the acting policy. An explicit
    ``task_id`` found in the pool is resolved from the pool; other explicit options pass through.

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

    Args:
        env: The environment (any env following the project's single-agent contract).
        pool: A :class:`TaskPool` or the path of its SQLite file.
        curriculum: A :class:`CurriculumConfig` (or a ready :class:`Curriculum` on the same pool).
        judge: A :class:`ReferenceJudge` or a ``ChatClient`` to build one; needed for judge tasks.
        record_outcomes: Append each finished episode's outcome to the pool.
        seed: Seed of the task-draw stream until ``reset(seed=...)`` gives one.
        info_key: The ``info`` key written.

    Example:
        >>> import tempfile, gymnasium as gym, evolver_gym
        >>> base = gym.make("evolver/WebShop-v0", num_products=50)
        >>> pool = TaskPool(tempfile.mkdtemp() + "/pool.sqlite")
        >>> pool.add_many(base.unwrapped.tasks("train")[:4])
        4
        >>> env = SelfQuestioning(base, pool)
        >>> obs, info = env.reset(seed=0)
        >>> info["questioning"]["origin"], info["questioning"]["task_id"] in pool
        ('seed', True)

    Change logs:
     * v0.2.0 - ``QuestioningPayload``; the shared ``TrajectoryRecorder`` for judge-graded episodes.
     * v0.1.0 - Initially added
    """

    def __init__(self, env: gym.Env, pool: TaskPool | str, curriculum: CurriculumConfig | Curriculum | None = None,
                 judge: ReferenceJudge | ChatClient | None = None, *, record_outcomes: bool = True, seed: int = 0,
                 info_key: str = "questioning"):
        gym.utils.RecordConstructorArgs.__init__(
            self, pool=pool if isinstance(pool, str) else getattr(pool, "path", None), record_outcomes=record_outcomes,
            seed=seed, info_key=info_key, _disable_deepcopy=True)
        gym.Wrapper.__init__(self, env)
        if isinstance(pool, str):
            pool = TaskPool(pool)
        if not isinstance(pool, TaskPool):
            raise TypeError(f"SelfQuestioning.pool must be a TaskPool or a path string, got {type(pool)}: {pool!r}")
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
        self._rng = make_rng(int(seed), "questioning")
        self._task: Task | None = None
        self._in_pool = False
        self._recorder = TrajectoryRecorder(keep_info=False)
        self._q: QuestioningPayload | None = None
        self._excluded: tuple[int, frozenset[str]] = (-1, frozenset())

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
