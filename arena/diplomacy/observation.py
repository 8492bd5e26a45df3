"""What a Diplomacy power observes: a board feature vector and its text.

The board is public in Diplomacy (units, dislodged units, supply centre owners, the orders and
results of past phases); the only private information is press. A power's observation holds the
public board plus the messages it sent or received and the global ones, never other powers' private
messages.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .game import POWERS, DiplomacyGame

__all__ = ["feature_size", "features", "power_text", "RULES"]

_SEASONS = ("S", "F", "W")
_TYPES = ("M", "R", "A")
_UNIT_SLOTS = 2 * len(POWERS)  # army / fleet of each power

RULES = (
    "Diplomacy, standard map, seven powers (AUSTRIA, ENGLAND, FRANCE, GERMANY, ITALY, RUSSIA, TURKEY). "
    "Each year has a Spring and a Fall movement phase (units move, hold, support or convoy; orders of all "
    "powers are revealed and adjudicated together; equal strength bounces), retreat phases for dislodged "
    "units, and Winter adjustments (build in your own vacant home supply centres up to your centre count, "
    "or disband down to it). After Fall, a unit in a supply centre takes it. A power with 18 of the 34 "
    "supply centres wins alone."
)


@lru_cache(maxsize=2)
def _locations(_map_key: str = "standard") -> tuple[tuple[str, ...], dict[str, int]]:
    from .game import require_engine

    locs = tuple(sorted(loc.upper() for loc in require_engine()().map.locs))
    return locs, {loc: i for i, loc in enumerate(locs)}


def feature_size() -> int:
    """Length of :func:`features`' vector."""
    locs, _ = _locations()
    return len(locs) * (2 * _UNIT_SLOTS + len(POWERS) + 1) + len(POWERS) + 3 + 3 + 1 + 1 + 1 + len(locs)


def features(game: DiplomacyGame, power: str, ordering: str | None = None) -> np.ndarray:
    """Board features of ``power``'s view, values in [0, 1].

    Per location (the map's 82, coasts included, sorted): a unit of each power and type (14), a
    dislodged unit of each power and type (14), the supply centre's owner (7) or unowned (1, also
    for locations without a centre); then the observing power (7), season (3), phase type (3), year
    progress towards ``max_year`` (1), acting now (1), press stage (1); and the location whose order
    is asked for (82, one-hot; the discrete view's ``ordering``, zeros otherwise).
    """
    locs, index = _locations()
    per = 2 * _UNIT_SLOTS + len(POWERS) + 1
    x = np.zeros(feature_size(), dtype=np.float32)
    engine = game.engine
    for p_i, p in enumerate(POWERS):
        pw = engine.powers[p]
        for unit in pw.units:
            kind, loc = unit.lstrip("*").split(" ", 1)
            x[index[loc] * per + 2 * p_i + (kind == "F")] = 1.0
        for unit in pw.retreats:
            kind, loc = unit.split(" ", 1)
            x[index[loc] * per + _UNIT_SLOTS + 2 * p_i + (kind == "F")] = 1.0
        for sc in pw.centers:
            x[index[sc] * per + 2 * _UNIT_SLOTS + p_i] = 1.0
    owned = x[: len(locs) * per].reshape(len(locs), per)[:, 2 * _UNIT_SLOTS : 2 * _UNIT_SLOTS + len(POWERS)]
    x[: len(locs) * per].reshape(len(locs), per)[:, per - 1] = owned.sum(axis=1) == 0
    base = len(locs) * per
    x[base + POWERS.index(power)] = 1.0
    base += len(POWERS)
    if not game.done:
        phase = game.phase
        x[base + _SEASONS.index(phase[0])] = 1.0
        x[base + 3 + _TYPES.index(phase[-1])] = 1.0
        year = int(phase[1:5])
        x[base + 6] = min(1.0, (year - 1901) / max(1, game.config.max_year - 1900))
        x[base + 7] = float(power in game.acting and power not in game.submitted)
        x[base + 8] = float(game.stage == "press")
        if ordering is not None:
            x[base + 9 + index[ordering]] = 1.0
    else:
        x[base + 6] = 1.0
    return x


