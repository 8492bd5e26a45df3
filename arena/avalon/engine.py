"""The pure Avalon rules engine: one game's state, its legal actions and its per-seat records.

* ``AvalonGame`` - deal, legal actions (from a seat's information set only), ``step``, results.
* ``SeatView`` - everything one seat may know at one moment (what bots decide from).
* ``IllegalAction`` - raised by ``AvalonGame.step`` for an action the acting seat may not take.
* ``PHASES`` - ``discussion, proposal, vote, quest, assassination, end``.

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

PHASES = ("discussion", "proposal", "vote", "quest", "assassination", "end")


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

    Example:
        >>> g = AvalonGame.deal(AvalonConfig(5), np.random.default_rng(0))
        >>> g.phase, g.actor == g.leader
        ('discussion', True)
    """

    def __init__(self, config: AvalonConfig, roles: tuple[str, ...] | list[str], leader: int = 0):
        n = config.num_players
        roles = tuple(roles)
        if sorted(roles) != sorted(config.roles_in_play()):
            raise ValueError(f"roles {roles!r} are not a deal of {config.roles_in_play()!r}")
        if not 0 <= int(leader) < n:
            raise ValueError(f"leader must be a seat in 0..{n - 1}, got {leader!r}")
        self.config = config
        self.n = n
        self.codec = _codec(n)
        self.roles = roles
        self.is_evil = tuple(r in EVIL_ROLES for r in roles)
        self.knowledge = tuple(night_knowledge(config, roles, s) for s in range(n))
        self.assassin = roles.index("assassin") if "assassin" in roles else None
        self.leader = int(leader)
        self.quest = 0
        self.rejections = 0
        self.team: tuple[int, ...] = ()
        # Tuples, not lists: views share them without copying (append = rebuild, at most 25 times).
        self.proposals: tuple = ()
        self.quests: tuple = ()
        self.cards: list[list[tuple[int, bool]]] = [[] for _ in range(n)]
        self.winner: str | None = None
        self.end_reason: str | None = None
        self.assassin_target: int | None = None
        self.steps = 0
        self._queue: list[int] = []
        self._votes: list[bool] = []
        self._fails = 0
        # Per-seat transcripts, the public (spectator) transcript and structured public events.
        self.lines: list[list[str]] = [[] for _ in range(n)]
        self.public_lines: list[str] = []
        self.events: list[dict[str, Any]] = []
        for s in range(n):
            self.lines[s].append(self._night_line(s))
        self._start_proposal()

    @classmethod
    def deal(cls, config: AvalonConfig, rng: np.random.Generator) -> AvalonGame:
        """Random roles and first leader from ``rng``."""
        roles = list(config.roles_in_play())
        order = rng.permutation(config.num_players)
        return cls(config, tuple(roles[i] for i in order), int(rng.integers(config.num_players)))

    # -- records --------------------------------------------------------------------------
    def _public(self, kind: str, line: str, **data: Any) -> None:
        self.events.append({"type": kind, "text": line, **data})
        self.public_lines.append(line)
        for seat_lines in self.lines:
            seat_lines.append(line)

    def _private(self, seat: int, line: str) -> None:
        self.lines[seat].append(line)

    def _night_line(self, s: int) -> str:
        role, k = self.roles[s], self.knowledge[s]
        side = "evil" if self.is_evil[s] else "good"
        parts = [f"Night: you are Player {s}, {ROLE_TITLES[role]} ({side})."]
        if k.evil:
            parts.append("You see as evil: " + ", ".join(f"Player {i}" for i in sorted(k.evil)) + ".")
        if k.good:
            parts.append("You see as good: " + ", ".join(f"Player {i}" for i in sorted(k.good)) + ".")
        if k.merlin_candidates:
            parts.append(
                "Merlin is among: "
                + ", ".join(f"Player {i}" for i in sorted(k.merlin_candidates))
                + " (Morgana appears the same)."
            )
        if not (k.evil or k.good or k.merlin_candidates):
            parts.append("You see no one.")
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
        n, rounds = self.n, self.config.discussion_rounds
        self._public(
            "round",
            f"Quest {self.quest + 1}, proposal {self.rejections + 1}/5: Player {self.leader} "
            f"leads; the team needs {self.team_size} players; {self.fails_needed} Fail card(s) fail it.",
            quest=self.quest,
            proposal=self.rejections,
            leader=self.leader,
            team_size=self.team_size,
        )
        self.team = ()
        if rounds:
            self.phase = "discussion"
            self._queue = [(self.leader + i) % n for i in range(n)] * rounds
            self.actor = self._queue.pop(0)
        else:
            self.phase = "proposal"
            self.actor = self.leader

    def _finish(self, winner: str, reason: str) -> None:
        self.phase, self.winner, self.end_reason = "end", winner, reason
        self.actor = -1
        roles = ", ".join(f"P{s} {ROLE_TITLES[r]}" for s, r in enumerate(self.roles))
        self._public(
            "end",
            f"Game over: {winner.capitalize()} wins ({reason.replace('_', ' ')}). Roles: {roles}.",
            winner=winner,
            reason=reason,
            roles=list(self.roles),
        )

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
        if phase == "discussion":
            return _speech_codes(self.n, seat)
        if phase == "proposal":
            return team_codes(self.n, self.team_size)
        if phase == "vote":
            return (c.APPROVE, c.REJECT)
        if phase == "quest":
            if self.is_evil[seat] or not self.config.good_must_succeed:
                return (c.SUCCESS, c.FAIL)
            return (c.SUCCESS,)
        if phase == "assassination":
            known = self.knowledge[seat].evil
            return tuple(c.assassinate(j) for j in range(self.n) if j != seat and j not in known)
        return ()

    def step(self, code: int, speech: str | None = None) -> None:
        """The acting seat plays ``code``. In discussion, ``speech`` (free text) may replace a speech act."""
        seat, c = self.actor, self.codec
        if self.phase == "end":
            raise IllegalAction("the game is over")
        self.steps += 1
        phase = self.phase
        if phase == "discussion":
            if speech is not None:
                text = speech
            elif code in _speech_codes(self.n, seat):
                text = c.speech_text(code)
            else:
                raise IllegalAction(f"{c.describe(code)!r} is not a speech act Player {seat} may use")
            if text:
                self._public("speech", f"Player {seat} says: {text}", seat=seat, speech=text)
            else:
                self._public("speech", f"Player {seat} passes.", seat=seat, speech="")
            if self._queue:
                self.actor = self._queue.pop(0)
            else:
                self.phase, self.actor = "proposal", self.leader
            return
        if code not in self.legal_codes(seat):
            raise IllegalAction(f"{c.describe(code)!r} is not legal for Player {seat} in phase {phase}")
        if phase == "proposal":
            mask = code - c.TEAM0
            self.team = tuple(i for i in range(self.n) if mask >> i & 1)
            self._public(
                "proposal",
                f"Player {seat} proposes team [{', '.join(map(str, self.team))}].",
                seat=seat,
                team=list(self.team),
            )
            if self.config.hammer == "auto_approve" and self.rejections == 4:
                self._public(
                    "vote_result",
                    "Fifth proposal of the round: the team is approved without a vote.",
                    votes=None,
                    approved=True,
                )
                self.proposals += ((self.quest, self.leader, self.team, None, True),)
                self._approved()
                return
            self.phase = "vote"
            self._votes = []
            self._queue = [(self.leader + i) % self.n for i in range(1, self.n)]
            self.actor = self.leader
            return
        if phase == "vote":
            approve = code == c.APPROVE
            self._votes.append((seat, approve))
            self._private(
                seat, f"You voted {'approve' if approve else 'reject'} (hidden until all have voted)."
            )
            if self._queue:
                self.actor = self._queue.pop(0)
                return
            votes = [False] * self.n
            for s, v in self._votes:
                votes[s] = v
            yes = sum(votes)
            approved = 2 * yes > self.n  # strict majority; a tie rejects
            shown = ", ".join(f"P{s} {'approve' if v else 'reject'}" for s, v in enumerate(votes))
            self._public(
                "vote_result",
                f"Votes: {shown} -> {'APPROVED' if approved else 'REJECTED'} ({yes}-{self.n - yes}).",
                votes=votes,
                approved=approved,
            )
            self.proposals += ((self.quest, self.leader, self.team, tuple(votes), approved),)
            if approved:
                self._approved()
                return
            self.rejections += 1
            self.leader = (self.leader + 1) % self.n
            if self.rejections == 5:
                self._finish("evil", "five_rejections")
                return
            self._start_proposal()
            return
        if phase == "quest":
            fail = code == c.FAIL
            self._fails += fail
            self.cards[seat].append((self.quest, fail))
            self._private(seat, f"You played {'FAIL' if fail else 'SUCCESS'} on quest {self.quest + 1}.")
            if self._queue:
                self.actor = self._queue.pop(0)
                return
            succeeded = self._fails < self.fails_needed
            self.quests += ((self.team, self._fails, succeeded),)
            self._public(
                "quest_result",
                f"Quest {self.quest + 1} {'SUCCEEDED' if succeeded else 'FAILED'} with "
                f"{self._fails} Fail card(s).",
                quest=self.quest,
                team=list(self.team),
                fails=self._fails,
                succeeded=succeeded,
            )
            wins = sum(q[2] for q in self.quests)
            losses = len(self.quests) - wins
            if losses == 3:
                self._finish("evil", "three_fails")
            elif wins == 3:
                if self.assassin is None:
                    self._finish("good", "three_successes_no_assassin")
                else:
                    self.phase, self.actor = "assassination", self.assassin
                    self._public(
                        "assassination_start",
                        f"Three quests succeeded. The Assassin, Player "
                        f"{self.assassin}, must now name Merlin.",
                        seat=self.assassin,
                    )
            else:
                self.quest += 1
                self._start_proposal()
            return
        if phase == "assassination":
            target = code - c.ASSASSINATE0
            self.assassin_target = target
            hit = self.roles[target] == "merlin"
            self._public(
                "assassination",
                f"The Assassin names Player {target}: {'that is Merlin' if hit else 'not Merlin'}.",
                seat=seat,
                target=target,
                hit=hit,
            )
            self._finish("evil" if hit else "good", "assassination_hit" if hit else "assassination_miss")

    def _approved(self) -> None:
        self.rejections = 0
        self.leader = (self.leader + 1) % self.n
        self.phase = "quest"
        self._fails = 0
        self._queue = list(self.team)
        self.actor = self._queue.pop(0)

    # -- views ----------------------------------------------------------------------------
    def view(self, seat: int) -> SeatView:
        """The information set of ``seat`` (safe to hand to that seat's player)."""
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
            my_cards=tuple(self.cards[seat]),
            legal=self.legal_codes(seat),
        )

    def record(self) -> dict[str, Any]:
        """A JSON record of the game: config, public events, and roles once the game is over."""
        return {
            "config": self.config.to_dict(),
            "events": list(self.events),
            "done": self.done,
            "winner": self.winner,
            "end_reason": self.end_reason,
            "roles": list(self.roles) if self.done else None,
        }


@cache
def _speech_codes(n: int, seat: int) -> tuple[int, ...]:
    c = _codec(n)
    others = [j for j in range(n) if j != seat]
    return (c.PASS, c.CLAIM_GOOD) + tuple(c.accuse(j) for j in others) + tuple(c.vouch(j) for j in others)
