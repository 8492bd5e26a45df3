"""The league as a training mechanism: past checkpoints of the policy play the opponents' seats.

* ``LeagueConfig`` - its settings (the one home of each; flat ``league_*`` options of ``evolver train``).
* ``League`` - the complete checkpoints of the run (``<output_dir>/checkpoint-N`` with its completion
  record, written every ``save_steps``), the draw of a training game's opponents, and team Elo over the
  games seen (the policy, one entry per opponent spec).
* ``attach`` - no environment layer; the hooks: ``reset_options`` asks a share ``league_share`` of
  the training games (whole GRPO groups, so a group's games stay comparable) for the opponents
  ``checkpoint:<path>`` of one of the ``league_size`` newest checkpoints; ``episode_metrics`` updates
  Elo from each finished game, logged as ``elo/<name>`` (TensorBoard, with the trainer's metrics).
* ``MECHANISM`` - the registry entry (name ``league``).

Reads: the final ``info`` of each episode of a multi-seat environment (``opponents``, ``game``,
``side``, ``success``; ``arena.avalon.seats``). Writes: ``options["opponents"]`` at reset.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from evolver_gym.core.seeding import make_random
from evolver_gym.core.stats import team_elo

from ..plugin import Attachment, Mechanism, RowContext, RunContext, TrainingHooks

__all__ = ["LeagueConfig", "League", "attach", "MECHANISM"]

# The file evolver_train.checkpoints writes into a checkpoint folder once every file of it is saved.
COMPLETE = "checkpoint_complete.json"
_STEP = re.compile(r"checkpoint-(\d+)$")


@dataclass
class LeagueConfig:
    """Settings of the league (past checkpoints of the policy as opponents)."""

    _argument_group_name = "league (wrappers: league; multi-seat environments)"

    league_share: float = field(default=0.3, metadata={
        "help": "Share of training GRPO groups whose opponents are a past checkpoint of the policy (once one "
                "is saved: save_steps sets how often); the others keep the environment's opponents."})
    league_size: int = field(default=3, metadata={"help": "The newest complete checkpoints drawn from."})
    league_elo_k: float = field(default=16.0, metadata={"help": "Elo K factor of the ratings logged as elo/*."})

    def __post_init__(self) -> None:
        if not 0.0 <= self.league_share <= 1.0:
            raise ValueError(f"league_share must be in [0, 1], got {self.league_share!r}")
        if not isinstance(self.league_size, int) or self.league_size < 1:
            raise ValueError(f"league_size must be a positive int, got {self.league_size!r}")
        if not self.league_elo_k > 0:
            raise ValueError(f"league_elo_k must be > 0, got {self.league_elo_k!r}")


class League:
    """Checkpoints to draw opponents from, and Elo of the policy and every opponent it met.

    Example:
        >>> league = League(LeagueConfig(league_share=1.0), output_dir="/nonexistent")
        >>> league.opponents(RowContext("train", 1, 0, 0, 4, 0))   # no checkpoint yet
        {}
        >>> league.record([{"game": "g1", "side": "good", "success": True, "opponents": "rule"}])
        >>> round(league.ratings["policy"] - league.ratings["rule"], 1)
        16.0
    """

    def __init__(self, config: LeagueConfig, output_dir: str) -> None:
        self.config, self.output_dir = config, output_dir
        self.ratings: dict[str, float] = {}
        self.games = 0

    def checkpoints(self) -> list[str]:
        """The ``league_size`` newest complete checkpoint folders of the run, oldest first."""
        try:
            names = os.listdir(self.output_dir)
        except OSError:
            return []
        found = []
        for name in names:
            m = _STEP.match(name)
            if m and os.path.exists(os.path.join(self.output_dir, name, COMPLETE)):
                found.append((int(m.group(1)), os.path.join(self.output_dir, name)))
        return [path for _, path in sorted(found)[-self.config.league_size:]]

    def opponents(self, row: RowContext) -> dict[str, Any]:
        """``{"opponents": "checkpoint:<path>"}`` for a share of training groups, else ``{}``."""
        if row.mode != "train" or self.config.league_share <= 0:
            return {}
        rng = make_random(row.seed, "league", row.step, row.group)  # the same for every row of the group
        if rng.random() >= self.config.league_share:
            return {}
        pool = self.checkpoints()
        return {"opponents": f"checkpoint:{rng.choice(pool)}"} if pool else {}

    @staticmethod
    def name_of(spec: str) -> str:
        """The rating name of an opponent spec (a checkpoint by its folder name)."""
        return os.path.basename(spec[len("checkpoint:"):].rstrip("/")) if spec.startswith("checkpoint:") else spec

    def record(self, final_infos: list[dict[str, Any]]) -> None:
        """Update Elo from finished games (one entry per game, whatever its number of learning seats)."""
        seen: dict[str, dict[str, Any]] = {}
        for info in final_infos:
            if "success" in info and info.get("opponents") and info.get("opponents") != "self":
                seen.setdefault(str(info.get("game", id(info))), info)
        matches = [(["policy"], [self.name_of(str(i["opponents"]))], 1.0 if i["success"] else 0.0)
                   for i in seen.values()]
        self.ratings = team_elo(matches, k=self.config.league_elo_k, ratings=self.ratings)
        self.games += len(matches)

    def metrics(self) -> dict[str, float]:
        return {f"elo/{name}": round(r, 1) for name, r in self.ratings.items()}

    def state_dict(self) -> dict[str, Any]:
        return {"ratings": dict(self.ratings), "games": self.games}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ratings = {str(k): float(v) for k, v in state.get("ratings", {}).items()}
        self.games = int(state.get("games", 0))


def attach(config: LeagueConfig, run: RunContext) -> Attachment:
    """The league of the run's own checkpoints; hooks only (no environment layer)."""
    league = League(config, run.output_dir)

    def episode_metrics(episodes: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, float]:
        league.record([final for _, final in episodes])
        return league.metrics()

    hooks = TrainingHooks(name="league", reset_options=league.opponents, episode_metrics=episode_metrics,
                          progress={"elo/policy": "elo"}, stateful={"league": league})
    return Attachment(layer=None, hooks=hooks, services={"league": league})


MECHANISM = Mechanism("league", LeagueConfig, attach)
