"""Baseline Avalon players that decide from a seat's information set (``SeatView``) only.

* ``Player`` - the protocol every seat player follows (bots, ``LLMSeat``).
* ``RandomBot`` - a uniformly random legal action, seeded.
* ``RuleBot`` - AvalonBench-style rules generalised to 5-10 players and every role:

  - Loyal Servant / Percival: enumerate every evil set consistent with the night knowledge and the
    Fail counts seen so far; propose a team with the highest chance of being all good; approve only
    such teams. Percival knows exactly one of his two candidates is evil when Morgana is in play.
  - Merlin: propose himself plus players he does not see as evil; approve iff no seen-evil member.
  - Evil (Assassin, Morgana, Mordred, Minion): propose themselves plus as many known allies as the
    quest needs Fail cards; approve iff the team holds enough evil to fail it; on a quest, the first
    ``fails_needed`` known-evil members (by seat) play Fail so allies do not over-fail; Oberon, who
    knows no allies, always fails.
  - Assassin: a random player it believes good (``assassin="random"``, AvalonBench), or the one
    whose votes best match someone who knew the evil seats (``assassin="votes"``).
  - Every good bot approves the fifth proposal of a round (under the official rule a fifth rejection
    hands the game to evil); evil bots reject it.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations
from typing import Protocol, runtime_checkable

import numpy as np

from evolver_gym.core.seeding import make_random

from .engine import SeatView, team_codes

__all__ = ["Player", "RandomBot", "RuleBot", "make_player", "PLAYER_KINDS"]


@runtime_checkable
class Player(Protocol):
    """A seat player. ``act`` returns a flat action code (int) or text (str, text protocol).

    ``needs_text`` tells the caller whether to build the seat's text observation for ``act``; a player
    with ``conversation = True`` (optional) keeps one chat per game and gets only what is new since its
    last turn (:class:`~arena.avalon.observation.SeatStream`), else the whole transcript.
    """

    name: str
    needs_text: bool

    def reset(self, seat: int, seed: int) -> None: ...

    def act(self, view: SeatView, text: str | None = None) -> int | str: ...


class RandomBot:
    """Uniformly random legal actions from a seeded generator.

    Example:
        >>> from arena.avalon import AvalonConfig, AvalonGame
        >>> g = AvalonGame(AvalonConfig(5), ["merlin", "servant", "servant", "assassin", "minion"], 0)
        >>> bot = RandomBot(); bot.reset(0, seed=1)
        >>> bot.act(g.view(0)) in g.legal_codes(0)
        True
    """

    needs_text = False

    def __init__(self, name: str = "random"):
        self.name = name
        self.rng = make_random("random-bot", 0)

    def reset(self, seat: int, seed: int) -> None:
        self.rng = make_random("random-bot", seed, seat)

    def act(self, view: SeatView, text: str | None = None) -> int:
        return int(view.legal[self.rng.randrange(len(view.legal))])


# -- hypothesis reasoning for good seats ------------------------------------------------------
@lru_cache(maxsize=65536)
def _hypotheses(
    n: int,
    n_evil: int,
    seat: int,
    not_evil: frozenset,
    one_of: frozenset,
    quests: tuple[tuple[int, int], ...],
) -> np.ndarray:
    """Bitmasks of every evil set consistent with what a good seat knows."""
    others = [j for j in range(n) if j != seat and j not in not_evil]
    out = []
    for combo in combinations(others, n_evil):
        m = 0
        for j in combo:
            m |= 1 << j
        if one_of and len(one_of & set(combo)) != 1:
            continue
        if all((m & team).bit_count() >= fails for team, fails in quests):
            out.append(m)
    if not out and quests:  # only possible if evil lied about nothing we can see; drop quest evidence
        return _hypotheses(n, n_evil, seat, not_evil, one_of, ())
    return np.array(out, dtype=np.int64)


@lru_cache(maxsize=65536)
def _preferred_teams(
    n: int,
    k: int,
    n_evil: int,
    seat: int,
    not_evil: frozenset,
    one_of: frozenset,
    quests: tuple[tuple[int, int], ...],
) -> tuple[frozenset, tuple[float, ...]]:
    """(codes of the teams most likely all-good, per-seat probability of being evil)."""
    hyps = _hypotheses(n, n_evil, seat, not_evil, one_of, quests)
    codes = np.array(team_codes(n, k), dtype=np.int64)
    if len(hyps) == 0:
        return frozenset(int(c) for c in codes), tuple([0.0] * n)
    clean = ((codes[:, None] - 1) & hyps[None, :]) == 0
    score = clean.mean(axis=1)
    best = score.max()
    preferred = frozenset(int(c) for c in codes[score >= best - 1e-12])
    p_evil = tuple(float(((hyps >> j) & 1).mean()) for j in range(n))
    return preferred, p_evil


class RuleBot:
    """AvalonBench-style rule player for every role (see the module docstring).

    Args:
        name: Label used in tournaments.
        assassin: ``"random"`` (AvalonBench) or ``"votes"`` (vote-pattern Merlin hunt).
    """

    needs_text = False

    def __init__(self, name: str = "rule", assassin: str = "random"):
        if assassin not in ("random", "votes"):
            raise ValueError(f"assassin must be 'random' or 'votes', got {assassin!r}")
        self.name = name
        self.assassin = assassin
        self.rng = make_random("rule-bot", 0)

    def reset(self, seat: int, seed: int) -> None:
        self.rng = make_random("rule-bot", seed, seat)

    # -- helpers --------------------------------------------------------------------------
    def _pick(self, items):
        items = sorted(items)
        return items[self.rng.randrange(len(items))]

    def _allies(self, v: SeatView) -> frozenset:
        return (v.knowledge.evil | {v.seat}) if v.evil else frozenset()

    def _good_reasoning(self, v: SeatView, k: int) -> tuple[frozenset, tuple[float, ...]]:
        cfg = v.config
        one_of = frozenset()
        if (
            v.role == "percival"
            and "morgana" in cfg.special_roles
            and len(v.knowledge.merlin_candidates) == 2
        ):
            one_of = v.knowledge.merlin_candidates
        not_evil = frozenset(v.knowledge.good)
        if v.role == "percival" and "morgana" not in cfg.special_roles:
            not_evil |= v.knowledge.merlin_candidates
        quests = tuple((sum(1 << j for j in team), fails) for team, fails, _ in v.quests if fails)
        return _preferred_teams(v.n, k, cfg.num_evil, v.seat, not_evil, one_of, quests)

    def _fifth(self, v: SeatView) -> bool:
        return v.rejections == 4 and v.config.hammer == "evil_wins"

    # -- decisions ------------------------------------------------------------------------
    def act(self, v: SeatView, text: str | None = None) -> int:
        c = v.codec
        phase = v.phase
        if phase == "discussion":
            return self._speak(v)
        if phase == "proposal":
            return self._propose(v)
        if phase == "vote":
            return c.APPROVE if self._approve(v) else c.REJECT
        if phase == "quest":
            return c.FAIL if (c.FAIL in v.legal and self._fail(v)) else c.SUCCESS
        if phase == "assassination":
            return self._assassinate(v)
        if phase == "lady":  # examine someone whose side this seat does not know yet
            known = v.knowledge.evil | v.knowledge.good | {t for t, _ in v.lady_results}
            unknown = [code for code in v.legal if code - c.LADY0 not in known]
            return int(self._pick(unknown or v.legal))
        return int(v.legal[0])

    def _speak(self, v: SeatView) -> int:
        c = v.codec
        if v.evil or v.role == "merlin" or not any(f for _, f, _ in v.quests):
            return c.CLAIM_GOOD
        _, p_evil = self._good_reasoning(v, v.team_size)
        top = max((j for j in range(v.n) if j != v.seat), key=lambda j: (p_evil[j], -j))
        return c.accuse(top)

    def _propose(self, v: SeatView) -> int:
        c, k, n = v.codec, v.team_size, v.n
        if v.evil:
            allies = sorted(self._allies(v) - {v.seat})
            self.rng.shuffle(allies)
            members = [v.seat] + allies[: max(0, v.fails_needed - 1)]
            rest = [j for j in range(n) if j not in self._allies(v)]
            self.rng.shuffle(rest)
            members += rest[: k - len(members)]
            if len(members) < k:  # more allies than outsiders needed
                members += [j for j in allies if j not in members][: k - len(members)]
            return c.team_code(members[:k])
        if v.role == "merlin":
            trusted = [j for j in range(n) if j != v.seat and j not in v.knowledge.evil]
            self.rng.shuffle(trusted)
            members = [v.seat] + trusted[: k - 1]
            if len(members) < k:
                extra = [j for j in range(n) if j not in members]
                self.rng.shuffle(extra)
                members += extra[: k - len(members)]
            return c.team_code(members)
        preferred, _ = self._good_reasoning(v, k)
        mine = [t for t in preferred if (t - 1) >> v.seat & 1]
        return int(self._pick(mine or preferred))

    def _approve(self, v: SeatView) -> bool:
        if v.evil:
            if self._fifth(v):
                return False
            on_team = sum(1 for j in v.team if j in self._allies(v))
            return on_team >= v.fails_needed
        if self._fifth(v):
            return True
        if v.role == "merlin":
            return not any(j in v.knowledge.evil for j in v.team)
        preferred, _ = self._good_reasoning(v, len(v.team))
        return v.codec.team_code(v.team) in preferred

    def _fail(self, v: SeatView) -> bool:
        if v.role == "oberon":
            return True
        allies_on = sorted(j for j in v.team if j in self._allies(v))
        if len(allies_on) < v.fails_needed:
            return False
        return allies_on.index(v.seat) < v.fails_needed

    def _assassinate(self, v: SeatView) -> int:
        c = v.codec
        targets = [c.decode(code)[1] for code in v.legal]
        if self.assassin == "votes" and v.proposals:
            evil = self._allies(v)

            def match(j: int) -> float:
                votes = [(vs[j], any(m in evil for m in team)) for _, _, team, vs, _ in v.proposals if vs]
                return sum(approve != dirty for approve, dirty in votes) / max(1, len(votes))

            best = max(match(j) for j in targets)
            targets = [j for j in targets if match(j) >= best - 1e-12]
        return c.assassinate(self._pick(targets))


PLAYER_KINDS = ("random", "rule", "rule_votes")


def make_player(kind: str, name: str | None = None) -> Player:
    """A bot by kind: ``random``, ``rule`` (AvalonBench Assassin) or ``rule_votes``."""
    if kind == "random":
        return RandomBot(name or kind)
    if kind == "rule":
        return RuleBot(name or kind)
    if kind == "rule_votes":
        return RuleBot(name or kind, assassin="votes")
    raise ValueError(f"unknown player kind {kind!r}; choose one of {PLAYER_KINDS} or an 'llm:' spec")
