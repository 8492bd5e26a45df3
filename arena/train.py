"""Several Avalon seats learning at once from the PettingZoo parallel env (``evolver arena train``).

* ``ArenaTrainConfig`` - every option of a run (a field with help each).
* ``SeatPolicy`` - one policy shared by every learning seat: an MLP over the seat's feature vector
  (its own role, side and night knowledge are in it) plus a learned role embedding, so each role
  gets its own conditioning ("role-specific prompt") in one set of weights; illegal actions masked.
* ``League`` - opponents: past checkpoints of the policy, rule bots, random bots and LLM seats
  (``llm:<model>@<base_url>`` entrants), drawn by a configurable mix.
* ``step_credit`` - the hidden-state rules that judge single decisions.
* ``train`` - the GRPO loop; ``evaluate`` - win rates with Wilson intervals per pairing.

GRPO here: a *group* is one deal (roles, first leader, env seed, opponents and their seeds) played
``group_size`` times; only the learning seats' sampled actions differ. Each learning seat's return
is its team's outcome (+1/-1) plus ``step_credit_weight`` times its step credits (hidden-state
rules where one applies, an LLM judge for the other decisions when ``llm_judge`` is set); the advantage is
that return z-scored over the group for the same seat, and every decision of the seat in that
game gets it (one on-policy gradient step per batch, so no importance ratio is needed).

Elo: every ``snapshot_every`` steps the policy is frozen into the league and plays ``elo_games``
games against every league member (sides alternating); team Elo over all games so far is logged
to TensorBoard (``elo/<name>``) and kept in the report.

Example:
    >>> cfg = ArenaTrainConfig(steps=1, deals_per_step=1, group_size=2, eval_games=0, elo_games=0,
    ...                        output_dir=None)
    >>> report = train(cfg)
    >>> report["steps"], report["league"]
    (1, ['policy@0', 'policy@1', 'rule', 'random'])
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from evolver_gym.core.seeding import derive_seed, make_random
from evolver_gym.core.stats import wilson_interval

from .avalon.actions import ActionCodec
from .avalon.engine import AvalonGame
from .avalon.observation import _layout
from .avalon.parallel import parallel_env
from .avalon.rules import ROLES, AvalonConfig
from .avalon.tournament import elo_ratings, make_entrant

__all__ = [
    "ArenaTrainConfig",
    "SeatPolicy",
    "League",
    "step_credit",
    "train",
    "evaluate",
    "play_group",
    "write_plot",
]

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
    hidden_size: int = field(default=128, metadata={"help": "policy MLP width"})
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
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")

    @property
    def rules(self) -> AvalonConfig:
        return AvalonConfig(self.num_players, discussion_rounds=self.discussion_rounds)


class SeatPolicy(nn.Module):
    """Shared policy: features (+ role embedding) -> masked logits over the flat action code."""

    def __init__(self, num_players: int, hidden_size: int = 128):
        super().__init__()
        self.num_players = num_players
        size = _layout(num_players).size
        self.role_offset = _layout(num_players).start["role"]
        self.role_embedding = nn.Embedding(len(ROLES), hidden_size)
        self.body = nn.Sequential(nn.Linear(size, hidden_size), nn.Tanh())
        self.head = nn.Sequential(
            nn.Linear(hidden_size, hidden_size), nn.Tanh(), nn.Linear(hidden_size, _n_codes(num_players))
        )

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        role = features[:, self.role_offset : self.role_offset + len(ROLES)].argmax(dim=1)
        logits = self.head(self.body(features) + self.role_embedding(role))
        return logits.masked_fill(mask == 0, -1e9)


def _n_codes(n: int) -> int:
    return ActionCodec(n).size


# -- step credit: decisions a rule can judge from the hidden state ------------------------------------
def step_credit(game: AvalonGame, seat: int, code: int) -> float | None:
    """Credit of ``seat`` playing ``code`` now, judged from what the seat itself knows (``None``
    when no rule can judge the decision; the LLM judge may then):

    * -1 for a good seat approving or proposing a team with a player it knows is evil;
    * -1 for a good seat rejecting the fifth proposal of a round when that hands evil the game;
    * -1 for an evil seat approving or proposing a team with no evil player it knows of (itself
      included).
    """
    c = game.codec
    if game.phase == "vote" and code in (c.APPROVE, c.REJECT):
        team = game.team
        if code == c.REJECT:
            fifth = game.rejections == 4 and game.config.hammer == "evil_wins"
            return -1.0 if fifth and not game.is_evil[seat] else None
    elif game.phase == "proposal" and c.TEAM0 <= code < c.APPROVE:
        team = c.decode(code)[1]
    else:
        return None
    known_evil = set(game.knowledge[seat].evil) | {t for t, evil in game.lady_results[seat] if evil}
    if game.is_evil[seat]:
        known_evil.add(seat)
        return -1.0 if not known_evil.intersection(team) else None
    if not known_evil:
        return None  # a seat that knows no evil player cannot be judged by this rule
    return -1.0 if known_evil.intersection(team) else 0.0


# -- opponents -------------------------------------------------------------------------------------
class League:
    """Past checkpoints (frozen ``SeatPolicy`` weights), rule and random bots, LLM seats."""

    def __init__(self, num_players: int, hidden_size: int, llm_seats: tuple[str, ...] = ()):
        self.num_players, self.hidden_size = num_players, hidden_size
        self.checkpoints: dict[str, dict[str, torch.Tensor]] = {}
        self.bots = ["rule", "random"]
        self.llm_seats = list(llm_seats)

    def add(self, name: str, policy: SeatPolicy) -> None:
        self.checkpoints[name] = {k: v.detach().clone() for k, v in policy.state_dict().items()}

    def names(self) -> list[str]:
        return [*self.checkpoints, *self.bots, *self.llm_seats]

    def policy(self, name: str) -> SeatPolicy:
        p = SeatPolicy(self.num_players, self.hidden_size)
        p.load_state_dict(self.checkpoints[name])
        p.eval()
        return p


@dataclass
class _Side:
    """Who plays one side of a game: ``policy`` (a SeatPolicy) or ``bot`` (a player spec)."""

    name: str
    policy: SeatPolicy | None = None
    bot: str | None = None
    learns: bool = False


def play_group(
    rules: AvalonConfig,
    good: _Side,
    evil: _Side,
    *,
    deal_seed: int,
    rollouts: int,
    sample_seed: int,
    credit_weight: float = 0.0,
    judge: Any = None,
) -> list[dict[str, Any]]:
    """Play one deal ``rollouts`` times in the PettingZoo parallel env. Returns one record per game:
    ``winner``, ``roles``, and for learning seats ``decisions`` (features, mask, action),
    ``credit`` and ``returns`` (team outcome + ``credit_weight`` x credit).

    Credit: :func:`step_credit` where a rule judges a decision; the other decisions of a learning
    seat go to ``judge`` when given (an attributor with ``attribute_batch(trajectories)``, e.g.
    ``wrappers.attribution.LLMJudgeAttributor``: one trajectory per seat and game, the seat's text
    observation and the action as each step; GOOD adds +1, BAD -1)."""
    out = []
    for r in range(rollouts):
        env = parallel_env(config=rules)
        obs, _ = env.reset(seed=deal_seed)
        g = env.game
        sides = [evil if g.is_evil[s] else good for s in range(rules.num_players)]
        bots = {}
        for s, side in enumerate(sides):
            if side.bot is not None:
                bots[s] = make_entrant(side.bot)()
                bots[s].reset(s, derive_seed(deal_seed, "opponent", s))  # same bots in every rollout
        gen = torch.Generator().manual_seed(derive_seed(sample_seed, r) % 2**63)
        decisions: dict[int, list] = {s: [] for s, side in enumerate(sides) if side.learns}
        credit = dict.fromkeys(decisions, 0.0)
        unjudged: dict[int, list[tuple[str, str]]] = {s: [] for s in decisions}
        while env.agents:
            pending = g.pending()
            actions = {a: 0 for a in env.agents}
            by_policy: dict[int, list[int]] = {}
            for s in pending:
                if s in bots:
                    text = obs[f"player_{s}"]["text"] if bots[s].needs_text else None
                    actions[f"player_{s}"] = bots[s].act(g.view(s, simultaneous=True), text)
                else:
                    by_policy.setdefault(id(sides[s].policy), []).append(s)
            for seats in by_policy.values():
                policy = sides[seats[0]].policy
                x = torch.from_numpy(np.stack([obs[f"player_{s}"]["observation"] for s in seats]))
                m = torch.from_numpy(np.stack([obs[f"player_{s}"]["action_mask"] for s in seats]))
                with torch.no_grad():
                    logits = policy(x, m)
                codes = torch.multinomial(torch.softmax(logits, dim=1), 1, generator=gen).squeeze(1)
                for i, s in enumerate(seats):
                    code = int(codes[i])
                    actions[f"player_{s}"] = code
                    if s in decisions:
                        decisions[s].append((x[i], m[i], code))
                        judged = step_credit(g, s, code)
                        if judged is not None:
                            credit[s] += judged
                        elif judge is not None:
                            unjudged[s].append((obs[f"player_{s}"]["text"], g.codec.describe(code)))
            obs, rewards, _, _, _ = env.step(actions)
        outcome = {s: (1.0 if (g.winner == "evil") == g.is_evil[s] else -1.0) for s in decisions}
        if judge is not None:
            for s, score in _judge_credit(judge, g, unjudged, outcome, deal_seed).items():
                credit[s] += score
        out.append(
            {
                "winner": g.winner,
                "roles": list(g.roles),
                "lineup": [sides[s].name for s in range(rules.num_players)],
                "decisions": decisions,
                "returns": {s: outcome[s] + credit_weight * credit[s] for s in decisions},
                "credit": credit,
            }
        )
    return out


def _judge_credit(judge: Any, game: AvalonGame, unjudged: dict[int, list[tuple[str, str]]],
                  outcome: dict[int, float], deal_seed: int) -> dict[int, float]:
    """Sum of the judge's step scores per seat (one trajectory per seat, one batched call)."""
    from evolver_gym.core import Step, Task, Trajectory

    seats = [s for s, steps in unjudged.items() if steps]
    trajectories = [
        Trajectory(
            task=Task(f"arena/avalon/{deal_seed}/{s}", "arena/avalon-v0",
                      f"Play Avalon as Player {s} and help your side win."),
            steps=[Step(text, action) for text, action in unjudged[s]],
            success=outcome[s] > 0,
            score=outcome[s],
        )
        for s in seats
    ]  # fmt: skip
    results = judge.attribute_batch(trajectories) if trajectories else []
    return {s: sum(label.score for label in r.labels) for s, r in zip(seats, results, strict=True)}


