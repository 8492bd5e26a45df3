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
from functools import cache, lru_cache
from typing import Any

import numpy as np

from .actions import ActionCodec
from .rules import EVIL_ROLES, ROLE_TITLES, AvalonConfig, Knowledge, night_knowledge

__all__ = ["AvalonGame", "GameRecords", "SeatView", "IllegalAction", "PHASES", "team_codes"]

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
    entries, -2 for one entry of several seats' own hidden choices, else the one seat that may see
    it). Everything else is derived from the log when read, and kept up to date incrementally:
    :attr:`proposals`, :attr:`quests`, :meth:`my_cards`, transcript lines and event dicts
    (:meth:`seat_lines`, :attr:`public_lines`, :attr:`events`); a game that nobody reads costs no
    string formatting and no bookkeeping beyond the log.

    Example:
        >>> g = AvalonGame.deal(AvalonConfig(5), np.random.default_rng(0))
        >>> g.phase, g.actor == g.leader
        ('discussion', True)
    """

    __slots__ = (
        "config", "n", "roles", "is_evil", "knowledge", "assassin", "_t", "codec", "leader", "quest",
        "rejections", "team", "winner", "end_reason", "assassin_target", "steps", "_order", "_next", "_votes",
        "_fails", "_wins", "_losses", "log", "_read", "lady", "lady_holders", "lady_results", "phase", "actor",
    )  # fmt: skip

    def __init__(self, config: AvalonConfig, roles: tuple[str, ...] | list[str], leader: int = 0):
        n = config.num_players
        roles = tuple(roles)
        tables = config._deals.get(roles)  # per config object: no hashing of the config per game
        if tables is None:
            tables = _deal_tables(config, roles)
            if tables is None:
                raise ValueError(f"roles {roles!r} are not a deal of {config.roles_in_play()!r}")
            config._deals[roles] = tables
        if leader not in _SEATS[n]:
            if not isinstance(leader, (int, np.integer)) or not 0 <= int(leader) < n:
                raise ValueError(f"leader must be a seat in 0..{n - 1}, got {leader!r}")
        self.config = config
        self.n = n
        self.roles = roles
        self.is_evil, self.knowledge, self.assassin, t = tables
        self._t = t
        self.codec = t.codec
        self.leader = leader = leader if type(leader) is int else int(leader)
        self.quest = 0
        self.rejections = 0
        self.winner: str | None = None
        self.end_reason: str | None = None
        self.assassin_target: int | None = None
        self.steps = 0
        self._votes: list[bool] = []  # votes cast one by one this round, by seat
        self._fails = 0
        self._wins = self._losses = 0
        self._read: GameRecords | None = None  # made on the first read
        # Lady of the Lake: the player to the right of the first leader (the leader passes clockwise).
        if config.lady_of_the_lake:
            self.lady: int | None = (leader - 1) % n
            self.lady_holders: tuple[int, ...] = (self.lady,)
            self.lady_results: list[list[tuple[int, bool]]] | tuple = [[] for _ in range(n)]
        else:
            self.lady, self.lady_holders, self.lady_results = None, (), t.no_lady
        self.log: list[tuple] = []
        # Seats due to act in turn (speakers, voters, quest members): ``_order[_next - 1:]``, the first
        # of them the actor.
        self._order: tuple[int, ...] = ()
        self._next = 0
        self._start_proposal()

    @classmethod
    def deal(cls, config: AvalonConfig, rng: np.random.Generator) -> AvalonGame:
        """Random roles and first leader from ``rng``."""
        roles = config.roles_in_play()
        order = rng.permutation(config.num_players).tolist()  # plain ints index the tuple faster
        return cls(config, tuple([roles[i] for i in order]), int(rng.integers(config.num_players)))

    # -- records (derived from the log on read) ------------------------------------------
    @property
    def records(self) -> GameRecords:
        """The records derived from the log, brought up to date (see :class:`GameRecords`)."""
        r = self._read
        if r is None:
            r = self._read = GameRecords(self.n)
        if r.synced != len(self.log):
            r.sync(self.log)
        return r

    @property
    def proposals(self) -> tuple:
        """Resolved proposals ``(quest, leader, team, votes, approved)``; ``votes`` is a tuple of
        bools by seat (True = approve) or ``None`` for an auto-approved team."""
        return self.records.proposals

    @property
    def quests(self) -> tuple:
        """Played quests ``(team, fails, succeeded)``."""
        return self.records.quests

    @property
    def history(self) -> int:
        """Grows whenever the public history does (a proposal resolved, a quest, the Lady, the end)."""
        return self.records.history

    def my_cards(self, seat: int) -> tuple[tuple[int, bool], ...]:
        """``seat``'s own quest cards ``(quest, fail)`` so far."""
        return self.records.my_cards(seat)

    @property
    def cards(self) -> list[list[tuple[int, bool]]]:
        """Every seat's own quest cards ``(quest, fail)``."""
        return [list(self.my_cards(s)) for s in range(self.n)]

    def seat_lines(self, seat: int) -> list[str]:
        """The transcript lines ``seat`` may read: its night knowledge, every public entry and its
        own hidden choices (``-1`` is the spectator's view; the returned list is shared, do not
        modify). Every seat's lines are extended together, in one pass over the log entries added
        since the last read: a public line is rendered once and appended to each seat's list."""
        r = self._read
        if r is None:
            r = self.records
        if r.rendered != len(self.log):
            self._render_lines(r)
        return r.lines[seat]

    def _render_lines(self, r: GameRecords) -> None:
        log, memo, by_seat = self.log, _LINES, r.lines
        if not by_seat:  # first read: each seat's transcript opens with its night knowledge
            by_seat += [[self._night_line(s)] for s in range(self.n)]
            by_seat.append([""])  # the spectator, ``by_seat[-1]``: no night line
        for i in range(r.rendered, len(log)):
            e = log[i]
            scope = e[0]
            if scope == -2:  # batched hidden choices: each seat reads only its own
                kind = e[1]
                for s in e[2] if kind == "my_votes" else e[3]:
                    by_seat[s].append(_RENDER[kind](self, s, *e[2:]))
                continue
            line = memo.get(e)
            if line is None:
                line = _RENDER[e[1]](self, *e[2:])
                if len(memo) < _LINES_MAX:
                    memo[e] = line
            if scope == -1:
                for lines in by_seat:
                    lines.append(line)
            elif line:
                by_seat[scope].append(line)
        r.rendered = len(log)

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
        memo = self._t.night_lines  # deals repeat: one line per deal, seat and first Lady holder
        key = (self.roles, s, self.lady_holders[:1])
        line = memo.get(key)
        if line is None:
            line = self._night_text(s)
            if len(memo) < 16384:
                memo[key] = line
        return line

    def _night_text(self, s: int) -> str:
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
        t, leader = self._t, self.leader
        self.log.append(t.round_entry[self.quest][self.rejections][leader])
        self.team = ()
        self.actor = leader
        if t.rounds:
            self.phase = "discussion"
            self._order, self._next = t.speech_order[leader], 1
        else:
            self.phase = "proposal"

    def _finish(self, winner: str, reason: str) -> None:
        self.phase, self.winner, self.end_reason = "end", winner, reason
        self.actor = -1
        self.log.append((-1, "end", winner, reason, self.roles))

    def pending(self) -> tuple[int, ...]:
        """Seats whose choice is due now, in the order the engine takes them: every voter or quest
        member still to play (hidden choices, simultaneous in the parallel view), else the actor."""
        if self.phase in ("vote", "quest"):
            return self._order[self._next - 1 :]
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
        seat, phase = self.actor, self.phase
        if phase == "proposal":
            t = self._t
            team = t.team_of[self.quest].get(code)
            if team is None:
                raise IllegalAction(f"{_describe(self.codec, code)!r} is not legal for Player {seat} in phase proposal")
            self.steps += 1
            self.team = team
            self.log.append((-1, "proposal", seat, team))
            if self.rejections == 4 and t.auto_approve:
                self.log.append((-1, "vote_result", None, True))
                self._approved()
                return
            self.phase = "vote"  # the leader (the actor) votes first
            self._order, self._next = t.vote_order[seat], 1
            return
        if phase == "vote":
            c = self.codec
            if code != c.APPROVE and code != c.REJECT:
                raise IllegalAction(f"{_describe(c, code)!r} is not legal for Player {seat} in phase vote")
            self.steps += 1
            approve = code == c.APPROVE
            if self._next == 1:  # the round's first vote
                self._votes = [False] * self.n
            self._votes[seat] = approve
            self.log.append((seat, "my_vote", approve))
            order, nxt = self._order, self._next
            if nxt < len(order):
                self.actor, self._next = order[nxt], nxt + 1
            else:
                self._count_votes(tuple(self._votes))
            return
        if phase == "quest":
            c = self.codec
            fail = code == c.FAIL
            if not (code == c.SUCCESS or (fail and (self.is_evil[seat] or not self._t.must_succeed))):
                raise IllegalAction(f"{_describe(c, code)!r} is not legal for Player {seat} in phase quest")
            self.steps += 1
            self._fails += fail
            self.log.append((seat, "card", self.quest, fail))
            order, nxt = self._order, self._next
            if nxt < len(order):
                self.actor, self._next = order[nxt], nxt + 1
            else:
                self._quest_done(self._fails)
            return
        if phase == "end":
            raise IllegalAction("the game is over")
        c = self.codec
        if phase == "discussion":
            if speech is None:
                if code not in _speech_codes(self.n, seat):
                    raise IllegalAction(f"{_describe(c, code)!r} is not a speech act Player {seat} may use")
                speech = _speech_texts(self.n)[code]
            self.steps += 1
            self.log.append((-1, "speech", seat, speech))
            order, nxt = self._order, self._next
            if nxt < len(order):
                self.actor, self._next = order[nxt], nxt + 1
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
            self.quest += 1
            self._start_proposal()

    def play_votes(self, codes) -> None:
        """Every vote of the current proposal at once, in the order :meth:`pending` lists the voters
        (the parallel view's step; same records as one :meth:`step` per voter)."""
        if self.phase == "vote" and self._next == 1:  # the whole round (the usual case)
            t, leader = self._t, self.leader
            table = t.vote_table[leader]
            key = tuple(codes)
            entry = table.get(key)  # known rounds carry their records and outcome
            if entry is None:  # a new round: checked (length, codes) before it is kept
                if len(key) != self.n:
                    raise IllegalAction(f"play_votes needs {self.n} votes in phase vote, got {codes!r}")
                entry = table[key] = t.votes_entry(leader, key)
            records, votes, approved = entry
            self.log += records
            self.steps += t.n
            self._vote_done(votes, approved)
            return
        order, nxt = self._order, self._next
        if self.phase != "vote" or len(codes) != len(order) - nxt + 1:
            raise IllegalAction(f"play_votes needs {len(self.pending())} votes in phase {self.phase}, got {codes!r}")
        c = self.codec
        if codes.count(c.APPROVE) + codes.count(c.REJECT) != len(codes):
            raise IllegalAction(f"play_votes takes APPROVE or REJECT codes, got {codes!r}")
        mine = tuple([code == c.APPROVE for code in codes])
        seats = order[nxt - 1 :]
        for seat, v in zip(seats, mine):
            self._votes[seat] = v
        self.log.append((-2, "my_votes", seats, mine))
        self.steps += len(mine)
        self._count_votes(tuple(self._votes))

    def play_cards(self, codes) -> None:
        """Every quest card of the current team at once, in the order :meth:`pending` lists the members."""
        order, nxt = self._order, self._next
        if self.phase != "quest" or len(codes) != len(order) - nxt + 1:
            raise IllegalAction(f"play_cards needs {len(self.pending())} cards in phase {self.phase}, got {codes!r}")
        t = self._t
        key = tuple(codes)
        entry = t.card_table.get(key)
        if entry is None:
            entry = t.card_table[key] = t.cards_entry(key)
        mine, fails = entry
        seats = order if nxt == 1 else order[nxt - 1 :]
        if fails and t.must_succeed:
            is_evil = self.is_evil
            bad = [s for s, f in zip(seats, mine) if f and not is_evil[s]]
            if bad:
                raise IllegalAction(f"'QUEST: fail' is not legal for Player {bad[0]} in phase quest")
        self.log.append((-2, "my_cards", self.quest, seats, mine))
        self.steps += len(mine)
        self._quest_done(self._fails + fails)

    def _count_votes(self, votes: tuple[bool, ...]) -> None:
        approved = 2 * votes.count(True) > self.n  # strict majority; a tie rejects
        self.log.append((-1, "vote_result", votes, approved))
        self._vote_done(votes, approved)

    def _vote_done(self, votes: tuple[bool, ...], approved: bool) -> None:
        team = self.team
        self.leader = self._t.next_seat[self.leader]
        if approved:
            self.rejections = 0
            self.phase = "quest"
            self._fails = 0
            self.actor = team[0]
            self._order, self._next = team, 1
            return
        self.rejections += 1
        if self.rejections == 5:
            self._finish("evil", "five_rejections")
            return
        self._start_proposal()

    def _quest_done(self, fails: int) -> None:
        t, q = self._t, self.quest
        succeeded = fails < t.fails[q]
        log = self.log
        log.append((-1, "quest_result", q, self.team, fails, succeeded))
        if succeeded:
            self._wins += 1
            if self._wins == 3:
                if self.assassin is None:
                    self._finish("good", "three_successes_no_assassin")
                else:
                    self.phase, self.actor = "assassination", self.assassin
                    log.append((-1, "assassination_start", self.assassin))
                return
        else:
            self._losses += 1
            if self._losses == 3:
                self._finish("evil", "three_fails")
                return
        if self.lady is not None and 1 <= q <= 3:
            # Official: after quests 2, 3 and 4 the holder examines a player, before the next team.
            self.phase, self.actor, self.team = "lady", self.lady, ()
            return
        self.quest = q + 1
        self._start_proposal()

    def _approved(self) -> None:
        self.rejections = 0
        self.leader = (self.leader + 1) % self.n
        self.phase = "quest"
        self._fails = 0
        self.actor = self.team[0]
        self._order, self._next = self.team, 1

    # -- views ----------------------------------------------------------------------------
    def view(self, seat: int, *, simultaneous: bool = False) -> SeatView:
        """The information set of ``seat`` (safe to hand to that seat's player); ``simultaneous``:
        its legal actions as one of the seats in :meth:`pending` (parallel view)."""
        r = self.records
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
            proposals=r.proposals,
            quests=r.quests,
            my_cards=r.my_cards(seat),
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


