"""Diplomacy bots: ``random`` (a uniformly random legal order per unit) and ``rule`` (greedy for
supply centres). Both read only the public board and their own legal orders, reply in the text
protocol the environments read, and stay silent in press stages.

Example:
    >>> from arena.diplomacy.game import DiplomacyGame
    >>> g = DiplomacyGame()
    >>> bot = make_bot("rule")
    >>> bot.reset("FRANCE", seed=0)
    >>> sorted(bot.act(g).splitlines())
    ['A MAR - SPA', 'A PAR - BUR', 'F BRE - ENG']
"""

from __future__ import annotations

import random
from collections import deque
from typing import Protocol

from .game import DiplomacyGame

__all__ = ["Bot", "RandomBot", "RuleBot", "make_bot", "BOT_KINDS"]

BOT_KINDS = ("random", "rule")


class Bot(Protocol):
    """A Diplomacy player: ``reset`` before a game, ``act`` whenever its power is due."""

    name: str

    def reset(self, power: str, seed: int) -> None: ...

    def act(self, game: DiplomacyGame, text: str | None = None) -> str: ...


def _unit_loc(order: str) -> str:
    return order.split()[1] if len(order.split()) > 1 else ""


class RandomBot:
    """One uniformly random legal order per unit (builds and disbands: as many as allowed/owed)."""

    def __init__(self, name: str = "random"):
        self.name = name
        self.power = ""
        self._rng = random.Random(0)

    def reset(self, power: str, seed: int) -> None:
        self.power, self._rng = power, random.Random(f"{seed}-{power}-random")

    def act(self, game: DiplomacyGame, text: str | None = None) -> str:
        if game.stage == "press":
            return "PASS"
        legal = game.legal_orders(self.power)
        k = game.builds(self.power)
        if game.phase_type == "adjustments":
            locs = list(legal)
            self._rng.shuffle(locs)
            if k > 0:
                picks = [[o for o in legal[loc] if o != "WAIVE"] for loc in locs[:k]]
                return "\n".join(self._rng.choice(p) for p in picks if p)
            return "\n".join(o for loc in locs[: -k] for o in legal[loc] if o.endswith(" D"))
        return "\n".join(self._rng.choice(orders) for orders in legal.values())


