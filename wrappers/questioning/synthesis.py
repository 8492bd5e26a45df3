"""The synthesis cycle: explore -> propose -> filter -> admit, resumable, with a per-stage report.

* ``SynthesisConfig`` - sizes, thresholds and seeds of a synthesis run.
* ``Synthesizer`` - runs rounds until a target is reached; every round commits its admitted tasks,
  its report counts and its round number in one pool transaction, so a killed run resumes at the
  first unfinished round (rounds are seeded by their index, so the rerun sees the same explorations).
* ``synthesize_into`` - run a synthesizer to a target and write its folder's ``tasks.jsonl`` and
  ``report.json`` (``evolver questions synthesize`` and ``SFTConfig.synthesize_tasks``).
* ``build_synthesizer`` - wires the default pipeline for an environment: random, code or LLM explorer,
  hindsight and/or LLM proposers, lexical dedup, leakage guard, embedding dedup, feasibility,
  optional difficulty estimate.

The trainer calls :meth:`Synthesizer.cycle` every K steps to add tasks to the live pool.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evolver_gym.core import Task
from evolver_gym.core.llm import ChatClient

from .code_explorer import CodeExplorer, is_code_env
from .explorer import Explorer, LLMExplorer, RandomExplorer
from .filters import CompleteTargets, DifficultyEstimate, EmbeddingDedup, Feasibility, LeakageGuard, LexicalDedup
from .judge import ReferenceJudge
from .pool import TaskPool
from .proposers import Candidate, HindsightProposer, LLMProposer
from .text import Embedder, packaged_embedder

__all__ = ["NO_SEED_SPLIT", "STAGES", "SynthesisConfig", "Synthesizer", "build_synthesizer", "synthesize_into"]

NO_SEED_SPLIT = "none"  # seed_split value: explore from goal-free start states, no human task
STAGES = ("explore", "propose", "complete_targets", "lexical_dedup", "leakage_guard", "embedding_dedup",
          "feasibility", "difficulty", "admit")
_META = "synthesis"


@dataclass
class SynthesisConfig:
    """Configuration of a synthesis run (see ``evolver questions synthesize --help``)."""

    batch: int = field(default=32, metadata={"help": "explorations per round"})
    max_rounds: int = field(default=200, metadata={"help": "give up after this many rounds in one call"})
    max_steps: int = field(default=15, metadata={"help": "step cap of one exploration"})
    seed: int = field(default=0, metadata={"help": "base seed of explorations and estimates"})
    seed_split: str = field(default="train", metadata={
        "help": "split whose tasks seed the explorations; 'none' = no human task at all: the environment's "
                "goal-free start states (its exploration_tasks), so tasks come from the profile and exploration"})
    protected_splits: tuple[str, ...] = field(default=("dev", "test"), metadata={"help": "splits kept away"})
    lexical_threshold: float = field(default=0.8, metadata={"help": "Jaccard at/above which tasks are duplicates"})
    embedding_threshold: float | None = field(default=0.92, metadata={"help": "cosine for dedup; None: off"})
    leakage_cosine: float | None = field(default=0.9, metadata={"help": "cosine to a dev/test task; None: off"})
    leakage_targets: str = field(default="auto", metadata={
        "help": "leakage checks through the env's target_key / split_unit / solves: 'all'; 'keys' (same target "
                "and held-out units, no solves); 'off'; 'auto' = 'keys' where the env marks solves as costly "
                "(AppWorld replays a reference per pair; docs/splits.md), else 'all'"})
    add_seed_tasks: bool = field(default=True, metadata={"help": "put the seed split's tasks into the pool"})
    complete_targets: bool = field(default=False, metadata={
        "help": "refuse tasks that leave a choice open (WebShop: a hindsight purchase without every option of "
                "its product chosen, which any option value satisfies; dataset goals pin every option)"})
    fill_open_choices: bool = field(default=False, metadata={
        "help": "hindsight tasks pin every choice the exploration left open, with a value drawn from those on "
                "offer (WebShop: the bought product's unchosen options), instead of leaving it open; no more "
                "rounds needed, unlike complete_targets, which refuses such tasks"})

    def __post_init__(self) -> None:
        for name in ("batch", "max_rounds", "max_steps"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"SynthesisConfig.{name} must be a positive int, got {v!r}")
        if not 0.0 < self.lexical_threshold <= 1.0:
            raise ValueError(f"SynthesisConfig.lexical_threshold must be in (0, 1], got {self.lexical_threshold!r}")
        for name in ("embedding_threshold", "leakage_cosine"):
            v = getattr(self, name)
            if v is not None and not 0.0 < v <= 1.0:
                raise ValueError(f"SynthesisConfig.{name} must be None or in (0, 1], got {v!r}")
        self.protected_splits = tuple(self.protected_splits)
        if self.leakage_targets not in ("auto", "all", "keys", "off"):
            raise ValueError(f"SynthesisConfig.leakage_targets must be 'auto', 'all', 'keys' or 'off', "
                             f"got {self.leakage_targets!r}")


def _empty_report() -> dict[str, Any]:
    return {"stages": {s: {"in": 0, "accepted": 0, "rejected": 0, "reasons": {}} for s in STAGES},
            "rounds": 0, "admitted": 0, "elapsed_s": 0.0}


class Synthesizer:
    """Explore -> propose -> filter -> admit, round by round, resumable from the pool.

    Args:
        pool: Where admitted tasks go (and where progress is checkpointed).
        explorer: Produces trajectories from seed tasks.
        seed_tasks: Start states to explore from.
        proposers: Objects with ``name`` and ``propose(trajectory, existing) -> (candidates, reason)``.
        filters: Objects with ``name``, ``check(candidates)`` and optionally ``admit(candidate)``, in order.
        config: Sizes and seeds.
    """

    def __init__(self, pool: TaskPool, explorer: Explorer, seed_tasks: Sequence[Task], proposers: Sequence[Any],
                 filters: Sequence[Any], config: SynthesisConfig | None = None):
        if not seed_tasks:
            raise ValueError("Synthesizer needs at least one seed task")
        if not proposers:
            raise ValueError("Synthesizer needs at least one proposer")
        self.pool, self.explorer, self.seed_tasks = pool, explorer, list(seed_tasks)
        self.proposers, self.filters = list(proposers), list(filters)
        self.config = config or SynthesisConfig()
        state = pool.get_meta(_META) or {}
        self.round = int(state.get("round", 0))
        self.report = state.get("report") or _empty_report()

    # -- public --------------------------------------------------------------------------
    def run(self, target: int, *, on_round: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Run rounds until the pool holds ``target`` synthetic tasks (or ``max_rounds`` rounds ran)."""
        if not isinstance(target, int) or target < 0:
            raise ValueError(f"target must be a non-negative int, got {target!r}")
        for _ in range(self.config.max_rounds):
            missing = target - len(self.pool.ids(origin="synthetic", status=None))
            if missing <= 0:
                break
            self.run_round(missing)
            if on_round is not None:
                on_round(self.report)
        return self.report

    def cycle(self, n_new: int) -> dict[str, Any]:
        """Add up to ``n_new`` synthetic tasks to the pool (the trainer's every-K-steps call)."""
        return self.run(len(self.pool.ids(origin="synthetic", status=None)) + n_new)

    def run_round(self, limit: int) -> list[str]:
        """One round; admits at most ``limit`` tasks and returns their ids."""
        t0 = time.perf_counter()
        rep = _empty_report()["stages"]
        trajs = self.explorer.explore(self.seed_tasks, self.config.batch, round_index=self.round)
        self._count(rep["explore"], [None if t.steps else t.metadata.get("error", "no steps") for t in trajs])

        candidates: list[Candidate] = []
        verdicts: list[str | None] = []
        children = self._children()  # read once a round: the pool only grows at the round's end
        for traj in trajs:
            if not traj.steps:
                continue
            existing = list(children.get(traj.task.task_id, []))
            existing += [c.task.instruction for c in candidates if c.task.parent_id == traj.task.task_id]
            for proposer in self.proposers:
                cands, why = proposer.propose(traj, existing)
                candidates += cands
                verdicts += [None] * len(cands) if cands else [f"{proposer.name}: {why}"]
        rep["propose"]["in"] = len(trajs) * len(self.proposers)
        for v in verdicts:
            self._tally(rep["propose"], v)

        # AgentEvolver's order: most confident first, so a duplicate keeps its best phrasing.
        candidates.sort(key=lambda c: -(c.confidence if c.confidence is not None else 0.5))
        fresh = [c for c in candidates if c.task.task_id not in self.pool]
        self._count(rep["lexical_dedup"], ["already in pool"] * (len(candidates) - len(fresh)))
        remaining = fresh
        for f in self.filters:
            verdicts = f.check(remaining) if remaining else []
            self._count(rep.setdefault(f.name, {"in": 0, "accepted": 0, "rejected": 0, "reasons": {}}), verdicts)
            kept = []
            for c, v in zip(remaining, verdicts):
                if v is None:
                    c.passed.append(f.name)
                    kept.append(c)
            remaining = kept

        admitted, over = remaining[:max(limit, 0)], remaining[max(limit, 0):]
        self._count(rep["admit"], [None] * len(admitted) + ["target reached"] * len(over))
        with self.pool.transaction():
            for c in admitted:
                self.pool.add(c.task, c.provenance())
                for est in c.notes.get("difficulty_outcomes") or []:
                    self.pool.record_outcome(c.task.task_id, est, source="estimate")
                for f in self.filters:
                    if hasattr(f, "admit"):
                        f.admit(c)
            self.round += 1
            self._merge(rep, time.perf_counter() - t0, len(admitted))
            self.pool.set_meta(_META, {"round": self.round, "report": self.report,
                                       "config": asdict(self.config)})
        return [c.task.task_id for c in admitted]

    # -- helpers -------------------------------------------------------------------------
    def _children(self) -> dict[str, list[str]]:
        """The instructions of the pool's synthetic tasks, by parent task id."""
        out: dict[str, list[str]] = {}
        for t in self.pool.tasks(origin="synthetic", status=None):
            if t.parent_id is not None:
                out.setdefault(t.parent_id, []).append(t.instruction)
        return out

    @staticmethod
    def _tally(stage: dict[str, Any], verdict: str | None) -> None:
        if verdict is None:
            stage["accepted"] += 1
        else:
            stage["rejected"] += 1
            stage["reasons"][verdict] = stage["reasons"].get(verdict, 0) + 1

    def _count(self, stage: dict[str, Any], verdicts: Sequence[str | None]) -> None:
        stage["in"] += len(verdicts)
        for v in verdicts:
            self._tally(stage, v)

    def _merge(self, rep: dict[str, Any], seconds: float, admitted: int) -> None:
        for name, stage in rep.items():
            total = self.report["stages"].setdefault(name, {"in": 0, "accepted": 0, "rejected": 0, "reasons": {}})
            for k in ("in", "accepted", "rejected"):
                total[k] += stage[k]
            for reason, n in stage["reasons"].items():
                total["reasons"][reason] = total["reasons"].get(reason, 0) + n
        self.report["rounds"] += 1
        self.report["admitted"] += admitted
        self.report["elapsed_s"] = round(self.report["elapsed_s"] + seconds, 3)