class GameRecords:
    """What readers derive from one game's log, brought up to date with only the entries added since
    the last read (the engine itself only appends to the log).

    ``proposals`` and ``quests`` are tuples (views share them without copying; appending rebuilds
    them, at most 25 and 5 times a game); ``history`` counts public-history entries (a resolved
    proposal, a quest, the Lady, the end); ``n_public`` counts public log entries; ``cards`` holds
    each seat's own cards ``(quest, fail)``. For transcripts (kept by :meth:`AvalonGame.seat_lines`,
    apart from ``synced``): ``lines`` (per seat, then the spectator last: its transcript lines),
    ``rendered`` (the log entries they cover), ``bodies`` (per seat: its lines joined into one text).
    ``cache`` belongs to the observation builders.
    """

    __slots__ = (
        "synced", "quest", "leader", "team", "proposals", "quests", "history", "cards", "n_cards", "n_public",
        "lines", "rendered", "bodies", "cache",
    )  # fmt: skip

    def __init__(self, n: int):
        self.synced = 0
        self.quest = self.leader = 0
        self.team: tuple[int, ...] = ()
        self.proposals: tuple = ()
        self.quests: tuple = ()
        self.history = 0
        self.cards: list[tuple[tuple[int, bool], ...]] = [()] * n
        self.n_cards = 0
        self.n_public = 0
        self.lines: list[list[str]] = []  # filled on the first transcript read
        self.rendered = 0
        self.bodies: dict[int, tuple[int, str]] = {}  # per seat: lines joined so far, their text
        self.cache: dict[str, Any] = {}

    def sync(self, log: list[tuple]) -> None:
        for i in range(self.synced, len(log)):
            e = log[i]
            scope, kind = e[0], e[1]
            if scope == -1:
                self.n_public += 1
                if kind == "round":
                    self.quest, self.leader = e[2], e[4]
                elif kind == "proposal":
                    self.team = e[3]
                elif kind == "vote_result":
                    self.proposals += ((self.quest, self.leader, self.team, e[2], e[3]),)
                    self.history += 1
                elif kind == "quest_result":
                    self.quests += (e[3:],)
                    self.history += 1
                elif kind == "lady" or kind == "end":
                    self.history += 1
            elif kind == "card":
                self.cards[scope] += ((e[2], e[3]),)
                self.n_cards += 1
            elif kind == "my_cards":  # every quest member's own card
                q = e[2]
                for s, fail in zip(e[3], e[4]):
                    self.cards[s] += ((q, fail),)
                self.n_cards += len(e[3])
        self.synced = len(log)

    def my_cards(self, seat: int) -> tuple[tuple[int, bool], ...]:
        return self.cards[seat]