class RuleBot:
    """Greedy for supply centres.

    Movement: each unit (in a seeded order) moves into an adjacent supply centre it does not own,
    neutral ones first, one unit per target; a unit with no such move supports one of its power's
    chosen moves if it can, else steps towards the nearest centre it does not own, else holds.
    Retreats: into a supply centre if possible, else anywhere legal, else disband. Winter: armies
    (fleets where armies cannot stand) in every home centre allowed; disbands the units farthest from
    a centre it does not own.
    """

    def __init__(self, name: str = "rule"):
        self.name = name
        self.power = ""
        self._rng = random.Random(0)

    def reset(self, power: str, seed: int) -> None:
        self.power, self._rng = power, random.Random(f"{seed}-{power}-rule")

    # -- map helpers ---------------------------------------------------------------------------
    @staticmethod
    def _province(loc: str) -> str:
        return loc.split("/")[0]

    def _distance_to_targets(self, game: DiplomacyGame, start: str, targets: set[str]) -> int:
        """Moves from ``start`` to the nearest province in ``targets`` over the map's adjacency
        (unit types ignored: a ranking, not a path)."""
        if not targets:
            return 99
        m = game.engine.map
        seen = {self._province(start)}
        frontier = deque([(start, 0)])
        while frontier:
            loc, d = frontier.popleft()
            if self._province(loc) in targets:
                return d
            for nxt in m.abut_list(loc, incl_no_coast=True):
                p = self._province(nxt.upper())
                if p not in seen:
                    seen.add(p)
                    frontier.append((p, d + 1))
        return 99

    def _targets(self, game: DiplomacyGame) -> tuple[set[str], set[str]]:
        """``(neutral centres, other powers' centres)``."""
        owned_by_other: set[str] = set()
        owned: set[str] = set()
        for p in game.engine.powers:
            owned.update(game.engine.powers[p].centers)
            if p != self.power:
                owned_by_other.update(game.engine.powers[p].centers)
        neutral = {sc for sc in game.engine.map.scs if sc not in owned}
        return neutral, owned_by_other

    # -- acting --------------------------------------------------------------------------------
    def act(self, game: DiplomacyGame, text: str | None = None) -> str:
        if game.stage == "press":
            return "PASS"
        legal = game.legal_orders(self.power)
        if game.phase_type == "adjustments":
            return self._adjust(game, legal)
        if game.phase_type == "retreats":
            return self._retreat(game, legal)
        return self._move(game, legal)

    def _move(self, game: DiplomacyGame, legal: dict[str, list[str]]) -> str:
        neutral, enemy = self._targets(game)
        locs = list(legal)
        self._rng.shuffle(locs)
        chosen: dict[str, str] = {}
        claimed: set[str] = set()
        for loc in locs:  # first pass: take an adjacent centre
            moves = [o for o in legal[loc] if " - " in o and " S " not in o and " C " not in o and "VIA" not in o]
            best = None
            for rank, pool in enumerate((neutral, enemy)):
                hits = [o for o in moves if self._province(o.split(" - ")[1]) in pool - claimed]
                if hits:
                    best = (rank, self._rng.choice(sorted(hits)))
                    break
            if best is not None:
                order = best[1]
                chosen[loc] = order
                claimed.add(self._province(order.split(" - ")[1]))
        for loc in locs:  # second pass: support a chosen move, else approach a centre, else hold
            if loc in chosen:
                continue
            supports = [
                o for o in legal[loc] if " S " in o and o.split(" S ", 1)[1] in chosen.values()
            ]
            if supports:
                chosen[loc] = self._rng.choice(sorted(supports))
                continue
            targets = (neutral | enemy) - claimed
            here = self._distance_to_targets(game, loc, targets)
            steps = []
            for o in legal[loc]:
                if " - " in o and " S " not in o and "VIA" not in o:
                    dest = o.split(" - ")[1]
                    if self._province(dest) in claimed:
                        continue
                    d = self._distance_to_targets(game, dest, targets)
                    if d < here:
                        steps.append((d, o))
            if steps:
                best_d = min(d for d, _ in steps)
                order = self._rng.choice(sorted(o for d, o in steps if d == best_d))
                chosen[loc] = order
                claimed.add(self._province(order.split(" - ")[1]))
            else:
                holds = [o for o in legal[loc] if o.endswith(" H")]
                if holds:
                    chosen[loc] = holds[0]
        return "\n".join(chosen[loc] for loc in sorted(chosen))

    def _retreat(self, game: DiplomacyGame, legal: dict[str, list[str]]) -> str:
        neutral, enemy = self._targets(game)
        mine = set(game.engine.powers[self.power].centers)
        orders = []
        for options in legal.values():
            retreats = [o for o in options if " R " in o]
            into_sc = [o for o in retreats if self._province(o.split(" R ")[1]) in (neutral | enemy | mine)]
            pick = into_sc or retreats or [o for o in options if o.endswith(" D")]
            if pick:
                orders.append(sorted(pick)[0])
        return "\n".join(orders)

    def _adjust(self, game: DiplomacyGame, legal: dict[str, list[str]]) -> str:
        k = game.builds(self.power)
        if k > 0:
            orders = []
            for loc in sorted(legal):
                if len(orders) == k:
                    break
                builds = [o for o in legal[loc] if o.endswith(" B")]
                armies = [o for o in builds if o.startswith("A ")]
                if armies or builds:
                    orders.append((armies or builds)[0])
            return "\n".join(orders)
        if k < 0:
            neutral, enemy = self._targets(game)
            units = sorted(legal, key=lambda loc: (-self._distance_to_targets(game, loc, neutral | enemy), loc))
            return "\n".join(o for loc in units[:-k] for o in legal[loc] if o.endswith(" D"))
        return "PASS"


def make_bot(kind: str, name: str | None = None) -> Bot:
    """A fresh bot of ``kind`` (``random`` or ``rule``)."""
    if kind == "random":
        return RandomBot(name or kind)
    if kind == "rule":
        return RuleBot(name or kind)
    raise ValueError(f"unknown Diplomacy bot {kind!r}; use one of {BOT_KINDS}")
