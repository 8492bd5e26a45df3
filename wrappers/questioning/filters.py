"""Filters that candidate tasks pass before they enter the pool, cheapest first.

* ``LexicalDedup`` - token Jaccard >= 0.8 with a known or earlier candidate (AgentEvolver's rule),
  and exact same goal for environment-checked tasks.
* ``EmbeddingDedup`` - cosine similarity of sentence embeddings >= threshold.
* ``LeakageGuard`` - rejects a candidate near any dev/test task: lexically, by embedding, by goal, or
  by target through the environment's leakage interface (same target, a reference that solves the
  other task, or a unit the split holds out whole).
* ``CompleteTargets`` - rejects a task that leaves a choice open (a WebShop hindsight task bought
  without choosing every option its product offers: any value then satisfies it).
* ``Feasibility`` - replays the reference in a freshly reset env: the env's own success check,
  or the reference judge for tasks the env cannot check.
* ``DifficultyEstimate`` - pass rate of the current policy over ``k`` tries; can reject tasks outside
  a pass-rate range.
* ``replay`` - play a fixed action list on a task and return the trajectory.

Every filter has a ``name`` and ``check(candidates) -> list[str | None]`` (``None`` = accepted,
else a short reason used as the report key). Dedup filters remember a candidate only when
``admit(candidate)`` is called, i.e. once it passed *all* filters, so a rejected task never blocks
a later near-duplicate that is feasible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evolver_gym.core import Task, Trajectory, make_rng, record_episode
from evolver_gym.core.llm import LLMError

from .judge import ReferenceJudge, needs_judge
from .proposers import Candidate
from .text import Embedder, JaccardIndex, goal_key

__all__ = ["CompleteTargets", "DifficultyEstimate", "EmbeddingDedup", "Feasibility", "LeakageGuard", "LexicalDedup",
           "replay"]


def _goal_key(task: Task) -> str | None:
    # Judge-graded tasks reuse their parent's goal (it only sets the start state): not comparable.
    return None if needs_judge(task) or not task.goal else goal_key(task.goal)


class LexicalDedup:
    """Rejects a candidate whose instruction has Jaccard >= ``threshold`` with a known one."""

    name = "lexical_dedup"

    def __init__(self, known: Sequence[Task] = (), threshold: float = 0.8):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"LexicalDedup.threshold must be in (0, 1], got {threshold!r}")
        self.threshold = threshold
        self.index = JaccardIndex(threshold, [t.instruction for t in known])
        self.goals = {k for k in map(_goal_key, known) if k is not None}

    def check(self, candidates: Sequence[Candidate]) -> list[str | None]:
        out: list[str | None] = []
        batch = JaccardIndex(self.threshold)
        batch_goals: set[str] = set()
        for c in candidates:
            key = _goal_key(c.task)
            if key is not None and key in self.goals:
                out.append("same goal as a pool task")
            elif key is not None and key in batch_goals:
                out.append("same goal as another candidate")
            elif self.index.most_similar(c.task.instruction) is not None:
                out.append(f"jaccard>={self.threshold} with a pool task")
            elif batch.most_similar(c.task.instruction) is not None:
                out.append(f"jaccard>={self.threshold} with another candidate")
            else:
                out.append(None)
                batch.add(c.task.instruction)
                if key is not None:
                    batch_goals.add(key)
        return out

    def admit(self, c: Candidate) -> None:
        self.index.add(c.task.instruction)
        key = _goal_key(c.task)
        if key is not None:
            self.goals.add(key)


class EmbeddingDedup:
    """Rejects a candidate whose instruction embedding has cosine >= ``threshold`` with a known one."""

    name = "embedding_dedup"

    def __init__(self, embedder: Embedder, known: Sequence[Task] = (), threshold: float = 0.92):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"EmbeddingDedup.threshold must be in (0, 1], got {threshold!r}")
        if not hasattr(embedder, "encode"):
            raise TypeError(f"EmbeddingDedup.embedder must have encode(texts), got {type(embedder)}")
        self.embedder = embedder
        self.threshold = threshold
        self.vectors = embedder.encode([t.instruction for t in known]) if known else None
        self._pending: dict[str, np.ndarray] = {}

    def check(self, candidates: Sequence[Candidate]) -> list[str | None]:
        if not candidates:
            return []
        vecs = self.embedder.encode([c.task.instruction for c in candidates])
        sims_known = (vecs @ self.vectors.T).max(axis=1) if self.vectors is not None and len(self.vectors) else None
        out: list[str | None] = []
        kept: list[np.ndarray] = []
        for i, c in enumerate(candidates):
            if sims_known is not None and sims_known[i] >= self.threshold:
                out.append(f"cosine>={self.threshold} with a pool task")
            elif kept and float(np.max(np.stack(kept) @ vecs[i])) >= self.threshold:
                out.append(f"cosine>={self.threshold} with another candidate")
            else:
                out.append(None)
                kept.append(vecs[i])
                self._pending[c.task.task_id] = vecs[i]
        return out

    def admit(self, c: Candidate) -> None:
        v = self._pending.pop(c.task.task_id, None)
        if v is None:
            v = self.embedder.encode([c.task.instruction])[0]
        self.vectors = v[None, :] if self.vectors is None else np.vstack([self.vectors, v[None, :]])


class LeakageGuard:
    """Rejects a candidate near any protected (dev/test) task.

    Near means: instruction Jaccard >= ``jaccard_threshold``, or embedding cosine >=
    ``cosine_threshold`` (when an embedder is given), or the very same goal. With ``env``, also by
    target, through the unwrapped environment's leakage interface (each method optional):

    * ``target_key(task)`` - what the task asks for, however its goal is written; equal keys are the
      same target (WebShop: product and option values; AppWorld: start state and checked state);
    * ``solves(solver, task)`` - whether ``solver``'s reference achieves ``task``: a candidate whose
      reference solves a protected task is refused (with ``solved_by_protected=True``, also one that a
      protected task's reference solves: a weaker version of a protected task; off by default, since
      in WebShop's lenient reward a dev reference solves most hindsight tasks, see docs/splits.md);
    * ``target_buckets(task, as_solver)`` - keys that ``solves(a, b)`` needs ``a`` (as solver) and ``b``
      (as task) to share (``"*"`` matches any); without it every protected task is tried;
    * ``split_unit(task)`` - what the env's split scheme holds out whole (WebShop's product or
      category split): a candidate in a held-out unit is refused.

    Judge-graded candidates carry their parent's goal, so only their reference is compared.
    ``solves=False`` keeps the key checks (target, unit) and skips ``solves`` (costly where each call
    replays a reference, as on AppWorld).

    Example:
        >>> from evolver_gym.webshop import WebShopEnv
        >>> env = WebShopEnv(num_products=200, goals="synthetic")
        >>> dev = env.tasks("dev")[0]
        >>> copy = dev.derive(instruction="a new wording", goal=dict(dev.goal), reference=dev.reference, proposer="x")
        >>> copy.goal["goal_options"] = list(dev.goal["goal_options"].values())  # a hindsight-style goal
        >>> LeakageGuard([dev]).near([copy]), LeakageGuard([dev], env=env).near([copy])
        ([None], ['same target as a dev/test task'])
    """

    name = "leakage_guard"

    def __init__(self, protected: Sequence[Task], *, embedder: Embedder | None = None,
                 jaccard_threshold: float = 0.8, cosine_threshold: float = 0.9, env: Any = None,
                 solves: bool = True, solved_by_protected: bool = False):
        self.solved_by_protected = bool(solved_by_protected)
        self.protected = list(protected)
        self.jaccard_threshold = jaccard_threshold
        self.cosine_threshold = cosine_threshold
        self.index = JaccardIndex(jaccard_threshold, [t.instruction for t in self.protected])
        self.goals = {k for k in map(_goal_key, self.protected) if k is not None}
        self.embedder = embedder
        self.vectors = embedder.encode([t.instruction for t in self.protected]) if embedder and self.protected else None
        self.env = getattr(env, "unwrapped", env)
        self._target_key = getattr(self.env, "target_key", None)
        self._solves = getattr(self.env, "solves", None) if solves else None
        self._buckets = getattr(self.env, "target_buckets", None)
        self._unit = getattr(self.env, "split_unit", None)
        self.targets = {k for k in map(self._target, self.protected) if k is not None}
        self.units = {u for u in (self._unit(t) for t in self.protected) if u is not None} if self._unit else set()
        # Protected tasks by bucket: as tasks (for candidates' references) and as solvers (reverse check).
        self.by_bucket: dict[bool, dict[str, list[int]]] = {False: {}, True: {}}
        if self._solves is not None:
            for as_solver in (False, True) if self.solved_by_protected else (False,):
                for i, t in enumerate(self.protected):
                    for key in self._keys(t, as_solver):
                        self.by_bucket[as_solver].setdefault(key, []).append(i)

    def _target(self, task: Task) -> str | None:
        return None if self._target_key is None or needs_judge(task) else self._target_key(task)

    def _keys(self, task: Task, as_solver: bool) -> set[str]:
        return set(self._buckets(task, as_solver)) if self._buckets is not None else {"*"}

    def _related(self, task: Task, as_solver: bool) -> list[Task]:
        """Protected tasks that may be solved by ``task``'s reference (``as_solver``) or whose reference
        may solve ``task``: they share a bucket (any, when either side has ``*``)."""
        keys = self._keys(task, as_solver)
        index = self.by_bucket[not as_solver]
        if "*" in keys:
            return self.protected
        found = set(index.get("*", ()))
        for key in keys:
            found.update(index.get(key, ()))
        return [self.protected[i] for i in sorted(found)]

    def _solved(self, task: Task) -> str | None:
        if task.reference and any(self._solves(task, p) for p in self._related(task, True)):
            return "its reference solves a dev/test task"
        if self.solved_by_protected and not needs_judge(task) and any(
                p.reference and self._solves(p, task) for p in self._related(task, False)):
            return "a dev/test task's reference solves it"
        return None

    def near(self, tasks: Sequence[Task]) -> list[str | None]:
        """Why each task is near a protected one (``None`` when it is not)."""
        sims = None
        if self.vectors is not None and len(tasks):
            sims = (self.embedder.encode([t.instruction for t in tasks]) @ self.vectors.T).max(axis=1)
        out: list[str | None] = []
        for i, t in enumerate(tasks):
            key = _goal_key(t)
            target = self._target(t)
            if key is not None and key in self.goals:
                out.append("same goal as a dev/test task")
            elif target is not None and target in self.targets:
                out.append("same target as a dev/test task")
            elif self.units and not needs_judge(t) and self._unit(t) in self.units:
                out.append("in a unit the split holds out")
            elif self.index.most_similar(t.instruction) is not None:
                out.append(f"jaccard>={self.jaccard_threshold} with a dev/test task")
            elif sims is not None and sims[i] >= self.cosine_threshold:
                out.append(f"cosine>={self.cosine_threshold} with a dev/test task")
            else:
                out.append(self._solved(t) if self._solves is not None else None)
        return out

    def check(self, candidates: Sequence[Candidate]) -> list[str | None]:
        return self.near([c.task for c in candidates])


def replay(env: Any, task: Task, actions: Sequence[str], *, max_steps: int | None = None) -> Trajectory:
    """Reset ``env`` on ``task`` (from its seed, reference withheld) and play ``actions`` in order."""
    public = Task.from_dict(task.public())
    remaining = iter(list(actions)[: max_steps or len(actions)])
    return record_episode(env, lambda obs, info: next(remaining), seed=public.seed,
                          options={"task": public}, max_steps=len(actions) + 1, task=public)


class CompleteTargets:
    """Rejects a candidate whose task leaves a choice open (``task.metadata["open_choices"]``).

    A WebShop purchase made without choosing every option of its product becomes, by hindsight, a
    task that any option value satisfies; dataset goals pin every option, so a pool of such tasks
    teaches a policy to buy without choosing. Tasks that do not record ``open_choices`` pass.

    Example:
        >>> from evolver_gym.core import Task
        >>> c = Candidate(Task(task_id="t", env_id="e", instruction="red mug",
        ...                    metadata={"open_choices": ["size"]}), proposer="hindsight")
        >>> CompleteTargets().check([c])
        ['leaves a choice open: size']
    """

    name = "complete_targets"

    def check(self, candidates: Sequence[Candidate]) -> list[str | None]:
        return [f"leaves a choice open: {', '.join(map(str, open_))}"
                if (open_ := c.task.metadata.get("open_choices")) else None for c in candidates]


class Feasibility:
    """Keeps a candidate only if its reference, replayed in a freshly reset env, solves it.

    Environment-checked tasks must end with ``info["success"]``; every replayed action must be valid.
    Judge-graded tasks are replayed and then graded by ``judge`` (rejected when there is none). The
    reference is trimmed to the actions actually played (an episode can end before its last one).
    """

    name = "feasibility"

    def __init__(self, env: Any, judge: ReferenceJudge | None = None):
        self.env = env
        self.judge = judge

    def check(self, candidates: Sequence[Candidate]) -> list[str | None]:
        return [self._one(c) for c in candidates]

    def _one(self, c: Candidate) -> str | None:
        task = c.task
        if not task.reference:
            return "empty reference"
        if needs_judge(task) and self.judge is None:
            return "no judge for a task the env cannot check"
        traj = replay(self.env, task, [str(a) for a in task.reference])
        if any(s.info.get("action_valid") is False for s in traj.steps):
            return "reference has an invalid action"
        if needs_judge(task):
            try:
                result = self.judge.score(task, traj)
            except LLMError as exc:
                return f"judge error ({exc.kind})"
            if not result.success:
                return "judge: reference replay does not achieve the task"
            c.notes["feasibility_judge_score"] = result.score
        elif not traj.success:
            return ("reference replay fails the env check" if traj.terminated or traj.truncated
                    else "reference does not finish the episode")
        task.reference = traj.actions
        return None


class DifficultyEstimate:
    """Pass rate of the current policy over ``k`` tries of each candidate.

    Args:
        env: Environment to play in.
        policy_factory: ``policy_factory(task, rng) -> policy(obs, info) -> action``; a fresh policy
            per try, with its own seeded generator.
        k: Tries per task.
        judge: Grades judge-graded tasks (without it their pass rate is left unknown).
        pass_range: Accept only tasks whose pass rate lies in ``[low, high]``.
        max_steps: Step cap per try.
    """

    name = "difficulty"

    def __init__(self, env: Any, policy_factory: Callable[[Task, np.random.Generator], Callable[[str, dict], str]],
                 *, k: int = 4, judge: ReferenceJudge | None = None, pass_range: tuple[float, float] = (0.0, 1.0),
                 max_steps: int = 30, seed: int = 0):
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"DifficultyEstimate.k must be a positive int, got {k!r}")
        lo, hi = pass_range
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"DifficultyEstimate.pass_range must satisfy 0 <= low <= high <= 1, got {pass_range!r}")
        self.env, self.policy_factory, self.k, self.judge = env, policy_factory, k, judge
        self.pass_range, self.max_steps, self.seed = (float(lo), float(hi)), max_steps, seed

    def outcomes(self, task: Task) -> list[float] | None:
        """The ``k`` outcomes (1.0/0.0, or the judge's score) of the policy on ``task``."""
        if needs_judge(task) and self.judge is None:
            return None
        public = Task.from_dict(task.public())
        out = []
        for i in range(self.k):
            policy = self.policy_factory(public, make_rng(self.seed, "difficulty", task.task_id, i))
            traj = record_episode(self.env, policy, seed=task.seed, options={"task": public},
                                  max_steps=self.max_steps, task=public)
            if needs_judge(task):
                try:
                    out.append(float(self.judge.score(task, traj).success))
                except LLMError:
                    return None
            else:
                out.append(float(traj.success))
        return out

    def check(self, candidates: Sequence[Candidate]) -> list[str | None]:
        verdicts: list[str | None] = []
        for c in candidates:
            outcomes = self.outcomes(c.task)
            c.notes["difficulty_outcomes"] = outcomes
            if outcomes is None:
                verdicts.append(None)
                continue
            rate = sum(outcomes) / len(outcomes)
            c.task.difficulty = 1.0 - rate
            lo, hi = self.pass_range
            verdicts.append(None if lo <= rate <= hi else f"pass rate outside [{lo}, {hi}]")
        return verdicts