def _unwrapped(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def _protected_splits(names: Sequence[str], profile: dict[str, Any]) -> list[str]:
    """The env's splits that ``names`` cover: ``"test"`` also covers ``test_normal``, ``test_challenge``."""
    splits = profile.get("splits")
    if not isinstance(splits, (dict, list, tuple)) or not splits:
        return list(names)
    return [s for s in splits if any(s == n or str(s).startswith(f"{n}_") for n in names)]


def build_synthesizer(
    env: Any,
    pool: TaskPool,
    config: SynthesisConfig | None = None,
    *,
    explorer_client: ChatClient | None = None,
    proposer_client: ChatClient | None = None,
    rephrase_client: ChatClient | None = None,
    judge_client: ChatClient | None = None,
    hindsight: bool | None = None,
    embedder: Embedder | str | None = "packaged",
    policy_factory: Callable[[Task, np.random.Generator], Callable[[str, dict], str]] | None = None,
    difficulty_k: int = 4,
    pass_range: tuple[float, float] = (0.0, 1.0),
    max_seed_tasks: int | None = None,
    explorer: str = "auto",
) -> Synthesizer:
    """The default pipeline for ``env``.

    Explorer: the LLM explorer when ``explorer_client`` is given, else the random one. Proposers:
    hindsight (when the env has ``hindsight_task``, unless ``hindsight=False``; phrased by
    ``rephrase_client`` when given) and the LLM proposer when ``proposer_client`` is given. Filters:
    lexical dedup, leakage guard, embedding dedup (``embedder=None`` turns embeddings off),
    feasibility (judge-graded tasks need ``judge_client``), and a difficulty estimate when
    ``policy_factory`` is given. Seed tasks of ``config.seed_split`` go into the pool first; with
    ``seed_split="none"`` the explorations start from the env's goal-free ``exploration_tasks``
    (``max_seed_tasks`` of them, default ``config.batch``), which never enter the pool.
    Without a client, ``explorer`` picks the model-free explorer: ``"random"`` (over the listed
    actions), ``"code"`` (:class:`CodeExplorer`, API calls as Python cells) or ``"auto"`` (code for
    code-as-action envs, else random).
    """
    if explorer not in ("auto", "random", "code"):
        raise ValueError(f"explorer must be 'auto', 'random' or 'code', got {explorer!r}")
    config = config or SynthesisConfig()
    base = _unwrapped(env)
    if config.seed_split == NO_SEED_SPLIT:
        if not callable(getattr(base, "exploration_tasks", None)):
            raise ValueError(f"seed_split {NO_SEED_SPLIT!r} needs an environment with exploration_tasks(n) "
                             f"(goal-free start states); {type(base).__name__} has none")
        seeds = list(base.exploration_tasks(max_seed_tasks or config.batch))
    else:
        seeds = list(base.tasks(config.seed_split))
    if max_seed_tasks is not None:
        seeds = seeds[:max_seed_tasks]
    if config.add_seed_tasks and config.seed_split != NO_SEED_SPLIT:
        pool.add_many(seeds)
    profile = base.profile() if hasattr(base, "profile") else {}
    protected = [t for split in _protected_splits(config.protected_splits, profile) for t in base.tasks(split)]
    if embedder == "packaged":
        embedder = packaged_embedder() if (config.embedding_threshold or config.leakage_cosine) else None
    judge = ReferenceJudge(judge_client) if judge_client is not None else None

    if explorer_client is not None:
        policy: Any = LLMExplorer(explorer_client, profile, action_hint=str(profile.get("action_syntax", "")))
    elif explorer == "code" or (explorer == "auto" and is_code_env(env)):
        policy = CodeExplorer.from_env(env)
    else:
        policy = RandomExplorer(profile, env.action_space)
    explorer = Explorer(env, policy, max_steps=config.max_steps, seed=config.seed)

    proposers: list[Any] = []
    if hindsight is not False and callable(getattr(base, "hindsight_task", None)):
        proposers.append(HindsightProposer(env, rephraser=rephrase_client, fill_open_choices=config.fill_open_choices))
    if proposer_client is not None:
        proposers.append(LLMProposer(proposer_client, profile))
    if not proposers:
        raise ValueError("no proposer: the env has no hindsight_task and no proposer_client was given")

    known = pool.tasks(status=None)
    filters: list[Any] = [CompleteTargets()] if config.complete_targets else []
    filters += [
        LexicalDedup(known, config.lexical_threshold),
        LeakageGuard(protected, embedder=embedder if config.leakage_cosine else None,
                     jaccard_threshold=config.lexical_threshold, cosine_threshold=config.leakage_cosine or 1.0,
                     env=None if config.leakage_targets == "off" else base,
                     solves=config.leakage_targets == "all" or (
                         config.leakage_targets == "auto" and not getattr(base, "solves_is_costly", False))),
    ]
    if embedder is not None and config.embedding_threshold:
        known_synthetic = pool.tasks(origin="synthetic", status=None)
        filters.append(EmbeddingDedup(embedder, known_synthetic, config.embedding_threshold))
    filters.append(Feasibility(env, judge))
    if policy_factory is not None:
        filters.append(DifficultyEstimate(env, policy_factory, k=difficulty_k, judge=judge, pass_range=pass_range,
                                          max_steps=config.max_steps, seed=config.seed))
    return Synthesizer(pool, explorer, seeds, proposers, filters, config)


def synthesize_into(synthesizer: Synthesizer, folder: str | Path, target: int, *,
                    on_round: Callable[[dict[str, Any]], None] | None = None,
                    after: Callable[[], dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    """Run ``synthesizer`` until its pool holds ``target`` synthetic tasks, then write ``folder/tasks.jsonl``
    (the synthetic tasks with provenance) and ``folder/report.json`` (atomically); returns the report.

    The report is the synthesizer's per-stage report plus ``target``, ``synthetic_tasks`` (how many were
    written), ``pool`` (its statistics), ``this_run_s``, the ``extra`` keys and those ``after()`` returns
    once the run is over (e.g. LLM usage).
    """
    folder = Path(folder)
    start = time.perf_counter()
    report = synthesizer.run(target, on_round=on_round)
    n = synthesizer.pool.export_jsonl(folder / "tasks.jsonl", origin="synthetic")
    report = {**report, **extra, "target": target, "synthetic_tasks": n, "pool": synthesizer.pool.stats(),
              "this_run_s": round(time.perf_counter() - start, 3), **(after() if after else {})}
    tmp = folder / "report.json.tmp"
    tmp.write_text(json.dumps(report, indent=2, sort_keys=True))
    tmp.replace(folder / "report.json")
    return report
