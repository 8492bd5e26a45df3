"""One Diplomacy game as the arena plays it: the engine's board, press stages, order collection.

The board, the legal orders and the adjudication are the ``diplomacy`` package's (an optional
dependency, AGPL-3.0: ``pip install 'evolver-gym[diplomacy]'``); this module only decides who acts
when, keeps the press between powers, checks the submitted orders against the engine's legal orders
and scores the end. Both PettingZoo environments (turn-based and parallel) drive a
:class:`DiplomacyGame`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = [
    "POWERS",
    "AGENTS",
    "PHASE_TYPES",
    "DiplomacyConfig",
    "DiplomacyGame",
    "Message",
    "require_engine",
]

POWERS = ("AUSTRIA", "ENGLAND", "FRANCE", "GERMANY", "ITALY", "RUSSIA", "TURKEY")
AGENTS = tuple(p.lower() for p in POWERS)
PHASE_TYPES = {"M": "movement", "R": "retreats", "A": "adjustments"}
SOLO_CENTERS = 18  # a strict majority of the standard map's 34 supply centres

_INSTALL_HINT = (
    "arena.diplomacy needs the AGPL-3.0 'diplomacy' engine, an optional extra: "
    "pip install 'evolver-gym[diplomacy]' (or pip install diplomacy==1.1.2)"
)


def require_engine() -> Any:
    """The ``diplomacy.Game`` class; ``ImportError`` with the install command when it is missing."""
    try:
        from diplomacy import Game
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return Game


@dataclass(frozen=True)
class DiplomacyConfig:
    """Rules of an arena game of Diplomacy (standard map, seven powers).

    Args:
        max_year: Last year played: the game ends after its Winter adjustments as a draw, scored by
            supply centres (unless a power has won alone earlier). 1901 to 2000.
        press_rounds: Press stages before the orders of every movement phase; in each, every
            surviving power may send messages (0: no press, the default).
        max_message_chars: Longest message; longer ones are cut.
        max_retries: How often a power whose orders contained an invalid line is asked again (with
            the reason) before its valid lines are played and the rest dropped.

    Example:
        >>> DiplomacyConfig(max_year=1905, press_rounds=1).to_dict()["press_rounds"]
        1
    """

    max_year: int = 1910
    press_rounds: int = 0
    max_message_chars: int = 400
    max_retries: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.max_year, int) or not 1901 <= self.max_year <= 2000:
            raise ValueError(f"max_year must be an int in 1901..2000, got {self.max_year!r}")
        if not isinstance(self.press_rounds, int) or not 0 <= self.press_rounds <= 10:
            raise ValueError(f"press_rounds must be an int in 0..10, got {self.press_rounds!r}")
        if not isinstance(self.max_message_chars, int) or self.max_message_chars < 1:
            raise ValueError(f"max_message_chars must be a positive int, got {self.max_message_chars!r}")
        if not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {self.max_retries!r}")

    def with_(self, **changes: Any) -> DiplomacyConfig:
        """A copy with ``changes`` applied (validated)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Message:
    """A press message: ``recipient`` is a power or ``"ALL"``; ``index`` orders messages in a game."""

    index: int
    phase: str
    sender: str
    recipient: str
    text: str

    def visible_to(self, power: str) -> bool:
        return self.recipient == "ALL" or power in (self.sender, self.recipient)

    def line(self, power: str | None = None) -> str:
        sender = "you" if self.sender == power else self.sender
        recipient = "you" if self.recipient == power else ("everyone" if self.recipient == "ALL" else self.recipient)
        return f"[{self.phase}] {sender} -> {recipient}: {self.text}"


_SPACES = re.compile(r"\s+")


def normalize_order(line: str) -> str:
    """Upper case, single spaces: the form the engine lists legal orders in."""
    return _SPACES.sub(" ", line.strip()).upper()