def _grpo_loss(policy: SeatPolicy, games: list[list[dict[str, Any]]], entropy_coef: float):
    """Policy-gradient loss of a batch of groups; each learning seat's return z-scored in its group."""
    feats, masks, acts, advs = [], [], [], []
    for group in games:
        for seat in group[0]["decisions"]:
            returns = np.array([g["returns"][seat] for g in group])
            std = returns.std()
            if std < 1e-8:
                continue  # every rollout scored the same: no signal for this seat
            adv = (returns - returns.mean()) / std
            for g, a in zip(group, adv, strict=True):
                for x, m, code in g["decisions"][seat]:
                    feats.append(x)
                    masks.append(m)
                    acts.append(code)
                    advs.append(a / max(len(g["decisions"][seat]), 1))
    if not feats:
        return None, 0
    logits = policy(torch.stack(feats), torch.stack(masks))
    logp = torch.log_softmax(logits, dim=1)
    chosen = logp.gather(1, torch.tensor(acts).unsqueeze(1)).squeeze(1)
    probs = logp.exp()
    entropy = -(probs * logp.clamp(min=-30)).sum(dim=1).mean()
    loss = -(torch.tensor(advs, dtype=torch.float32) * chosen).sum() / len(games) - entropy_coef * entropy
    return loss, len(feats)


