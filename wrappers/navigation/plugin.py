"""Self-navigating as a training mechanism: its settings, and what it adds to a run.

* ``NavigationConfig`` - every setting of the mechanism (the one home of each; flat ``experience_*``
  options of ``evolver train``).
* ``attach`` - the ``ExperienceContext`` layer on a shared ``ExperiencePool`` and the trainer hooks:
  which rollouts of a group get experience, the stripped training prompt with its own clip, and the
  experience summarised from training episodes after every optimiser step.

Metrics: ``exp/requested_rate`` (rows asked to get experience), ``exp/injection_rate`` (rows that got
some), ``exp/stripped_rate``; ``clip_ratio/experience_{low,high,region}_mean`` and ``exp/ratio_mean``,
``exp/ratio_max_deviation`` (the clipped loss on stripped rows); ``exp/added`` (records stored anew),
``exp/merged`` (summaries merged into a stored near-duplicate), ``exp/pool_size`` (records stored when
the rollout retrieved).
* ``MECHANISM`` - the registry entry (name ``navigation``).

Reads: ``info["instruction"]`` and ``info["task"]`` on reset. Writes: ``info[experience_info_key]``
(an :class:`~wrappers.navigation.wrapper.ExperiencePayload`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from evolver_gym.core import make_rng

from ..plugin import Attachment, ClipStats, Mechanism, RowContext, RunContext, TrainingHooks
from .wrapper import TRAIN_SPLITS, ExperiencePayload

__all__ = ["NavigationConfig", "attach", "MECHANISM"]


@dataclass
class NavigationConfig:
    """Settings of self-navigating (experience retrieved, injected, and learned from)."""

    _argument_group_name = "self-navigating (wrappers: navigation)"

    experience_uri: str | None = field(default=None, metadata={
        "help": "Experience pool: a milvus-lite file (ends in .db) or a Milvus server URI; None = "
                "<output_dir>/experience.db."})
    experience_top_k: int | None = field(default=None, metadata={
        "help": "Experiences injected per episode; None = the pool's default (PoolConfig.top_k)."})
    experience_threshold: float | None = field(default=None, metadata={
        "help": "Minimum cosine similarity of a retrieved experience; None = the pool's default."})
    experience_max_chars: int = field(default=4000, metadata={
        "help": "Longest injected experience block in characters (the warm start's blocks use it too)."})
    experience_summarizer_min_score: float = field(default=1.0, metadata={
        "help": "Training episodes scoring below this (and not successful) are not summarised into experience."})
    experience_share: float = field(default=0.0, metadata={
        "help": "eta: share of each group's rollouts that get retrieved experience (AgentEvolver 0.5)."})
    experience_mode: str = field(default="strip", metadata={
        "help": "'keep': train on the context the action was sampled in; 'strip': remove the injected "
                "experience span from the training prompt and use experience_clip_high for those rows."})
    experience_clip_high: float = field(default=0.6, metadata={
        "help": "Upper clip of the ratio for stripped experience rows when A > 0 (AgentEvolver 0.6)."})
    experience_behaviour_ratio: bool = field(default=False, metadata={
        "help": "With experience_mode strip: the ratio of a stripped row is pi(a | prompt without experience) / "
                "pi(a | prompt with experience), the policy that sampled it, clipped at experience_clip_high above "
                "(an off-policy correction); false = AgentEvolver's stripping, where that ratio starts at 1."})
    experience_warmup_tasks: int = field(default=0, metadata={
        "help": "Before the first step, fill an empty pool from the environment oracle's rollouts of the first N "
                "training tasks, summarised offline (`evolver experience build --policy oracle`); 0 = start from "
                "the pool as it is. Training episodes of a new policy rarely succeed, so an empty pool can stay "
                "empty for a whole short run."})
    experience_info_key: str = field(default="experience", metadata={"help": "The info key the wrapper writes."})

    def __post_init__(self) -> None:
        if not isinstance(self.experience_warmup_tasks, int) or self.experience_warmup_tasks < 0:
            raise ValueError(f"experience_warmup_tasks must be an int >= 0, got {self.experience_warmup_tasks!r}")
        if self.experience_top_k is not None and (not isinstance(self.experience_top_k, int)
                                                  or self.experience_top_k < 1):
            raise ValueError(f"experience_top_k must be a positive int or None, got {self.experience_top_k!r}")
        if self.experience_threshold is not None and not -1.0 <= float(self.experience_threshold) <= 1.0:
            raise ValueError(f"experience_threshold must lie in [-1, 1], got {self.experience_threshold!r}")
        if not isinstance(self.experience_max_chars, int) or self.experience_max_chars < 100:
            raise ValueError(f"experience_max_chars must be an int >= 100, got {self.experience_max_chars!r}")
        if not 0.0 <= self.experience_share <= 1.0:
            raise ValueError(f"experience_share must be in [0, 1], got {self.experience_share!r}")
        if self.experience_mode not in ("keep", "strip"):
            raise ValueError(f"experience_mode must be 'keep' or 'strip', got {self.experience_mode!r}")
        if self.experience_clip_high <= 0:
            raise ValueError(f"experience_clip_high must be > 0, got {self.experience_clip_high!r}")
        if not self.experience_info_key:
            raise ValueError(f"experience_info_key must be a non-empty string, got {self.experience_info_key!r}")


class _ExperiencePoolState:
    """Checkpoint view of the experience pool: its URI and the number of records at save time."""

    def __init__(self, pool: Any):
        self.pool = pool
        self.restored: dict[str, Any] = {}

    def state_dict(self) -> dict[str, Any]:
        self.pool.flush()
        return {"uri": self.pool.config.uri, "count": len(self.pool.all())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.restored = dict(state)


def training_hooks(config: NavigationConfig, pool: Any = None, summarizer: Any = None) -> TrainingHooks:
    """The trainer's hooks; without a pool there is no experience sink (the layer is someone else's)."""
    key = config.experience_info_key

    def reset_options(row: RowContext) -> dict[str, Any]:
        if row.mode != "train":
            return {"experience": False}  # evaluation measures the internalised policy (AgentEvolver woexp)
        if config.experience_share <= 0:
            return {"experience": False}
        n_exp = int(config.experience_share * row.group_size)
        chosen = make_rng(row.seed, "experience", row.step, row.group).permutation(row.group_size)[:n_exp]
        return {"experience": bool(row.index in set(chosen.tolist()))}

    def plain_observation(observation: str, info: dict[str, Any]) -> str | None:
        payload = ExperiencePayload.from_info(info, key)
        return payload.strip(observation) if payload is not None and payload.used else None

    def episode_metrics(episodes: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, float]:
        payloads = [ExperiencePayload.from_info(reset, key) for reset, _ in episodes]
        n = max(len(payloads), 1)
        used = sum(bool(p and p.used) for p in payloads)
        return {"exp/requested_rate": sum(bool(p and p.enabled) for p in payloads) / n,
                "exp/injection_rate": used / n,
                "exp/stripped_rate": (used if config.experience_mode == "strip" else 0) / n}

    def clip_metrics(stats: ClipStats) -> dict[str, float]:
        return {"clip_ratio/experience_low_mean": stats.low_rate, "clip_ratio/experience_high_mean": stats.high_rate,
                "clip_ratio/experience_region_mean": stats.region_rate, "exp/ratio_mean": stats.ratio_mean,
                "exp/ratio_max_deviation": stats.max_ratio_deviation}

    strip = config.experience_mode == "strip" and config.experience_share > 0
    progress = {"exp/injection_rate": "exp"}
    if strip:
        progress["clip_ratio/experience_region_mean"] = "exp clip"
    hooks = TrainingHooks(name="navigation", reset_options=reset_options, plain_observation=plain_observation,
                          train_on_plain_observation=strip, clip_high=config.experience_clip_high,
                          behaviour_ratio=strip and config.experience_behaviour_ratio,
                          clip_metrics=clip_metrics, episode_metrics=episode_metrics, progress=progress)
    if pool is not None and summarizer is not None:
        from .wrapper import summarize_into_pool

        def on_episodes(trajectories: list[Any]) -> dict[str, float]:
            # ``add`` returns the id each summary ended up under: a merge returns the stored one. Counting
            # the pool before and after tells new records from merges (a shared server's other writers
            # count as this run's additions).
            before = len(pool)
            ids = summarize_into_pool(pool, summarizer, trajectories, TRAIN_SPLITS)
            size = len(pool)
            return {"exp/added": float(size - before), "exp/merged": float(max(len(ids) - (size - before), 0))}

        def episode_metrics_with_pool(episodes: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, float]:
            # A gauge, so not an on_episodes metric (those are added up over the run).
            return {**episode_metrics(episodes), "exp/pool_size": float(len(pool))}

        hooks.on_episodes = on_episodes
        hooks.episode_metrics = episode_metrics_with_pool
        hooks.stateful["experience_pool"] = _ExperiencePoolState(pool)
    return hooks


def attach(config: NavigationConfig, run: RunContext) -> Attachment:
    """A shared experience pool, the ``ExperienceContext`` layer and the hooks."""
    from .pool import ExperiencePool, PoolConfig
    from .summarize_offline import OfflineSummarizer
    from .wrapper import ExperienceContext

    uri = config.experience_uri or os.path.join(run.output_dir, "experience.db")
    if "://" not in uri:
        os.makedirs(os.path.dirname(os.path.abspath(uri)) or ".", exist_ok=True)
    pool_settings = {"top_k": config.experience_top_k, "threshold": config.experience_threshold}
    pool = ExperiencePool(PoolConfig(uri=uri, **{k: v for k, v in pool_settings.items() if v is not None}))
    summarizer = OfflineSummarizer(min_score=config.experience_summarizer_min_score)
    if config.experience_warmup_tasks and not len(pool):
        if run.probe is None or not callable(getattr(run.probe.unwrapped, "oracle", None)):
            raise ValueError("experience_warmup_tasks needs an environment with an oracle(task) to roll out")
        from .warmup import build_pool, oracle_policy

        # One oracle rollout per task: the oracle is deterministic, more would summarise the same episode.
        build_pool(run.probe, oracle_policy(run.probe), pool, summarizer,
                   tasks=run.train_tasks[: config.experience_warmup_tasks], rollouts_per_task=1, seed=run.seed)
    hooks = training_hooks(config, pool, summarizer)

    def layer(env: Any) -> Any:
        # The trainer picks which rollouts get experience (reset option "experience"); training
        # episodes reach the pool through the hooks, once per optimiser step.
        return ExperienceContext(env, pool, enabled=False, continual=False, max_chars=config.experience_max_chars,
                                 train_splits=TRAIN_SPLITS, info_key=config.experience_info_key)

    return Attachment(layer=layer, hooks=hooks, services={"experience_pool": pool})


MECHANISM = Mechanism("navigation", NavigationConfig, attach)
