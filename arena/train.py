"""Several Avalon seats learning at once from the PettingZoo parallel env (``evolver arena train``).

* ``ArenaTrainConfig`` - every option of a run (a field with help each).
* ``SeatPolicy`` - the policy of every learning seat: an MLP over the seat's feature vector (its own
  role, side and night knowledge are in it) plus a learned role embedding, so each role gets its own
  conditioning ("role-specific prompt"); by default one such network per team ("separate adapters
  per team") that also reads ``seat_inputs``; illegal actions masked.
* ``seat_inputs`` - inputs derived from the seat's own view: the public record joined per player
  (failed quests sat on, approvals of teams that failed, ...), the seat's belief over the evil sets
  still possible, and per-action values (a team's chance to be clean, ...).
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
from functools import lru_cache
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from evolver_gym.core.seeding import derive_seed, make_random
from evolver_gym.core.stats import wilson_interval

from .avalon.actions import ActionCodec
from .avalon.engine import AvalonGame, SeatView
from .avalon.observation import _layout
from .avalon.parallel import parallel_env
from .avalon.rules import ROLES, AvalonConfig
from .avalon.tournament import elo_ratings, make_entrant
from .train_config import SIDES, ArenaTrainConfig  # noqa: F401 - SIDES: its old home

__all__ = [
    "ArenaTrainConfig",
    "SeatPolicy",
    "League",
    "step_credit",
    "train",
    "evaluate",
    "play_group",
    "play_games",
    "write_plot",
    "seat_inputs",
]

class SeatPolicy(nn.Module):
    """Shared policy: the seat's inputs (+ role embedding) -> masked logits over the flat action code.

    Args:
        num_players: 5-10.
        hidden_size: MLP width.
        derived_inputs: also read :func:`seat_inputs` (the public record joined per player, the
            seat's belief over evil sets, per-action values); ``x`` is then ``encode``'s output.
        separate_sides: one network for good seats and one for evil seats (selected by the
            seat's own side bit), so the two teams' gradients do not share weights.

    ``x`` for :meth:`forward` is :meth:`encode`'s output: the observation's feature vector, then
    the derived inputs when ``derived_inputs``.
    """

    def __init__(self, num_players: int, hidden_size: int = 128, *, derived_inputs: bool = True,
                 separate_sides: bool = True):  # fmt: skip
        super().__init__()
        self.num_players = num_players
        layout = _layout(num_players)
        self.obs_size = layout.size
        self.role_offset, self.evil_offset = layout.start["role"], layout.start["evil"]
        self.n_codes = _n_codes(num_players)
        self.derived_inputs, self.separate_sides = derived_inputs, separate_sides
        self.state_size = self.obs_size + (derived_size(num_players) if derived_inputs else 0)
        self.input_size = self.state_size + (self.n_codes * len(ACTION_INPUTS) if derived_inputs else 0)
        self.sides = nn.ModuleList(
            _SideNet(self.state_size, hidden_size, self.n_codes, len(ACTION_INPUTS) if derived_inputs else 0)
            for _ in range(2 if separate_sides else 1)
        )

    def encode(self, game: AvalonGame, seat: int, observation: np.ndarray) -> np.ndarray:
        """The policy's input for ``seat`` now: its observation vector (+ derived inputs)."""
        if not self.derived_inputs:
            return observation
        return np.concatenate([observation, seat_inputs(game.view(seat, simultaneous=True), self.n_codes)])

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        role = x[:, self.role_offset : self.role_offset + len(ROLES)].argmax(dim=1)
        state = x[:, : self.state_size]
        per_code = x[:, self.state_size :].reshape(len(x), self.n_codes, -1) if self.derived_inputs else None
        if not self.separate_sides:
            logits = self.sides[0](state, role, per_code)
        else:  # each row through its own side's network only
            evil = x[:, self.evil_offset] > 0.5
            logits = x.new_empty(len(x), self.n_codes)
            for side, rows in ((0, ~evil), (1, evil)):
                if rows.any():
                    codes = None if per_code is None else per_code[rows]
                    logits[rows] = self.sides[side](state[rows], role[rows], codes)
        return logits.masked_fill(mask == 0, -1e9)


class _SideNet(nn.Module):
    """One team's network: MLP over the state plus a role embedding; with per-action inputs, each
    code's logit also gets ``per_code[code] . w(state)``."""

    def __init__(self, state_size: int, hidden_size: int, n_codes: int, action_inputs: int):
        super().__init__()
        self.role_embedding = nn.Embedding(len(ROLES), hidden_size)
        self.body = nn.Sequential(nn.Linear(state_size, hidden_size), nn.Tanh())
        self.head = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.Tanh(), nn.Linear(hidden_size, n_codes))
        self.action_weights = nn.Linear(hidden_size, action_inputs) if action_inputs else None

    def forward(self, state: torch.Tensor, role: torch.Tensor, per_code: torch.Tensor | None) -> torch.Tensor:
        h = self.body(state) + self.role_embedding(role)
        logits = self.head(h)
        if self.action_weights is not None:
            logits = logits + (per_code * self.action_weights(h)[:, None, :]).sum(dim=2)
        return logits


def _n_codes(n: int) -> int:
    return ActionCodec(n).size


# -- what a seat can reason with: derived from its own information set ---------------------------------
# The observation's feature vector holds the whole public record, but as one-hot slots (quest q's team,
# proposal i's votes) a small MLP would have to learn to join: "player j sat on a quest that failed" is
# a product of two slots. These inputs do that join from the seat's own view (``AvalonGame.view``:
# its role, night knowledge, Lady answers and the public record; never another seat's hidden state).
PLAYER_BLOCKS = ("p_evil", "failed_quests", "clean_quests", "approved_failed", "rejected_clean", "led_failed")
SCALARS = ("team_p_clean", "team_evil_share", "self_on_team", "allies_enough", "leader_p_evil", "fifth_vote",
           "fails_so_far", "successes_so_far")  # fmt: skip
# Per-action inputs: one row per flat action code, zero for the codes that are not legal now. The
# policy adds (row . w(state)) to each code's logit, so "propose the team most likely clean" or
# "approve when the team looks clean" is one learned direction instead of a table over 2**n team codes.
ACTION_INPUTS = ("p_clean", "evil_share", "self_on", "allies_enough", "fifth_vote", "merlin_likeness")


def derived_size(n: int) -> int:
    return len(PLAYER_BLOCKS) * n + len(SCALARS)


@lru_cache(maxsize=64)
def _subsets(n: int, k: int) -> tuple[int, ...]:
    return tuple(sum(1 << j for j in combo) for combo in combinations(range(n), k))


@lru_cache(maxsize=65536)
def _evil_sets(n: int, n_evil: int, must: int, cannot: int, quests: tuple[tuple[int, int], ...]) -> np.ndarray:
    """Bitmasks of the evil sets a seat still holds possible: every set with the ``must`` seats and
    none of the ``cannot`` seats that puts at least ``fails`` evil players on each failed quest team
    (quest evidence dropped if nothing fits it, e.g. where good seats may fail quests)."""
    sets = [m for m in _subsets(n, n_evil) if m & must == must and not m & cannot]
    fitting = [m for m in sets if all((m & team).bit_count() >= fails for team, fails in quests)]
    return np.array(fitting or sets or [must], dtype=np.int64)


def _belief(v: SeatView) -> np.ndarray:
    """The evil sets ``v``'s seat holds possible: its night knowledge, the Lady's answers, itself, and
    the Fail counts (Percival's Merlin/Morgana pair is not used: it names no evil seat for sure)."""
    k = v.knowledge
    known_evil = set(k.evil) | {t for t, evil in v.lady_results if evil}
    known_good = set(k.good) | {t for t, evil in v.lady_results if not evil}
    (known_evil if v.evil else known_good).add(v.seat)
    must, cannot = sum(1 << j for j in known_evil), sum(1 << j for j in known_good)
    quests = tuple((sum(1 << j for j in team), fails) for team, fails, _ in v.quests if fails)
    return _evil_sets(v.n, v.config.num_evil, must, cannot, quests)


def _team_stats(sets: np.ndarray, masks: np.ndarray, v: SeatView, p_evil: np.ndarray, allies: int) -> np.ndarray:
    """Per team bitmask: P(no evil member), mean P(evil) of the members, the seat on it, and (for an
    evil seat) enough of its allies on it to fail the quest. Shape ``(len(masks), 4)``."""
    members = (masks[:, None] >> np.arange(v.n)) & 1
    out = np.empty((len(masks), 4), dtype=np.float32)
    out[:, 0] = ((sets[None, :] & masks[:, None]) == 0).mean(axis=1)
    out[:, 1] = members @ p_evil / np.maximum(members.sum(axis=1), 1)
    out[:, 2] = members[:, v.seat]
    out[:, 3] = (members @ ((allies >> np.arange(v.n)) & 1) >= v.fails_needed) if v.evil else 0.0
    return out


def seat_inputs(v: SeatView, n_codes: int) -> np.ndarray:
    """The derived inputs of one seat: ``derived_size(n)`` values, then ``n_codes`` x
    ``len(ACTION_INPUTS)`` per-action values (flattened), from the seat's view ``v`` only."""
    n, c = v.n, v.codec
    sets = _belief(v)
    p_evil = ((sets[:, None] >> np.arange(n)) & 1).mean(axis=0)
    allies = sum(1 << j for j in v.knowledge.evil) | (1 << v.seat) if v.evil else 0
    failed_on, clean_on, approved_failed, rejected_clean, led_failed = ([0.0] * n for _ in range(5))
    for team, fails, _ in v.quests:  # "clean" = no Fail card played (evil may still have been on it)
        on = failed_on if fails else clean_on
        for j in team:
            on[j] += 0.2
    n_quests = len(v.quests)
    for q, leader, _, votes, approved in v.proposals:
        if not approved or q >= n_quests:
            continue  # the team that went on quest q is the round's approved proposal
        if v.quests[q][1]:
            led_failed[leader] += 0.2
            for j, yes in enumerate(votes or ()):
                if yes:
                    approved_failed[j] += 0.2
        else:
            for j, yes in enumerate(votes or ()):
                if not yes:
                    rejected_clean[j] += 0.2
    team = _team_stats(sets, np.array([sum(1 << j for j in v.team)]), v, p_evil, allies)[0] if v.team else [0.0] * 4
    fifth = float(v.rejections == 4 and v.config.hammer == "evil_wins")
    fails = sum(1 for _, f, _ in v.quests if f)
    scalars = [*team, float(p_evil[v.leader]), fifth, fails / 3, (len(v.quests) - fails) / 3]
    per_code = np.zeros((n_codes, len(ACTION_INPUTS)), dtype=np.float32)
    legal = np.array(v.legal, dtype=np.int64)
    teams = legal[(legal >= c.TEAM0) & (legal < c.APPROVE)]
    if len(teams):
        per_code[teams, :4] = _team_stats(sets, teams - c.TEAM0, v, p_evil, allies)
    if c.APPROVE in v.legal:
        per_code[c.APPROVE, :5] = [*team, fifth]
    for code in legal[(legal >= c.ASSASSINATE0) & (legal < c.ASSASSINATE0 + n)]:
        per_code[code, 5] = _merlin_likeness(v, int(code) - c.ASSASSINATE0, allies)
    public = [*failed_on, *clean_on, *approved_failed, *rejected_clean, *led_failed, *scalars]
    return np.concatenate([p_evil.astype(np.float32), np.asarray(public, dtype=np.float32), per_code.ravel()])


def _merlin_likeness(v: SeatView, j: int, evil: int) -> float:
    """How often ``j`` voted as someone who knows the evil seats would: approving clean teams and
    rejecting teams with an evil player (``evil``: the bitmask the evil seat knows)."""
    votes = [(vs[j], not any(evil >> m & 1 for m in team)) for _, _, team, vs, _ in v.proposals if vs]
    return sum(yes == clean for yes, clean in votes) / len(votes) if votes else 0.5


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

    def __init__(self, num_players: int, hidden_size: int, llm_seats: tuple[str, ...] = (), **policy_kwargs: Any):
        self.num_players, self.hidden_size, self.policy_kwargs = num_players, hidden_size, policy_kwargs
        self.checkpoints: dict[str, dict[str, torch.Tensor]] = {}
        self.bots = ["rule", "random"]
        self.llm_seats = list(llm_seats)

    def add(self, name: str, policy: SeatPolicy) -> None:
        self.checkpoints[name] = {k: v.detach().clone() for k, v in policy.state_dict().items()}

    def names(self) -> list[str]:
        return [*self.checkpoints, *self.bots, *self.llm_seats]

    def policy(self, name: str) -> SeatPolicy:
        p = SeatPolicy(self.num_players, self.hidden_size, **self.policy_kwargs)
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
    """Play one deal ``rollouts`` times in the PettingZoo parallel env (see :func:`play_games`)."""
    matches = [(good, evil, deal_seed, derive_seed(sample_seed, r)) for r in range(rollouts)]
    return play_games(rules, matches, credit_weight=credit_weight, judge=judge)


@dataclass
class _Game:
    """One game in progress inside :func:`play_games`."""

    env: Any
    obs: dict[str, Any]
    sides: list[_Side]
    bots: dict[int, Any]
    rng: np.random.Generator
    deal_seed: int
    decisions: dict[int, list] = field(default_factory=dict)
    credit: dict[int, float] = field(default_factory=dict)
    unjudged: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    actions: dict[str, int] = field(default_factory=dict)


def play_games(
    rules: AvalonConfig,
    matches: list[tuple[_Side, _Side, int, int]],
    *,
    credit_weight: float = 0.0,
    judge: Any = None,
) -> list[dict[str, Any]]:
    """Play ``matches`` (good side, evil side, deal seed, sampling seed), one PettingZoo parallel env
    each, in lockstep, so every policy decides for all its pending seats of all games in one forward
    pass. Returns one record per game: ``winner``, ``roles``, ``lineup``, and for learning seats
    ``decisions`` (input, mask, action), ``credit`` and ``returns`` (team outcome +
    ``credit_weight`` x credit). A game's moves depend only on its own seeds, not on the others.

    Credit: :func:`step_credit` where a rule judges a decision; the other decisions of a learning
    seat go to ``judge`` when given (an attributor with ``attribute_batch(trajectories)``, e.g.
    ``wrappers.attribution.LLMJudgeAttributor``: one trajectory per seat and game, the seat's text
    observation and the action as each step; GOOD adds +1, BAD -1)."""
    games = []
    for good, evil, deal_seed, sample_seed in matches:
        env = parallel_env(config=rules)
        obs, _ = env.reset(seed=deal_seed)
        g = env.game
        sides = [evil if g.is_evil[s] else good for s in range(rules.num_players)]
        bots = {}
        for s, side in enumerate(sides):
            if side.bot is not None:
                bots[s] = make_entrant(side.bot)()
                bots[s].reset(s, derive_seed(deal_seed, "opponent", s))  # same bots in every rollout
        gm = _Game(env, obs, sides, bots, np.random.default_rng(sample_seed), deal_seed)
        for s in (s for s, side in enumerate(sides) if side.learns):
            gm.decisions[s], gm.credit[s], gm.unjudged[s] = [], 0.0, []
        games.append(gm)
    live = list(games)
    while live:
        by_policy: dict[int, list[tuple[_Game, int, float]]] = {}
        for gm in live:
            g, obs = gm.env.game, gm.obs
            gm.actions = {a: 0 for a in gm.env.agents}
            for s in g.pending():
                if s in gm.bots:
                    text = obs[f"player_{s}"]["text"] if gm.bots[s].needs_text else None
                    gm.actions[f"player_{s}"] = gm.bots[s].act(g.view(s, simultaneous=True), text)
                else:  # the seat's uniform draw is taken in the game's own seat order
                    by_policy.setdefault(id(gm.sides[s].policy), []).append((gm, s, gm.rng.random()))
        for rows in by_policy.values():
            policy = rows[0][0].sides[rows[0][1]].policy
            x = torch.from_numpy(np.stack([policy.encode(gm.env.game, s, gm.obs[f"player_{s}"]["observation"])
                                           for gm, s, _ in rows]))  # fmt: skip
            m = torch.from_numpy(np.stack([gm.obs[f"player_{s}"]["action_mask"] for gm, s, _ in rows]))
            with torch.no_grad():
                probs = torch.softmax(policy(x, m), dim=1).double().numpy()
            for i, (gm, s, u) in enumerate(rows):
                code = _sample(probs[i], u)
                gm.actions[f"player_{s}"] = code
                if s in gm.decisions:
                    g = gm.env.game
                    gm.decisions[s].append((x[i], m[i], code))
                    judged = step_credit(g, s, code)
                    if judged is not None:
                        gm.credit[s] += judged
                    elif judge is not None:
                        gm.unjudged[s].append((gm.obs[f"player_{s}"]["text"], g.codec.describe(code)))
        for gm in live:
            gm.obs = gm.env.step(gm.actions)[0]
        live = [gm for gm in live if gm.env.agents]
    out = []
    for gm in games:
        g = gm.env.game
        outcome = {s: (1.0 if (g.winner == "evil") == g.is_evil[s] else -1.0) for s in gm.decisions}
        labels: dict[str, float] = {}
        if judge is not None:
            for s, score in _judge_credit(judge, g, gm.unjudged, outcome, gm.deal_seed, labels).items():
                gm.credit[s] += score
        out.append(
            {
                "winner": g.winner,
                "roles": list(g.roles),
                "lineup": [gm.sides[s].name for s in range(rules.num_players)],
                "decisions": gm.decisions,
                "returns": {s: outcome[s] + credit_weight * gm.credit[s] for s in gm.decisions},
                "credit": gm.credit,
                "judge_labels": labels,
            }
        )
    return out


def _sample(p: np.ndarray, u: float) -> int:
    """The code whose probability interval holds the uniform draw ``u`` (masked codes have
    probability 0 and are never drawn)."""
    cdf = np.cumsum(p)
    code = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    return min(code, int(np.flatnonzero(p)[-1]))


def _judge_credit(judge: Any, game: AvalonGame, unjudged: dict[int, list[tuple[str, str]]],
                  outcome: dict[int, float], deal_seed: int, tally: dict[str, float]) -> dict[int, float]:
    """Sum of the judge's step scores per seat (one trajectory per seat, one batched call); ``tally``
    counts the labels given (a fallback's labels apart) and the seconds the judge took."""
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
    start = time.monotonic()
    results = judge.attribute_batch(trajectories) if trajectories else []
    tally["seconds"] = tally.get("seconds", 0.0) + time.monotonic() - start
    for r in results:
        for label in r.labels:
            key = f"{label.label} (fallback)" if r.fallback else label.label
            tally[key] = tally.get(key, 0) + 1
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
    rules: AvalonConfig, good: _Side, evil: _Side, games: int, seed: int, *, batch: int = 100
) -> dict[str, Any]:
    """Good side's wins over ``games`` deals (one rollout each, ``batch`` at a time in lockstep) with
    a Wilson 95% interval."""
    wins = 0
    for first in range(0, games, batch):
        matches = [(good, evil, derive_seed(seed, "eval", i), derive_seed(seed, "eval-sample", i))
                   for i in range(first, min(games, first + batch))]  # fmt: skip
        wins += sum(res["winner"] == "good" for res in play_games(rules, matches))
    lo, hi = wilson_interval(wins, games)
    return {"good": good.name, "evil": evil.name, "games": games, "good_wins": wins,
            "good_win_rate": wins / games if games else 0.0, "ci95": [lo, hi]}  # fmt: skip