def _sides_for(kind: str, name: str, league: League, learner: SeatPolicy) -> _Side:
    if kind == "self":
        return _Side("policy", policy=learner, learns=True)
    if kind in ("rule", "random") or kind.startswith("llm:"):
        return _Side(kind, bot=kind)
    return _Side(name, policy=league.policy(name))


def evaluate(
    rules: AvalonConfig, good: _Side, evil: _Side, games: int, seed: int
) -> dict[str, Any]:
    """Good side's wins over ``games`` deals (one rollout each) with a Wilson 95% interval."""
    wins = 0
    for i in range(games):
        (res,) = play_group(rules, good, evil, deal_seed=derive_seed(seed, "eval", i), rollouts=1,
                            sample_seed=derive_seed(seed, "eval-sample", i))  # fmt: skip
        wins += res["winner"] == "good"
    lo, hi = wilson_interval(wins, games)
    return {"good": good.name, "evil": evil.name, "games": games, "good_wins": wins,
            "good_win_rate": wins / games if games else 0.0, "ci95": [lo, hi]}  # fmt: skip


def train(config: ArenaTrainConfig, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the recipe; returns the report (also written to ``output_dir/report.json``)."""
    log = log or (lambda msg: None)
    rules = config.rules
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)
    policy = SeatPolicy(config.num_players, config.hidden_size)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    league = League(config.num_players, config.hidden_size, config.llm_seats)
    league.add("policy@0", policy)
    out = Path(config.output_dir) if config.output_dir else None
    writer = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(out / "tensorboard"))
    rng = make_random("arena-train", config.seed)
    judge = None
    if config.llm_judge:
        from evolver_gym.core.llm import OpenAIChatClient
        from wrappers.attribution import LLMJudgeAttributor

        model, _, base_url = config.llm_judge.partition("@")
        judge = LLMJudgeAttributor(OpenAIChatClient(model=model, base_url=base_url or None, role="attributor"))
    kinds = [k for k, w in config.opponent_mix.items() if w > 0]
    weights = [config.opponent_mix[k] for k in kinds]
    elo_games: list[dict[str, Any]] = []
    elo_history: list[dict[str, Any]] = []
    history = []
    start = time.monotonic()

    def rate_checkpoint(name: str, step: int) -> None:
        if config.elo_games == 0:
            return
        me = _Side(name, policy=league.policy(name))
        for other in league.names():
            if other == name:
                continue
            them = _sides_for("league" if other in league.checkpoints else other, other, league, policy)
            for i in range(config.elo_games):
                good, evil = (me, them) if i % 2 == 0 else (them, me)
                (res,) = play_group(
                    rules, good, evil, deal_seed=derive_seed(config.seed, "elo", name, other, i), rollouts=1,
                    sample_seed=derive_seed(config.seed, "elo-sample", name, other, i),
                )
                elo_games.append({"lineup": res["lineup"], "roles": res["roles"], "winner": res["winner"]})
        ratings = elo_ratings(elo_games)
        elo_history.append({"step": step, "elo": ratings})
        if writer is not None:
            for who, r in ratings.items():
                writer.add_scalar(f"elo/{who}", r, step)

    rate_checkpoint("policy@0", 0)
    for step in range(1, config.steps + 1):
        groups = []
        wins = {"good": [0, 0], "evil": [0, 0]}
        for d in range(config.deals_per_step):
            learn = config.learn_sides[rng.randrange(len(config.learn_sides))]
            kind = rng.choices(kinds, weights)[0]
            name = kind
            if kind == "league":
                name = rng.choice(list(league.checkpoints))
            elif kind == "llm":
                name = kind = rng.choice(config.llm_seats)
            learner = _Side("policy", policy=policy, learns=True)
            other = _sides_for(kind, name, league, policy)
            good, evil = (learner, other) if learn == "good" else (other, learner)
            group = play_group(rules, good, evil, deal_seed=derive_seed(config.seed, "deal", step, d),
                               rollouts=config.group_size, sample_seed=derive_seed(config.seed, "sample", step, d),
                               credit_weight=config.step_credit_weight, judge=judge)  # fmt: skip
            groups.append(group)
            for g in group:
                wins[learn][0] += (g["winner"] == learn)
                wins[learn][1] += 1
        loss, n_decisions = _grpo_loss(policy, groups, config.entropy_coef)
        if loss is not None:
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
        mean_credit = float(np.mean([c for gr in groups for g in gr for c in g["credit"].values()] or [0.0]))
        row = {"step": step, "loss": float(loss.detach()) if loss is not None else None, "decisions": n_decisions,
               "credit": mean_credit, **{f"win_rate_{s}": w / n for s, (w, n) in wins.items() if n}}  # fmt: skip
        history.append(row)
        if writer is not None:
            for key, value in row.items():
                if key != "step" and value is not None:
                    writer.add_scalar(f"train/{key}", value, step)
        log(json.dumps(row))
        if step % config.snapshot_every == 0 or step == config.steps:
            name = f"policy@{step}"
            league.add(name, policy)
            rate_checkpoint(name, step)
    train_seconds = time.monotonic() - start
    final = league.policy(f"policy@{config.steps}")
    untrained = league.policy("policy@0")
    pairings = []
    if config.eval_games:
        for good, evil in (
            (_Side("trained", policy=final), _Side("rule", bot="rule")),
            (_Side("trained", policy=final), _Side("untrained", policy=untrained)),
            (_Side("untrained", policy=untrained), _Side("rule", bot="rule")),
            (_Side("rule", bot="rule"), _Side("trained", policy=final)),
            (_Side("untrained", policy=untrained), _Side("trained", policy=final)),
            (_Side("rule", bot="rule"), _Side("untrained", policy=untrained)),
            (_Side("untrained", policy=untrained), _Side("untrained", policy=untrained)),
        ):
            pairings.append(evaluate(rules, good, evil, config.eval_games, derive_seed(config.seed, "final")))
            log(json.dumps(pairings[-1]))
    report = {
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
        "steps": config.steps,
        "train_seconds": round(train_seconds, 1),
        "league": league.names(),
        "history": history,
        "elo_history": elo_history,
        "evaluation": pairings,
    }
    if out is not None:
        torch.save(policy.state_dict(), out / "policy.pt")
        tmp = out / "report.json.tmp"
        tmp.write_text(json.dumps(report, indent=1))
        tmp.replace(out / "report.json")
        writer.close()
    return report



def write_plot(report: dict[str, Any], path: str | Path) -> Path:
    """Elo of every checkpoint over training and the final win rates (with 95% intervals), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = sorted({n for h in report["elo_history"] for n in h["elo"]})
    for name in names:
        pts = [(h["step"], h["elo"][name]) for h in report["elo_history"] if name in h["elo"]]
        ax1.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax1.set_xlabel("training step")
    ax1.set_ylabel("team Elo")
    ax1.set_title("Elo of checkpoints and bots over training")
    if names:
        ax1.legend(fontsize=7)
    rows = report["evaluation"]
    labels = [f"{r['good']} (good)\nvs {r['evil']} (evil)" for r in rows]
    rates = [r["good_win_rate"] for r in rows]
    err = [[r["good_win_rate"] - r["ci95"][0] for r in rows], [r["ci95"][1] - r["good_win_rate"] for r in rows]]
    ax2.bar(range(len(rows)), rates, yerr=err, capsize=4)
    ax2.set_xticks(range(len(rows)), labels, fontsize=7)
    ax2.set_ylabel("good side's win rate")
    ax2.set_title(f"final evaluation ({rows[0]['games'] if rows else 0} games per pairing)")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