class DiplomacyGame:
    """A game in progress: the engine's board plus whose turn it is and the press so far.

    A phase has ``press_rounds`` press stages (movement phases only), then one orders stage. In
    each stage every power in :attr:`acting` submits once (in the turn-based view one after the
    other, in the parallel view together); when all have, the stage ends, and after the orders
    stage the engine adjudicates. Phases in which no power has anything to order are adjudicated at
    once.

    Args:
        config: The rules.
        start: Optional position instead of the standard opening: ``{"phase": "S1901M",
            "units": {power: ["A PAR", ...]}, "centers": {power: ["PAR", ...]}}`` (powers upper
            case; powers left out keep nothing, unless only ``phase`` is given).

    Example:
        >>> g = DiplomacyGame(DiplomacyConfig(max_year=1901))
        >>> g.phase, g.stage, g.acting[:2]
        ('S1901M', 'orders', ['AUSTRIA', 'ENGLAND'])
        >>> g.legal_orders("FRANCE")["PAR"][:3]
        ['A PAR - BRE', 'A PAR - BUR', 'A PAR - GAS']
    """

    def __init__(self, config: DiplomacyConfig | None = None, start: dict[str, Any] | None = None):
        Game = require_engine()
        self.config = config or DiplomacyConfig()
        self.engine = Game()
        if start:
            self._set_position(start)
        self.messages: list[Message] = []
        # One entry per adjudicated phase: phase, orders, results, units and centres after it,
        # next_phase, and the engine's state before it (what the viewer draws the orders on).
        self.history: list[dict[str, Any]] = []
        self.submitted: dict[str, list[str]] = {}
        self.press_round = 0
        self.winner: str | None = None
        self.end_reason: str | None = None
        self._legal: dict[str, dict[str, list[str]]] | None = None  # per power, for _legal_phase
        self._all_orders: dict[str, list[str]] = {}
        self._legal_phase = ""
        self._begin_phase()

    # -- position ---------------------------------------------------------------------------
    def _set_position(self, start: dict[str, Any]) -> None:
        unknown = set(start) - {"phase", "units", "centers"}
        if unknown:
            raise ValueError(f"start position keys must be phase, units, centers; got {sorted(unknown)}")
        e = self.engine
        if "phase" in start:
            phase = str(start["phase"])
            if not re.fullmatch(r"[SFW]\d{4}[MRA]", phase):
                raise ValueError(f"start phase must look like 'S1901M', got {phase!r}")
            e.set_current_phase(phase)
        for key in ("units", "centers"):
            if key not in start:
                continue
            table = start[key]
            bad = [p for p in table if p not in POWERS]
            if bad:
                raise ValueError(f"start {key} names unknown powers {bad}; use {list(POWERS)}")
            (e.clear_units if key == "units" else e.clear_centers)()
            for power, items in table.items():
                (e.set_units if key == "units" else e.set_centers)(power, list(items))

    # -- state ------------------------------------------------------------------------------
    @property
    def phase(self) -> str:
        """The engine's short phase name (``S1901M``), ``COMPLETED`` at the end."""
        return self.engine.get_current_phase()

    @property
    def phase_type(self) -> str:
        """``movement``, ``retreats``, ``adjustments`` (``end`` when the game is over)."""
        return "end" if self.done else PHASE_TYPES[self.phase[-1]]

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    def centers(self, power: str) -> list[str]:
        return list(self.engine.get_centers(power))

    def units(self, power: str) -> list[str]:
        return list(self.engine.get_units(power))

    def alive(self, power: str) -> bool:
        p = self.engine.powers[power]
        return bool(p.units or p.centers or p.retreats)

    def builds(self, power: str) -> int:
        """Adjustment count: builds allowed (> 0) or disbands owed (< 0); 0 outside adjustments."""
        if self.done or self.phase[-1] != "A":
            return 0
        p = self.engine.powers[power]
        return len(p.centers) - len(p.units)

    def legal_orders(self, power: str) -> dict[str, list[str]]:
        """``{location: sorted legal orders}`` for the power's orderable locations this phase (a
        shared table: do not modify it)."""
        if self.done:
            return {}
        if self._legal is None or self._legal_phase != self.phase:
            self._legal = {}
            self._all_orders = self.engine.get_all_possible_orders()
            self._legal_phase = self.phase
        table = self._legal.get(power)
        if table is None:
            every = self._all_orders
            locs = self.engine.get_orderable_locations(power)
            table = self._legal[power] = {loc: sorted(every[loc]) for loc in sorted(locs) if every.get(loc)}
        return table

    # -- stages -----------------------------------------------------------------------------
    def _needs_orders(self, power: str) -> bool:
        if self.phase[-1] == "A":
            k = self.builds(power)
            return k < 0 or (k > 0 and bool(self.legal_orders(power)))
        return bool(self.legal_orders(power))

    def _begin_phase(self) -> None:
        """Set up the first stage of the current phase, adjudicating phases nobody orders in."""
        while not self.done:
            self.submitted = {}
            if self.phase[-1] == "M" and self.config.press_rounds and self.press_round < self.config.press_rounds:
                self.stage = "press"
                self.acting = [p for p in POWERS if self.alive(p)]
                return
            self.stage = "orders"
            self.acting = [p for p in POWERS if self._needs_orders(p)]
            if self.acting:
                return
            self._adjudicate()

    def submit(self, power: str, orders: list[str] | None = None, press: list[tuple[str, str]] | None = None) -> None:
        """Record ``power``'s checked orders (orders stage) or messages (press stage); when every
        acting power has submitted, the stage ends (and after orders the phase is adjudicated)."""
        if power not in self.acting or power in self.submitted:
            raise ValueError(f"{power} does not act now (acting: {self.acting}, submitted: {sorted(self.submitted)})")
        if self.stage == "press":
            for recipient, text in press or ():
                self.messages.append(Message(len(self.messages), self.phase, power, recipient, text))
            self.submitted[power] = []
        else:
            self.submitted[power] = list(orders or ())
        if len(self.submitted) == len(self.acting):
            self._end_stage()

    def _end_stage(self) -> None:
        if self.stage == "press":
            self.press_round += 1
            self._begin_phase()
            return
        self._adjudicate()
        self._begin_phase()

    def _adjudicate(self) -> None:
        e = self.engine
        phase = self.phase
        state = {k: v for k, v in e.get_state().items() if k != "timestamp"}  # the wall clock is no state
        for power, orders in self.submitted.items():
            if orders:
                e.set_orders(power, orders)
        orders = {p: list(o) for p, o in e.get_orders().items() if o}
        e.process()
        results = {unit: [str(r) for r in res] for unit, res in e.result_history.last_value().items() if res}
        self.submitted = {}
        self.press_round = 0
        entry = {
            "phase": phase,
            "orders": orders,
            "results": results,
            "units": {p: self.units(p) for p in POWERS},
            "centers": {p: self.centers(p) for p in POWERS},
            "next_phase": self.phase,
            "state": state,
        }
        self.history.append(entry)
        counts = {p: len(e.get_centers(p)) for p in POWERS}
        leader = max(POWERS, key=lambda p: counts[p])
        if counts[leader] >= SOLO_CENTERS or (e.is_game_done and not e.phase == "FORMING"):
            self.winner = leader if counts[leader] >= SOLO_CENTERS else None
            self.end_reason = "solo" if self.winner else "engine_end"
        elif int(self.phase[1:5]) > self.config.max_year:
            self.end_reason = "year_limit"
        elif sum(self.alive(p) for p in POWERS) == 1:
            self.winner = next(p for p in POWERS if self.alive(p))
            self.end_reason = "solo"
        if self.done:
            self.acting = []

    # -- scoring ----------------------------------------------------------------------------
    def scores(self) -> dict[str, float]:
        """Final scores: a solo winner 1 and the others 0; otherwise sum-of-squares (a power's
        centres squared over the sum of all powers' centres squared)."""
        if self.winner is not None:
            return {p: float(p == self.winner) for p in POWERS}
        counts = {p: len(self.engine.get_centers(p)) for p in POWERS}
        total = sum(c * c for c in counts.values())
        return {p: (counts[p] ** 2 / total if total else 0.0) for p in POWERS}

    def visible_messages(self, power: str) -> list[Message]:
        return [m for m in self.messages if m.visible_to(power)]

    def render_svg(self, incl_orders: bool = True) -> str:
        """The engine's SVG map of the current position (orders submitted so far drawn on it)."""
        return self.engine.render(incl_orders=incl_orders)
