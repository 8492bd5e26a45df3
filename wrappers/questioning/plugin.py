"""Self-questioning as a training mechanism: its settings, and what it adds to a run.

* ``QuestioningConfig`` - every setting of the mechanism (the one home of each; flat ``questioning_*``
  options of ``evolver train``).
* ``QuestioningPayload`` - the typed ``info["questioning"]`` record.
* ``attach`` - a task pool seeded with the training tasks (and ``questioning_import``'s), the
  ``SelfQuestioning`` layer and the
  trainer hooks: the task sampler for dataset slots, a synthesis cycle every
  ``questioning_interval`` steps, and the task pool's checkpoint state.
* ``MECHANISM`` - the registry entry (name ``questioning``).

Metrics: ``tasks/synthetic_rate`` (share of the step's rollouts on a synthesised task),
``tasks/cut_recorded`` (episodes the trainer cut by its turn cap or token budget, recorded in the
curriculum as failures: the layer never saw them end), and per synthesis cycle ``tasks/cycles``,
``tasks/generated``, ``tasks/accepted``.

Reads: ``info["task"]`` and the outcome (``success``) of each episode. Writes:
``info[questioning_info_key]`` on reset and every step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

from evolver_gym.core import make_rng, read_tasks

from ..plugin import Attachment, Mechanism, RunContext, TrainingHooks, json_mapping

__all__ = ["QuestioningConfig", "QuestioningPayload", "attach", "MECHANISM"]


def _check_fields(values: dict[str, Any], cls: type, name: str) -> None:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{name} has unknown keys {unknown}; {cls.__name__} fields are {sorted(known)}")
    cls(**values)  # the dataclass validates the values


@dataclass
class QuestioningConfig:
    """Settings of self-questioning (a curated task pool, refilled by synthesis cycles)."""

    _argument_group_name = "self-questioning (wrappers: questioning)"

    questioning_pool: str | None = field(default=None, metadata={
        "help": "SQLite file of the task pool; None = <output_dir>/task_pool.sqlite."})
    questioning_interval: int = field(default=0, metadata={
        "help": "Run a self-questioning synthesis cycle every K training steps; 0 = never."})
    questioning_new_tasks: int = field(default=8, metadata={"help": "Tasks asked of each synthesis cycle."})
    questioning_initial_tasks: int = field(default=0, metadata={
        "help": "Synthesise until the pool holds this many synthetic tasks before the first step (resumable); "
                "with task_split none, the pool needs tasks before training starts."})
    questioning_import: str | None = field(default=None, metadata={
        "help": "JSONL of tasks (the tasks.jsonl of `evolver questions synthesize`) added to the pool before the first "
                "step; with `evolver train`, 'warm_start' = the tasks its warm start synthesised "
                "(sft.synthesize_tasks, <output_dir>/sft/questions/tasks.jsonl). None = none."})
    questioning_synthesis: dict | str | None = field(default=None, metadata={
        "help": "SynthesisConfig fields (YAML mapping or JSON), e.g. {\"batch\": 16, \"max_rounds\": 2}; seed, "
                "seed_split and add_seed_tasks come from the run."})
    questioning_curriculum: dict | str | None = field(default=None, metadata={
        "help": "CurriculumConfig fields (YAML mapping or JSON), e.g. {\"band\": [0.2, 0.8]}."})
    questioning_synthetic_share: float | None = field(default=None, metadata={
        "help": "Share of the GRPO groups drawn from synthesised tasks while the pool holds any (the rest from "
                "the human tasks; the curriculum's seed_ratio is 1 minus this). None = one pool, drawn by the "
                "curriculum's weights alone, so a few synthesised tasks among thousands of human ones are "
                "almost never drawn."})
    questioning_info_key: str = field(default="questioning", metadata={"help": "The info key the wrapper writes."})

    def __post_init__(self) -> None:
        from .curriculum import CurriculumConfig
        from .synthesis import SynthesisConfig

        self.questioning_synthesis = json_mapping(self.questioning_synthesis, "questioning_synthesis")
        self.questioning_curriculum = json_mapping(self.questioning_curriculum, "questioning_curriculum")
        _check_fields(self.questioning_synthesis, SynthesisConfig, "questioning_synthesis")
        if "band" in self.questioning_curriculum:
            self.questioning_curriculum["band"] = tuple(self.questioning_curriculum["band"])
        _check_fields(self.questioning_curriculum, CurriculumConfig, "questioning_curriculum")
        if not isinstance(self.questioning_interval, int) or self.questioning_interval < 0:
            raise ValueError(f"questioning_interval must be an int >= 0, got {self.questioning_interval!r}")
        if not isinstance(self.questioning_initial_tasks, int) or self.questioning_initial_tasks < 0:
            raise ValueError(f"questioning_initial_tasks must be an int >= 0, got {self.questioning_initial_tasks!r}")
        if not isinstance(self.questioning_new_tasks, int) or self.questioning_new_tasks < 1:
            raise ValueError(f"questioning_new_tasks must be an int >= 1, got {self.questioning_new_tasks!r}")
        if self.questioning_import is not None and (not isinstance(self.questioning_import, str)
                                                    or not self.questioning_import.strip()):
            raise ValueError(f"questioning_import must be a path or None, got {self.questioning_import!r}")
        share = self.questioning_synthetic_share
        if share is not None:
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
                raise ValueError(f"questioning_synthetic_share must be None or a number in [0, 1], got {share!r}")
            if self.questioning_curriculum.get("seed_ratio") is not None:
                raise ValueError("set questioning_synthetic_share or questioning_curriculum.seed_ratio, not both "
                                 f"(got {share!r} and {self.questioning_curriculum['seed_ratio']!r})")
            self.questioning_synthetic_share = float(share)
        if not self.questioning_info_key:
            raise ValueError(f"questioning_info_key must be a non-empty string, got {self.questioning_info_key!r}")


@dataclass
class QuestioningPayload:
    """``info["questioning"]``: where the episode's task came from.

    Example:
        >>> p = QuestioningPayload.from_info({"questioning": {"origin": "synthetic", "task_id": "t/1"}})
        >>> p.synthetic, p.parent_id
        (True, None)
    """

    origin: str
    task_id: str
    difficulty: float | None = None
    parent_id: str | None = None
    judge: bool = False

    @classmethod
    def from_info(cls, info: dict[str, Any], key: str = "questioning") -> QuestioningPayload | None:
        """The payload under ``info[key]``, or ``None`` when the wrapper did not write one."""
        raw = info.get(key)
        if not isinstance(raw, dict):
            return None
        return cls(origin=str(raw.get("origin", "seed")), task_id=str(raw.get("task_id", "")),
                   difficulty=raw.get("difficulty"), parent_id=raw.get("parent_id"), judge=bool(raw.get("judge")))

    def to_info(self) -> dict[str, Any]:
        return {"origin": self.origin, "task_id": self.task_id, "difficulty": self.difficulty,
                "parent_id": self.parent_id, "judge": self.judge}

    @property
    def synthetic(self) -> bool:
        return self.origin == "synthetic"


class _TaskPoolState:
    """Checkpoint view of the task pool: the pool lives in its SQLite file; we save where and how big."""

    def __init__(self, pool: Any, sampler_rng: Any):
        self.pool, self.rng = pool, sampler_rng

    def state_dict(self) -> dict[str, Any]:
        return {"path": str(getattr(self.pool, "path", "")), "size": len(self.pool),
                "synthetic": len(self.pool.ids(origin="synthetic", status=None)),
                "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "rng" in state:
            self.rng.bit_generator.state = state["rng"]


def attach(config: QuestioningConfig, run: RunContext) -> Attachment:
    """The task pool (seeded with ``run.train_tasks``), the synthesizer, the layer and the hooks."""
    from .curriculum import Curriculum, CurriculumConfig
    from .pool import TaskPool
    from .synthesis import SynthesisConfig, build_synthesizer
    from .wrapper import SelfQuestioning

    if run.probe is None:
        raise ValueError("the questioning mechanism needs a probe environment to explore")
    path = config.questioning_pool or os.path.join(run.output_dir, "task_pool.sqlite")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    pool = TaskPool(path)
    pool.add_many(run.train_tasks)
    if config.questioning_import:
        # Tasks keep the origin they were written with ("synthetic" for a synthesis's export); ids already
        # in the pool (a resumed run) are left as they are.
        pool.add_many(read_tasks(config.questioning_import, run.env_id, name="questioning_import"))
    curriculum_settings = dict(config.questioning_curriculum)
    if config.questioning_synthetic_share is not None:
        curriculum_settings["seed_ratio"] = 1.0 - config.questioning_synthetic_share
    curriculum_cfg = CurriculumConfig(**curriculum_settings)
    curriculum = Curriculum(pool, curriculum_cfg)
    rng = make_rng(run.seed, "task-sampler")
    synth_cfg = SynthesisConfig(**{"seed": run.seed, "seed_split": run.task_split, "add_seed_tasks": False,
                                   **config.questioning_synthesis})
    # Offline training dedups lexically; embedding dedup would load a sentence embedder per run.
    synthesizer = build_synthesizer(run.probe, pool, synth_cfg, embedder=None)
    if config.questioning_initial_tasks:
        synthesizer.run(config.questioning_initial_tasks)
    if not len(pool):
        raise ValueError(f"the task pool {path} holds no task to train on (task_split {run.task_split!r}): fill it "
                         f"with `evolver questions synthesize --seed-split none --out DIR` and set questioning_pool "
                         f"to DIR/pool.sqlite, or set questioning_initial_tasks")
    key = config.questioning_info_key

    def task_sampler(n: int, seed: int | None) -> list[dict[str, Any]]:
        draw = make_rng(seed, "draw") if seed is not None else rng
        return [pool.get(curriculum.sample(draw)).to_dict() for _ in range(n)]

    def on_step_end(step: int) -> dict[str, float]:
        if not config.questioning_interval or step % config.questioning_interval:
            return {}
        proposed_before = synthesizer.report.get("stages", {}).get("propose", {}).get("in", 0)
        admitted_before = synthesizer.report.get("admitted", 0)
        report = synthesizer.cycle(config.questioning_new_tasks)
        generated = report.get("stages", {}).get("propose", {}).get("in", 0) - proposed_before
        return {"tasks/cycles": 1.0, "tasks/generated": float(generated),
                "tasks/accepted": float(report.get("admitted", 0) - admitted_before)}

    def on_episodes(trajectories: list[Any]) -> dict[str, float]:
        # An episode the trainer cut (turn cap, token budget) never reached the layer's end of episode, so
        # its failure is recorded here; otherwise the curriculum would see only the tasks the policy finishes.
        cut = 0
        for traj in trajectories:
            payload = QuestioningPayload.from_info(traj.metadata.get("reset_info") or {}, key)
            if traj.metadata.get("ended_by", "env") == "env" or payload is None:
                continue
            if payload.task_id in pool:
                curriculum.update(payload.task_id, False)
                cut += 1
        return {"tasks/cut_recorded": float(cut)}

    def episode_metrics(episodes: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, float]:
        payloads = [QuestioningPayload.from_info(reset, key) for reset, _ in episodes]
        return {"tasks/synthetic_rate": sum(bool(p and p.synthetic) for p in payloads) / max(len(payloads), 1)}

    hooks = TrainingHooks(name="questioning", task_sampler=task_sampler, on_episodes=on_episodes,
                          on_step_end=on_step_end,
                          episode_metrics=episode_metrics, progress={"tasks/synthetic_rate": "synth"},
                          stateful={"task_pool": _TaskPoolState(pool, rng)})

    def layer(env: Any) -> Any:
        return SelfQuestioning(env, pool, curriculum_cfg, seed=run.seed, info_key=key)

    return Attachment(layer=layer, hooks=hooks, services={"task_pool": pool, "synthesizer": synthesizer})


MECHANISM = Mechanism("questioning", QuestioningConfig, attach)
