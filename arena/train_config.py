"""The options of ``evolver arena train``, importable without torch (the command line is built from them).

* ``ArenaTrainConfig`` - every option, validated; also readable from a YAML file with the same keys.
* ``SIDES`` - the two sides a learning policy can play.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .avalon.rules import AvalonConfig

__all__ = ["SIDES", "ArenaTrainConfig"]

SIDES = ("good", "evil")


@dataclass
class ArenaTrainConfig:
    """Options of ``evolver arena train`` (also readable from a YAML file with the same keys)."""

    num_players: int = field(default=5, metadata={"help": "players per game, 5-10"})
    discussion_rounds: int = field(default=0, metadata={"help": "speech rounds before each proposal"})
    learn_sides: tuple[str, ...] = field(
        default=("good", "evil"), metadata={"help": "sides the learning policy plays (one drawn per deal)"}
    )
    steps: int = field(default=60, metadata={"help": "gradient steps"})
    deals_per_step: int = field(default=8, metadata={"help": "GRPO groups (deals) per step"})
    group_size: int = field(default=8, metadata={"help": "G: rollouts of the learning seats per deal"})
    learning_rate: float = field(default=1e-3, metadata={"help": "Adam learning rate"})
    entropy_coef: float = field(default=0.02, metadata={"help": "entropy bonus weight"})
    learn_side_weights: tuple[float, ...] | None = field(
        default=None, metadata={"help": "draw weights of learn_sides (None: equal)"}
    )
    hidden_size: int = field(default=128, metadata={"help": "policy MLP width"})
    derived_inputs: bool = field(
        default=True,
        metadata={"help": "policy also reads inputs derived from the seat's view (per-player record, belief)"},
    )
    separate_sides: bool = field(default=True, metadata={"help": "separate networks for good and evil seats"})
    opponent_mix: dict[str, float] = field(
        default_factory=lambda: {"self": 0.3, "league": 0.3, "rule": 0.3, "random": 0.1},
        metadata={"help": "weights of the opposing side's kind: self (learns too), league, rule, random, llm"},
    )
    llm_seats: tuple[str, ...] = field(
        default=(), metadata={"help": "LLM entrants 'llm:<model>@<base_url>' in the league (kind 'llm')"}
    )
    step_credit_weight: float = field(default=0.1, metadata={"help": "weight of the per-decision credit"})
    llm_judge: str | None = field(
        default=None,
        metadata={"help": "'<model>@<base_url>': an LLM judge labels the decisions no rule can judge"},
    )
    llm_judge_options: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "LLMConfig overrides of the judge's client, e.g. {timeout: 600, max_tokens: 256}"},
    )
    llm_judge_max_chars: int = field(default=2000, metadata={"help": "judge prompt: characters kept per step"})
    snapshot_every: int = field(default=10, metadata={"help": "steps between league checkpoints (and Elo)"})
    elo_games: int = field(default=40, metadata={"help": "games of a new checkpoint against each league member"})
    eval_games: int = field(default=500, metadata={"help": "games per pairing in the final evaluation"})
    seed: int = field(default=0, metadata={"help": "seed of deals, sampling and initial weights"})
    torch_threads: int = field(default=1, metadata={"help": "torch CPU threads (small matrices: 1 is fastest)"})
    output_dir: str | None = field(default="runs/arena", metadata={"help": "report, weights, TensorBoard logs"})

    def __post_init__(self) -> None:
        AvalonConfig(self.num_players, discussion_rounds=self.discussion_rounds)  # validates both
        self.learn_sides = tuple(self.learn_sides)
        bad = [s for s in self.learn_sides if s not in SIDES]
        if bad or not self.learn_sides:
            raise ValueError(f"learn_sides must be a non-empty subset of {SIDES}, got {self.learn_sides!r}")
        if self.learn_side_weights is not None:
            self.learn_side_weights = tuple(self.learn_side_weights)
            w = self.learn_side_weights
            if len(w) != len(self.learn_sides) or not all(x >= 0 for x in w) or sum(w) <= 0:
                raise ValueError(
                    f"learn_side_weights needs one weight >= 0 per learn_sides entry, got {self.learn_side_weights!r}"
                )
        kinds = {"self", "league", "rule", "random", "llm"}
        bad = [k for k, w in self.opponent_mix.items() if k not in kinds or not w >= 0]
        if bad or sum(self.opponent_mix.values()) <= 0:
            raise ValueError(f"opponent_mix needs weights >= 0 for {sorted(kinds)}, got {self.opponent_mix!r}")
        if self.llm_judge is not None and not (isinstance(self.llm_judge, str) and self.llm_judge.partition("@")[0]):
            raise ValueError(f"llm_judge must be '<model>@<base_url>', got {self.llm_judge!r}")
        if self.opponent_mix.get("llm", 0) > 0 and not self.llm_seats:
            raise ValueError("opponent_mix draws 'llm' opponents but llm_seats is empty")
        for name in ("steps", "deals_per_step", "group_size", "hidden_size", "snapshot_every", "torch_threads"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")
        for name in ("elo_games", "eval_games"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"{name} must be a non-negative int, got {getattr(self, name)!r}")
        for name in ("derived_inputs", "separate_sides"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.llm_judge_options, dict):
            raise ValueError(f"llm_judge_options must be a mapping of LLMConfig keys, got {self.llm_judge_options!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")

    @property
    def rules(self) -> AvalonConfig:
        return AvalonConfig(self.num_players, discussion_rounds=self.discussion_rounds)