# -- rendering of log entries (one function per kind: line text, public event data) ----------------
# Rendered lines by log entry: a line depends only on its entry, and entries repeat across games
# (rounds, proposals, vote outcomes, own votes and cards), so most lines are formatted once.
_LINES: dict[tuple, str] = {}
_LINES_MAX = 65536

def _votes_text(game: AvalonGame, votes, approved) -> str:
    return _votes_line(votes, approved)


@lru_cache(maxsize=8192)  # vote rounds repeat (2**n outcomes at n players)
def _votes_line(votes, approved) -> str:
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
        self.n = n
        self.vote_order = tuple(tuple((lead + i) % n for i in range(n)) for lead in range(n))
        self.speech_order = tuple(order * self.rounds for order in self.vote_order)
        # The "round" record of each (quest, rejections so far, leader), shared by every game.
        self.round_entry = tuple(
            tuple(tuple((-1, "round", q, p, lead, self.sizes[q], self.fails[q]) for lead in range(n)) for p in range(5))
            for q in range(5)
        )
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
        self.night_lines: dict[tuple, str] = {}
        self.own_vectors: dict[tuple, Any] = {}  # a seat's feature entries from the deal, per deal and seat


    def votes_entry(self, leader: int, codes: tuple[int, ...]) -> tuple[tuple, tuple[bool, ...], bool]:
        """A whole vote round led by ``leader``: its two records, the votes by seat, the outcome."""
        c = self.codec
        bad = [x for x in codes if x != c.APPROVE and x != c.REJECT]
        if bad:
            raise IllegalAction(f"play_votes takes APPROVE ({c.APPROVE}) or REJECT ({c.REJECT}) codes, got {bad!r}")
        mine = tuple(x == c.APPROVE for x in codes)
        k = len(codes) - leader  # voters start at the leader: rotate to seat order
        votes = mine[k:] + mine[:k]
        approved = 2 * votes.count(True) > self.n  # strict majority; a tie rejects
        records = ((-2, "my_votes", self.vote_order[leader], mine), (-1, "vote_result", votes, approved))
        return records, votes, approved

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
def _speech_texts(n: int) -> dict[int, str]:
    """What each speech act says aloud, by code."""
    c = _codec(n)
    return {code: c.speech_text(code) for code in range(c.PASS, c.LADY0)}


@cache
def _speech_codes(n: int, seat: int) -> tuple[int, ...]:
    c = _codec(n)
    others = [j for j in range(n) if j != seat]
    return (c.PASS, c.CLAIM_GOOD) + tuple(c.accuse(j) for j in others) + tuple(c.vouch(j) for j in others)