def _board_lines(game: DiplomacyGame) -> list[str]:
    lines = []
    for p in POWERS:
        centers = game.centers(p)
        units = game.units(p)
        if not centers and not units:
            lines.append(f"  {p}: eliminated")
            continue
        lines.append(f"  {p}: {len(centers)} centres ({', '.join(centers) or '-'}); units: {', '.join(units) or '-'}")
        retreats = game.engine.powers[p].retreats
        for unit, where in sorted(retreats.items()):
            lines.append(f"    dislodged {unit}, may retreat to: {', '.join(where) or 'nowhere (disbands)'}")
    return lines


def _last_phase_lines(game: DiplomacyGame) -> list[str]:
    if not game.history:
        return []
    last = game.history[-1]
    lines = [f"Orders of {last['phase']} and results:"]
    for p in POWERS:
        orders = last["orders"].get(p)
        if not orders:
            continue
        shown = []
        for order in orders:
            unit = " ".join(order.split()[:2])
            res = last["results"].get(unit)
            shown.append(f"{order} ({', '.join(res)})" if res else order)
        lines.append(f"  {p}: " + "; ".join(shown))
    return lines


def _instruction(game: DiplomacyGame, power: str) -> list[str]:
    if game.stage == "press":
        others = ", ".join(p for p in POWERS if p != power and game.alive(p))
        return [
            f"Press round {game.press_round + 1} of {game.config.press_rounds}: you may write to {others} or ALL.",
            "Reply with one line per message, 'TO <POWER>: text' or 'TO ALL: text', or PASS to send nothing.",
        ]
    legal = game.legal_orders(power)
    lines = ["Your legal orders, by unit location:"]
    for loc, orders in legal.items():
        lines.append(f"  {loc}: " + " | ".join(orders))
    k = game.builds(power)
    if k > 0:
        lines.append(f"You may build {k} unit(s) (WAIVE to build fewer).")
    elif k < 0:
        lines.append(f"You must disband {-k} unit(s); if you do not, the engine disbands for you.")
    default = "disband" if game.phase_type == "retreats" else "hold"
    lines.append(
        f"Reply with one order per line, exactly as listed (at most one per unit); units without an order {default}."
    )
    return lines


def power_text(game: DiplomacyGame, power: str, *, error: str = "", max_chars: int = 32768,
               acting: bool | None = None, instruction: list[str] | None = None) -> str:
    """``power``'s text observation: rules, the board, the last phase's orders and results, its
    press, and when it is to act the legal orders (or the press format) and the reply format
    (``instruction`` replaces those last lines: the discrete view's numbered choices)."""
    head = [RULES, f"You play {power}."]
    if game.config.press_rounds:
        head.append(f"Before each movement phase's orders there are {game.config.press_rounds} press round(s).")
    head.append(f"The game ends after Winter {game.config.max_year} (supply centres then score the draw).")
    if game.done:
        status = [f"Game over ({game.end_reason}); winner: {game.winner or 'none (draw)'}."]
    else:
        status = [f"Phase: {game.phase} ({game.phase_type}), stage: {game.stage}."]
    body = ["Board:", *_board_lines(game), *_last_phase_lines(game)]
    if acting is None:
        acting = power in game.acting and power not in game.submitted
    tail: list[str] = []
    if error:
        tail.append(f"Your last reply was not accepted in full: {error}")
    if acting and not game.done:
        tail += instruction if instruction is not None else _instruction(game, power)
    elif not game.done:
        tail.append(f"Waiting for the other powers ({game.stage}).")
    messages = [m.line(power) for m in game.visible_messages(power)]
    fixed = "\n".join(head + status + body + tail)
    budget = max_chars - len(fixed) - 40
    kept: list[str] = []
    for line in reversed(messages):  # newest press first; older lines dropped beyond the budget
        if budget - len(line) - 1 < 0:
            break
        kept.append(line)
        budget -= len(line) + 1
    press = []
    if messages:
        dropped = len(messages) - len(kept)
        press = ["Press:" + (f" ({dropped} older message(s) not shown)" if dropped else "")] + kept[::-1]
    text = "\n".join(head + status + body + press + tail)
    return text[-max_chars:]