def train(config: ArenaTrainConfig, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the recipe; returns the report (also written to ``output_dir/report.json``)."""
    log = log or (lambda msg: None)
    rules = config.rules
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)
    arch = {"derived_inputs": config.derived_inputs, "separate_sides": config.separate_sides}
    policy = SeatPolicy(config.num_players, config.hidden_size, **arch)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    league = League(config.num_players, config.hidden_size, config.llm_seats, **arch)
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
        client = OpenAIChatClient(model=model, base_url=base_url or None, role="attributor", **config.llm_judge_options)
        judge = LLMJudgeAttributor(client, max_chars=config.llm_judge_max_chars)
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
            matches = [(*((me, them) if i % 2 == 0 else (them, me)), derive_seed(config.seed, "elo", name, other, i),
                        derive_seed(config.seed, "elo-sample", name, other, i)) for i in range(config.elo_games)]
            for res in play_games(rules, matches):
                elo_games.append({"lineup": res["lineup"], "roles": res["roles"], "winner": res["winner"]})
        ratings = elo_ratings(elo_games)
        elo_history.append({"step": step, "elo": ratings})
        if writer is not None:
            for who, r in ratings.items():
                writer.add_scalar(f"elo/{who}", r, step)

    rate_checkpoint("policy@0", 0)
    for step in range(1, config.steps + 1):
        step_start = time.monotonic()
        matches, learning = [], []
        wins = {"good": [0, 0], "evil": [0, 0]}
        for d in range(config.deals_per_step):
            learn = rng.choices(config.learn_sides, config.learn_side_weights)[0]
            kind = rng.choices(kinds, weights)[0]
            name = kind
            if kind == "league":
                name = rng.choice(list(league.checkpoints))
            elif kind == "llm":
                name = kind = rng.choice(config.llm_seats)
            learner = _Side("policy", policy=policy, learns=True)
            other = _sides_for(kind, name, league, policy)
            good, evil = (learner, other) if learn == "good" else (other, learner)
            deal, sample = derive_seed(config.seed, "deal", step, d), derive_seed(config.seed, "sample", step, d)
            matches += [(good, evil, deal, derive_seed(sample, r)) for r in range(config.group_size)]
            learning.append(learn)
        played = play_games(rules, matches, credit_weight=config.step_credit_weight, judge=judge)
        groups = [played[i : i + config.group_size] for i in range(0, len(played), config.group_size)]
        for learn, group in zip(learning, groups, strict=True):
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
        if judge is not None:  # what the judge said this step, and how long it took
            for g in (g for gr in groups for g in gr):
                for key, value in g["judge_labels"].items():
                    key = "judge_" + key.replace(" (fallback)", "_fallback")
                    row[key] = row.get(key, 0) + value
        row["seconds"] = round(time.monotonic() - step_start, 2)
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
    if judge is not None:
        report["judge"] = dict(judge.counts)
    if out is not None:
        torch.save(policy.state_dict(), out / "policy.pt")
        tmp = out / "report.json.tmp"
        tmp.write_text(json.dumps(report, indent=1))
        tmp.replace(out / "report.json")
        writer.close()
    return report



def write_plot(report: dict[str, Any], path: str | Path) -> Path:
    """Elo of every checkpoint over training and the final win rates (with 95% intervals), as a PNG
    (:func:`training_figure` saved)."""
    import matplotlib.pyplot as plt

    fig = training_figure(report)
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def training_figure(report: dict[str, Any]) -> Any:
    """The figure of :func:`write_plot`: Elo over training, and the final win rates as horizontal bars, one row
    per pairing labelled ``good entrant vs evil entrant``, so the labels never overlap however many pairings
    there are; each bar carries its rate. The caller closes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["evaluation"]
    height = max(4.5, 1.2 + 0.42 * len(rows))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, height), layout="constrained",
                                   gridspec_kw={"width_ratios": [1.0, 1.1]})
    names = sorted({n for h in report["elo_history"] for n in h["elo"]})
    for name in names:
        pts = [(h["step"], h["elo"][name]) for h in report["elo_history"] if name in h["elo"]]
        ax1.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax1.set_xlabel("training step")
    ax1.set_ylabel("team Elo")
    ax1.set_title("Elo of checkpoints and bots over training")
    ax1.grid(alpha=0.3)
    if names:
        ax1.legend(fontsize=7, loc="best")
    labels = [f"{r['good']} vs {r['evil']}" for r in rows]
    rates = [r["good_win_rate"] for r in rows]
    err = [[max(r["good_win_rate"] - r["ci95"][0], 0.0) for r in rows],
           [max(r["ci95"][1] - r["good_win_rate"], 0.0) for r in rows]]
    ypos = list(range(len(rows)))
    ax2.barh(ypos, rates, xerr=err, capsize=3, color="tab:blue", alpha=0.8)
    for y, rate, hi in zip(ypos, rates, err[1]):
        ax2.text(rate + hi + 0.01, y, f"{rate:.2f}", va="center", fontsize=7)
    ax2.set_yticks(ypos, labels, fontsize=7)
    ax2.invert_yaxis()  # the first pairing on top, as listed in the report
    ax2.set_xlim(0.0, 1.1)  # room for the rate written right of a bar at 1.0
    ax2.set_xticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax2.set_xlabel("good side's win rate (95% interval)")
    ax2.set_ylabel("pairing: good entrant vs evil entrant")
    ax2.grid(alpha=0.3, axis="x")
    ax2.set_title(f"final evaluation ({rows[0]['games'] if rows else 0} games per pairing)")
    return fig
