"""The pure Avalon rules engine: one game's state, its legal actions and its per-seat records.

* ``AvalonGame`` - deal, legal actions (from a seat's information set only), ``step``, results.
* ``SeatView`` - everything one seat may know at one moment (what bots decide from).
* ``IllegalAction`` - raised by ``AvalonGame.step`` for an action the acting seat may not take.
* ``PHASES`` - ``discussion, proposal, vote, quest, assassination, end, lady``.

The engine knows nothing about PettingZoo or models. Every record it keeps is tagged with who
may see it: public events go to every seat's transcript; own votes, own quest cards and the night
knowledge go to one seat only; votes are revealed together once all are in; quest cards are only
ever revealed as a count of Fail cards.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from .actions import ActionCodec
from .rules import EVIL_ROLES, ROLE_TITLES, AvalonConfig, Knowledge, night_knowledge

__all__ = ["AvalonGame", "SeatView", "IllegalAction", "PHASES", "team_codes"]

# "lady" (Lady of the Lake, optional) is last so the other phases keep their feature index.
PHASES = ("discussion", "proposal", "vote", "quest", "assassination", "end", "lady")


class IllegalAction(ValueError):
    """An action the acting seat may not take now (message names it)."""


@cache
def team_codes(n: int, k: int) -> tuple[int, ...]:
    """Flat codes of every team of size ``k`` among ``n`` players, ascending."""
    return tuple(1 + m for m in range(1 << n) if m.bit_count() == k)


@cache
def _codec(n: int) -> ActionCodec:
    return ActionCodec(n)


@dataclass(frozen=True)
class SeatView:
    """One seat's information set: its own role and night knowledge plus public history.

    ``proposals``: tuples ``(quest, leader, team, votes, approved)`` where ``votes`` is a tuple of
    bools (True = approve) or ``None`` for an auto-approved team. ``quests``: tuples
    ``(team, fails, succeeded)``. ``my_cards``: this seat's own quest cards ``(quest, fail)``.
    Lady of the Lake: ``lady`` (holder, ``None`` when not played), ``lady_holders`` (everyone who has
    held her, in order), ``lady_results`` (this seat's own examinations ``(seat, evil)``).
    """

    seat: int
    role: str
    evil: bool
    knowledge: Knowledge
    config: AvalonConfig
    phase: str
    leader: int
    quest: int
    rejections: int
    team: tuple[int, ...]
    proposals: tuple
    quests: tuple
    my_cards: tuple
    legal: tuple[int, ...]
    lady: int | None = None
    lady_holders: tuple[int, ...] = ()
    lady_results: tuple = ()

    @property
    def n(self) -> int:
        return self.config.num_players

    @property
    def team_size(self) -> int:
        return self.config.team_sizes[min(self.quest, 4)]

    @property
    def fails_needed(self) -> int:
        return self.config.fails_needed[min(self.quest, 4)]

    @property
    def codec(self) -> ActionCodec:
        return _codec(self.config.num_players)


class AvalonGame:
    """One game of Avalon.

    Args:
        config: The rules.
        roles: Role of every seat (a permutation of ``config.roles_in_play()``).
        leader: Seat of the first leader.

    Use :meth:`deal` for a random deal from a generator.

    Records are kept as a compact log of tuples ``(scope, kind, *data)`` (``scope`` -1 for public
    entries, else the one seat that may see it); transcript lines and event dicts are rendered
    from it only when asked for (:meth:`seat_lines`, :attr:`public_lines`, :attr:`events`), so
    a game that nobody reads costs no string formatting.

    Example:
        >>> g = AvalonGame.deal(AvalonConfig(5), np.random.default_rng(0))
        >>> g.phase, g.actor == g.leader
        ('discussion', True)
    """

    __slots__ = (
        "config", "n", "roles", "is_evil", "knowledge", "assassin", "_t", "codec", "leader", "quest",
        "rejections", "team", "proposals", "quests", "_cards", "_cards_by_seat", "winner", "end_reason",
        "assassin_target", "steps", "_queue", "_votes", "_fails", "_wins", "_losses", "log", "_rendered",
        "_public_text", "lady", "lady_holders", "lady_results", "phase", "actor", "feature_cache", "body_cache",
        "history",
    )  # fmt: skip

    def __init__(self, config: AvalonConfig, roles: tuple[str, ...] | list[str], leader: int = 0):
        n = config.num_players
        roles = tuple(roles)
        tables = _deal_tables(config, roles)
        if tables is None:
            raise ValueError(f"roles {roles!r} are not a deal of {config.roles_in_play()!r}")
        if leader not in _SEATS[n]:
            if not isinstance(leader, (int, np.integer)) or not 0 <= int(leader) < n:
                raise ValueError(f"leader must be a seat in 0..{n - 1}, got {leader!r}")
        self.config = config
        self.n = n
        self.roles = roles
        self.is_evil, self.knowledge, self.assassin, self._t = tables
        self.codec = self._t.codec
        self.leader = int(leader)
        self.quest = 0
        self.rejections = 0
        self.team: tuple[int, ...] = ()
        # Tuples, not lists: views share them without copying (append = rebuild, at most 25 times).
        self.proposals: tuple = ()
        self.quests: tuple = ()
        self._cards: list[tuple[int, tuple, tuple]] = []  # (quest, seats, fails) batches, see ``my_cards``
        self._cards_by_seat: tuple | None = None
        self.winner: str | None = None
        self.end_reason: str | None = None
        self.assassin_target: int | None = None
        self.steps = 0
        self.history = 0  # bumped whenever the public history (proposals, quests, Lady, end) grows
        self._queue: list[int] = []
        self._votes: list[bool] = [False] * n
        self._fails = 0
        self._wins = self._losses = 0
        self.log: list[tuple] = []
        self._rendered: dict[int, tuple[int, list[str]]] = {}
        self._public_text: dict[int, str] = {}
        self.feature_cache: list | None = None  # observation.py's per-game caches
        self.body_cache: dict[int, tuple[int, str]] = {}
        # Lady of the Lake: the player to the right of the first leader (the leader passes clockwise).
        if config.lady_of_the_lake:
            self.lady: int | None = (self.leader - 1) % n
            self.lady_holders: tuple[int, ...] = (self.lady,)
            self.lady_results: list[list[tuple[int, bool]]] | tuple = [[] for _ in range(n)]
        else:
            self.lady, self.lady_holders, self.lady_results = None, (), self._t.no_lady
        self._start_proposal()

    @classmethod
    def deal(cls, config: AvalonConfig, rng: np.random.Generator) -> AvalonGame:
        """Random roles and first leader from ``rng``."""
        roles = config.roles_in_play()
        order = rng.permutation(config.num_players)
        return cls(config, tuple(roles[i] for i in order), int(rng.integers(config.num_players)))

    # -- records --------------------------------------------------------------------------
    def my_cards(self, seat: int) -> tuple[tuple[int, bool], ...]:
        """``seat``'s own quest cards ``(quest, fail)`` so far."""
        by_seat = self._cards_by_seat
        if by_seat is None or by_seat[0] != len(self._cards):  # cards are played at most 5 times a game
            per_seat: list[list[tuple[int, bool]]] = [[] for _ in range(self.n)]
            for q, seats, fails in self._cards:
                for s, f in zip(seats, fails):
                    per_seat[s].append((q, f))
            by_seat = self._cards_by_seat = (len(self._cards), tuple(tuple(c) for c in per_seat))
        return by_seat[1][seat]

    @property
    def cards(self) -> list[list[tuple[int, bool]]]:
        """Every seat's own quest cards ``(quest, fail)``."""
        return [list(self.my_cards(s)) for s in range(self.n)]

    def seat_lines(self, seat: int) -> list[str]:
        """The transcript lines ``seat`` may read: its night knowledge, every public entry and its
        own hidden choices (rendered incrementally; ``-1`` is the spectator's view; the returned list
        is shared, do not modify)."""
        done, lines = self._rendered.get(seat, (0, None))
        if lines is None:
            lines = [self._night_line(seat)]
        log = self.log
        if done < len(log):
            public = self._public_text
            for i in range(done, len(log)):
                e = log[i]
                scope = e[0]
                if scope == -1:  # public: rendered once, shared by every seat
                    line = public.get(i)
                    if line is None:
                        line = public[i] = _RENDER[e[1]](self, *e[2:])
                    lines.append(line)
                elif scope == seat:
                    lines.append(_RENDER[e[1]](self, *e[2:]))
                elif scope == -2 and seat >= 0:  # one entry for many seats' own hidden choices
                    line = _RENDER[e[1]](self, seat, *e[2:])
                    if line:
                        lines.append(line)
        self._rendered[seat] = (len(log), lines)
        return lines

    @property
    def lines(self) -> list[list[str]]:
        """Every seat's transcript lines."""
        return [self.seat_lines(s) for s in range(self.n)]

    @property
    def public_lines(self) -> list[str]:
        """The public transcript (what a spectator sees)."""
        return self.seat_lines(-1)[1:]

    @property
    def events(self) -> list[dict[str, Any]]:
        """The public entries as dicts: ``type``, ``text`` and the entry's data."""
        return [
            {"type": e[1], "text": _RENDER[e[1]](self, *e[2:]), **_EVENT_DATA[e[1]](*e[2:])}
            for e in self.log
            if e[0] == -1
        ]

    def _night_line(self, s: int) -> str:
        if s < 0:
            return ""
        role, k = self.roles[s], self.knowledge[s]
        side = "evil" if self.is_evil[s] else "good"
        parts = [f"Night: you are Player {s}, {ROLE_TITLES[role]} ({side})."]
        if k.evil:
            parts.append("You see as evil: " + ", ".join(f"Player {i}" for i in sorted(k.evil)) + ".")
        if k.good:
            parts.append("You see as good: " + ", ".join(f"Player {i}" for i in sorted(k.good)) + ".")
        if k.merlin_candidates:
            seats = ", ".join(f"Player {i}" for i in sorted(k.merlin_candidates))
            if "morgana" in self.config.special_roles:
                parts.append(f"Merlin is among: {seats} (Morgana appears the same).")
            else:
                parts.append(f"Merlin is {seats}.")
        if not (k.evil or k.good or k.merlin_candidates):
            parts.append("You see no one.")
        if self.lady is not None and self.lady_holders[0] == s:
            parts.append("You hold the Lady of the Lake.")
        return " ".join(parts)

    # -- phase machine ----------------------------------------------------------------------
    @property
    def team_size(self) -> int:
        return self.config.team_sizes[self.quest]

    @property
    def fails_needed(self) -> int:
        return self.config.fails_needed[self.quest]

    @property
    def done(self) -> bool:
        return self.phase == "end"

    def _start_proposal(self) -> None:
        t, q = self._t, self.quest
        n, rounds = self.n, t.rounds
        self.log.append((-1, "round", q, self.rejections, self.leader, t.sizes[q], t.fails[q]))
        self.team = ()
        if rounds:
            self.phase = "discussion"
            self._queue = [(self.leader + i) % n for i in range(n)] * rounds
            self.actor = self._queue.pop(0)
        else:
            self.phase = "proposal"
            self.actor = self.leader

    def _finish(self, winner: str, reason: str) -> None:
        self.history += 1
        self.phase, self.winner, self.end_reason = "end", winner, reason
        self.actor = -1
        self.log.append((-1, "end", winner, reason, self.roles))

    def pending(self) -> tuple[int, ...]:
        """Seats whose choice is due now, in the order the engine takes them: every voter or quest
        member still to play (hidden choices, simultaneous in the parallel view), else the actor."""
        if self.phase in ("vote", "quest"):
            return (self.actor, *self._queue)
        return () if self.phase == "end" else (self.actor,)

    def legal_codes(self, seat: int, *, simultaneous: bool = False) -> tuple[int, ...]:
        """Legal flat codes for ``seat`` now (empty unless it is acting, or with ``simultaneous``
        one of the seats in :meth:`pending`). Depends only on public state and the seat's own role
        and knowledge."""
        if seat != self.actor and not (simultaneous and seat in self.pending()):
            return ()
        c, phase = self.codec, self.phase
        if phase == "vote":
            return c.VOTES
        if phase == "discussion":
            return _speech_codes(self.n, seat)
        if phase == "proposal":
            return team_codes(self.n, self.config.team_sizes[self.quest])
        if phase == "quest":
            if self.is_evil[seat] or not self.config.good_must_succeed:
                return c.CARDS
            return c.SUCCESS_ONLY
        if phase == "assassination":
            known = self.knowledge[seat].evil
            return tuple(c.assassinate(j) for j in range(self.n) if j != seat and j not in known)
        if phase == "lady":
            return tuple(c.lady(j) for j in range(self.n) if j not in self.lady_holders)
        return ()

    def step(self, code: int, speech: str | None = None) -> None:
        """The acting seat plays ``code``. In discussion, ``speech`` (free text) may replace a speech act."""
        seat, c, phase = self.actor, self.codec, self.phase
        if phase == "vote":
            if code != c.APPROVE and code != c.REJECT:
                raise IllegalAction(f"{_describe(c, code)!r} is not legal for Player {seat} in phase vote")
            self.steps += 1
            self._cast_vote(seat, code == c.APPROVE)
            if self._queue:
                self.actor = self._queue.pop(0)
            else:
                self._count_votes(tuple(self._votes))
            return
        if phase == "quest":
            if code not in self.legal_codes(seat):
                raise IllegalAction(f"{_describe(c, code)!r} is not legal for Player {seat} in phase quest")
            self.steps += 1
            self._play_card(seat, code == c.FAIL)
            if self._queue:
                self.actor = self._queue.pop(0)
            else:
                self._quest_done()
            return
        if phase == "proposal":
            t = self._t
            team = t.team_of[self.quest].get(code)
            if team is None:
                raise IllegalAction(f"{_describe(c, code)!r} is not legal for Player {seat} in phase proposal")
            self.steps += 1
            self.team = team
            self.log.append((-1, "proposal", seat, team))
            if t.auto_approve and self.rejections == 4:
                self.log.append((-1, "vote_result", None, True))
                self.proposals += ((self.quest, self.leader, team, None, True),)
                self.history += 1
                self._approved()
                return
            self.phase = "vote"
            self._queue = list(t.vote_order[self.leader][1:])
            self.actor = self.leader
            return
        if phase == "end":
            raise IllegalAction("the game is over")
        if phase == "discussion":
            if speech is None:
                if code not in _speech_codes(self.n, seat):
                    raise IllegalAction(f"{_describe(c, code)!r} is not a speech act Player {seat} may use")
                speech = c.speech_text(code)
            self.steps += 1
            self.log.append((-1, "speech", seat, speech))
            if self._queue:
                self.actor = self._queue.pop(0)
            else:
                self.phase, self.actor = "proposal", self.leader
            return
        if code not in self.legal_codes(seat):
            raise IllegalAction(f"{_describe(c, code)!r} is not legal for Player {seat} in phase {phase}")
        self.steps += 1
        if phase == "assassination":
            target = code - c.ASSASSINATE0
            self.assassin_target = target
            hit = self.roles[target] == "merlin"
            self.log.append((-1, "assassination", seat, target, hit))
            self._finish("evil" if hit else "good", "assassination_hit" if hit else "assassination_miss")
            return
        if phase == "lady":
            target = code - c.LADY0
            evil = self.is_evil[target]
            self.lady_results[seat].append((target, evil))
            self.log.append((-1, "lady", seat, target))
            self.log.append((seat, "lady_result", target, evil))
            self.lady = target
            self.lady_holders += (target,)
            self.history += 1
            self.quest += 1
            self._start_proposal()

    def play_votes(self, codes) -> None:
        """Every vote of the current proposal at once, in the order :meth:`pending` lists the voters
        (the parallel view's step; same records as one :meth:`step` per voter)."""
        queue = self._queue
        if self.phase != "vote" or len(codes) != len(queue) + 1:
            raise IllegalAction(f"play_votes needs {len(self.pending())} votes in phase {self.phase}, got {codes!r}")
        n, leader = self.n, self.leader
        if len(codes) == n:  # the whole round (the usual case): a table lookup
            key = tuple(codes)
            table = self._t.vote_table[leader]
            entry = table.get(key)
            if entry is None:
                entry = table[key] = self._t.votes_entry(leader, key)
            mine, votes = entry
            seats = self._t.vote_order[leader]
        else:
            c = self.codec
            if codes.count(c.APPROVE) + codes.count(c.REJECT) != len(codes):
                raise IllegalAction(f"play_votes takes APPROVE or REJECT codes, got {codes!r}")
            mine = tuple([code == c.APPROVE for code in codes])
            seats = (self.actor, *queue)
            for seat, v in zip(seats, mine):
                self._votes[seat] = v
            votes = tuple(self._votes)
        self.log.append((-2, "my_votes", seats, mine))
        self.steps += len(mine)
        self._count_votes(votes)

    def play_cards(self, codes) -> None:
        """Every quest card of the current team at once, in the order :meth:`pending` lists the members."""
        queue = self._queue
        if self.phase != "quest" or len(codes) != len(queue) + 1:
            raise IllegalAction(f"play_cards needs {len(self.pending())} cards in phase {self.phase}, got {codes!r}")
        t = self._t
        key = tuple(codes)
        entry = t.card_table.get(key)
        if entry is None:
            entry = t.card_table[key] = t.cards_entry(key)
        mine, fails = entry
        seats = self.team if len(codes) == len(self.team) else (self.actor, *queue)
        if fails and t.must_succeed:
            is_evil = self.is_evil
            bad = [s for s, f in zip(seats, mine) if f and not is_evil[s]]
            if bad:
                raise IllegalAction(f"'QUEST: fail' is not legal for Player {bad[0]} in phase quest")
        q = self.quest
        self._cards.append((q, seats, mine))
        self.log.append((-2, "my_cards", q, seats, mine))
        self._fails += fails
        self.steps += len(mine)
        self._quest_done()

    def _cast_vote(self, seat: int, approve: bool) -> None:
        self._votes[seat] = approve
        self.log.append((seat, "my_vote", approve))

    def _count_votes(self, votes: tuple[bool, ...]) -> None:
        approved = 2 * votes.count(True) > self.n  # strict majority; a tie rejects
        leader = self.leader
        self.log.append((-1, "vote_result", votes, approved))
        self.proposals += ((self.quest, leader, self.team, votes, approved),)
        self.history += 1
        self.leader = self._t.next_seat[leader]
        if approved:
            self.rejections = 0
            self.phase = "quest"
            self._fails = 0
            team = self.team
            self.actor = team[0]
            self._queue = list(team[1:])
            return
        self.rejections += 1
        if self.rejections == 5:
            self._finish("evil", "five_rejections")
            return
        self._start_proposal()

    def _play_card(self, seat: int, fail: bool) -> None:
        self._fails += fail
        self._cards.append((self.quest, (seat,), (fail,)))
        self.log.append((seat, "card", self.quest, fail))

    def _quest_done(self) -> None:
        q = self.quest
        succeeded = self._fails < self._t.fails[q]
        self.quests += ((self.team, self._fails, succeeded),)
        self.history += 1
        self.log.append((-1, "quest_result", q, self.team, self._fails, succeeded))
        if succeeded:
            self._wins += 1
        else:
            self._losses += 1
        if self._losses == 3:
            self._finish("evil", "three_fails")
        elif self._wins == 3:
            if self.assassin is None:
                self._finish("good", "three_successes_no_assassin")
            else:
                self.phase, self.actor = "assassination", self.assassin
                self.log.append((-1, "assassination_start", self.assassin))
        elif self.lady is not None and 1 <= q <= 3:
            # Official: after quests 2, 3 and 4 the holder examines a player, before the next team.
            self.phase, self.actor, self.team = "lady", self.lady, ()
        else:
            self.quest = q + 1
            self._start_proposal()

    def _approved(self) -> None:
        self.rejections = 0
        self.leader = (self.leader + 1) % self.n
        self.phase = "quest"
        self._fails = 0
        self.actor, *self._queue = self.team

    # -- views ----------------------------------------------------------------------------
    def view(self, seat: int, *, simultaneous: bool = False) -> SeatView:
        """The information set of ``seat`` (safe to hand to that seat's player); ``simultaneous``:
        its legal actions as one of the seats in :meth:`pending` (parallel view)."""
        return SeatView(
            seat=seat,
            role=self.roles[seat],
            evil=self.is_evil[seat],
            knowledge=self.knowledge[seat],
            config=self.config,
            phase=self.phase,
            leader=self.leader,
            quest=self.quest,
            rejections=self.rejections,
            team=self.team,
            proposals=self.proposals,
            quests=self.quests,
            my_cards=self.my_cards(seat),
            legal=self.legal_codes(seat, simultaneous=simultaneous),
            lady=self.lady,
            lady_holders=self.lady_holders,
            lady_results=tuple(self.lady_results[seat]),
        )

    def record(self) -> dict[str, Any]:
        """A JSON record of the game: config, public events, and roles once the game is over."""
        return {
            "config": self.config.to_dict(),
            "events": self.events,
            "done": self.done,
            "winner": self.winner,
            "end_reason": self.end_reason,
            "roles": list(self.roles) if self.done else None,
        }


# -- rendering of log entries (one function per kind: line text, public event data) ----------------
def _votes_text(game: AvalonGame, votes, approved) -> str:
    if votes is None:
        return "Fifth proposal of the round: the team is approved without a vote."
    yes = sum(votes)
    shown = ", ".join(f"P{s} {'approve' if v else 'reject'}" for s, v in enumerate(votes))
    return f"Votes: {shown} -> {'APPROVED' if approved else 'REJECTED'} ({yes}-{len(votes) - yes})."


_RENDER = {
    "round": lambda g, q, p, leader, size, fails: (
        f"Quest {q + 1}, proposal {p + 1}/5: Player {leader} leads; the team needs {size} players; "
        f"{fails} Fail card(s) fail it."
    ),
    "speech": lambda g, seat, text: f"Player {seat} says: {text}" if text else f"Player {seat} passes.",
    "proposal": lambda g, seat, team: f"Player {seat} proposes team [{', '.join(map(str, team))}].",
    "vote_result": _votes_text,
    "my_vote": lambda g, approve: f"You voted {'approve' if approve else 'reject'} (hidden until all have voted).",
    "card": lambda g, q, fail: f"You played {'FAIL' if fail else 'SUCCESS'} on quest {q + 1}.",
    # Batched hidden choices (``play_votes`` / ``play_cards``): each seat reads only its own.
    "my_votes": lambda g, seat, seats, votes: (
        _RENDER["my_vote"](g, votes[seats.index(seat)]) if seat in seats else ""
    ),
    "my_cards": lambda g, seat, q, seats, fails: (
        _RENDER["card"](g, q, fails[seats.index(seat)]) if seat in seats else ""
    ),
    "quest_result": lambda g, q, team, fails, ok: (
        f"Quest {q + 1} {'SUCCEEDED' if ok else 'FAILED'} with {fails} Fail card(s)."
    ),
    "assassination_start": lambda g, seat: (
        f"Three quests succeeded. The Assassin, Player {seat}, must now name Merlin."
    ),
    "assassination": lambda g, seat, target, hit: (
        f"The Assassin names Player {target}: {'that is Merlin' if hit else 'not Merlin'}."
    ),
    "lady": lambda g, seat, target: (
        f"Player {seat} uses the Lady of the Lake on Player {target}, who now holds her."
    ),
    "lady_result": lambda g, target, evil: (
        f"The Lady of the Lake shows you that Player {target} is {'EVIL' if evil else 'GOOD'}."
    ),
    "end": lambda g, winner, reason, roles: (
        f"Game over: {winner.capitalize()} wins ({reason.replace('_', ' ')}). Roles: "
        + ", ".join(f"P{s} {ROLE_TITLES[r]}" for s, r in enumerate(roles))
        + "."
    ),
}
_EVENT_DATA = {
    "round": lambda q, p, leader, size, fails: {"quest": q, "proposal": p, "leader": leader, "team_size": size},
    "speech": lambda seat, text: {"seat": seat, "speech": text},
    "proposal": lambda seat, team: {"seat": seat, "team": list(team)},
    "vote_result": lambda votes, approved: {"votes": None if votes is None else list(votes), "approved": approved},
    "quest_result": lambda q, team, fails, ok: {"quest": q, "team": list(team), "fails": fails, "succeeded": ok},
    "assassination_start": lambda seat: {"seat": seat},
    "assassination": lambda seat, target, hit: {"seat": seat, "target": target, "hit": hit},
    "lady": lambda seat, target: {"seat": seat, "target": target},
    "end": lambda winner, reason, roles: {"winner": winner, "reason": reason, "roles": list(roles)},
}


def _describe(codec: ActionCodec, code: Any) -> str:
    try:
        return codec.describe(code)
    except (TypeError, ValueError):
        return repr(code)


_SEATS = {n: frozenset(range(n)) for n in range(5, 11)}


@cache
def _deal_tables(config: AvalonConfig, roles: tuple[str, ...]):
    """``(is_evil, knowledge, assassin seat, rule tables)`` of a deal, or ``None`` if ``roles`` is
    not a deal of ``config`` (deals repeat: 60 role arrangements at 5 players)."""
    if sorted(roles) != sorted(config.roles_in_play()):
        return None
    is_evil = tuple(r in EVIL_ROLES for r in roles)
    knowledge = tuple(night_knowledge(config, roles, s) for s in range(len(roles)))
    return is_evil, knowledge, roles.index("assassin") if "assassin" in roles else None, _tables(config)


class _Tables:
    """Per-rules lookup tables the hot paths read (built once per config)."""

    def __init__(self, config: AvalonConfig):
        n = config.num_players
        self.sizes, self.fails = config.team_sizes, config.fails_needed
        self.rounds = config.discussion_rounds
        self.auto_approve = config.hammer == "auto_approve"
        # Per quest: legal team code -> members.
        self.team_of = tuple(
            {code: tuple(i for i in range(n) if (code - 1) >> i & 1) for code in team_codes(n, k)}
            for k in self.sizes
        )
        self.vote_order = tuple(tuple((lead + i) % n for i in range(n)) for lead in range(n))
        # Per leader: vote codes in voting order -> (each voter's vote, votes by seat); filled lazily.
        self.vote_table: tuple[dict, ...] = tuple({} for _ in range(n))
        self.card_table: dict[tuple[int, ...], tuple[tuple[bool, ...], int]] = {}  # card codes -> (fails, count)
        self.must_succeed = config.good_must_succeed
        self.next_seat = tuple((s + 1) % n for s in range(n))
        self.codec = _codec(n)
        self.no_lady = ((),) * n
        # Filled by arena.avalon.observation: the rules summary and legal-mask arrays of these rules.
        self.summary: str | None = None
        self.masks: dict[tuple[int, ...], Any] = {}
        self.instructions: dict[tuple, str] = {}


    def votes_entry(self, leader: int, codes: tuple[int, ...]) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
        c = self.codec
        bad = [x for x in codes if x != c.APPROVE and x != c.REJECT]
        if bad:
            raise IllegalAction(f"play_votes takes APPROVE ({c.APPROVE}) or REJECT ({c.REJECT}) codes, got {bad!r}")
        mine = tuple(x == c.APPROVE for x in codes)
        k = len(codes) - leader  # voters start at the leader: rotate to seat order
        return mine, mine[k:] + mine[:k]

    def cards_entry(self, codes: tuple[int, ...]) -> tuple[tuple[bool, ...], int]:
        c = self.codec
        bad = [x for x in codes if x != c.SUCCESS and x != c.FAIL]
        if bad:
            raise IllegalAction(f"play_cards takes SUCCESS ({c.SUCCESS}) or FAIL ({c.FAIL}) codes, got {bad!r}")
        mine = tuple(x == c.FAIL for x in codes)
        return mine, sum(mine)


@cache
def _tables(config: AvalonConfig) -> _Tables:
    return _Tables(config)


@cache
def _speech_codes(n: int, seat: int) -> tuple[int, ...]:
    c = _codec(n)
    others = [j for j in range(n) if j != seat]
    return (c.PASS, c.CLAIM_GOOD) + tuple(c.accuse(j) for j in others) + tuple(c.vouch(j) for j in others)
