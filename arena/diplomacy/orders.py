"""Text actions of a Diplomacy power: orders (one per line) and press messages (``TO FRANCE: ...``).

Both readers are total: any string gives a result and a list of reasons for the lines that were not
accepted, never an exception.

Example:
    >>> from arena.diplomacy.game import DiplomacyGame
    >>> g = DiplomacyGame()
    >>> check_orders(g, "FRANCE", "A PAR - BUR\\nA par - bur\\nF BRE - LON")
    (['A PAR - BUR'], ["'A par - bur': a second order for the unit in PAR", "'F BRE - LON': not a legal order now"])
    >>> read_press("TO ENGLAND: Channel stays empty?\\nTO ALL: peace", "FRANCE", 400)
    ([('ENGLAND', 'Channel stays empty?'), ('ALL', 'peace')], [])
"""

from __future__ import annotations

import re

from .game import POWERS, DiplomacyGame, normalize_order

__all__ = ["check_orders", "read_press", "strip_think", "MAX_MESSAGES"]

_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")
_LABEL = re.compile(r"^\s*(?:ORDERS?|PRESS)\s*:\s*", re.I)
_PRESS = re.compile(r"^\s*TO\s+([A-Za-z]+)\s*:\s*(.*)$", re.S | re.I)
_NOTHING = {"", "PASS", "NONE", "NO ORDERS", "NOTHING"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def strip_think(text: str) -> str:
    """``text`` without ``<think>...</think>`` blocks (an unclosed one runs to the end)."""
    return _THINK.sub("", text)


def _lines(text: str) -> list[str]:
    out = []
    for raw in re.split(r"[\n;]", strip_think(text)):
        line = _LABEL.sub("", _BULLET.sub("", raw)).strip()
        if line.upper() not in _NOTHING:
            out.append(line)
    return out


def check_orders(game: DiplomacyGame, power: str, text: str) -> tuple[list[str], list[str]]:
    """``(accepted orders, reasons for rejected lines)`` of ``power``'s reply ``text``.

    A line is accepted when it is one of the engine's legal orders for one of the power's orderable
    locations (case and spacing aside) and that location has no order yet; in adjustments at most as
    many builds (``WAIVE`` included) as allowed and as many disbands as owed. ``PASS`` or an empty
    reply orders nothing (units hold; in retreats they disband).
    """
    if not isinstance(text, str):
        return [], [f"orders must be text, got {type(text).__name__}"]
    legal = game.legal_orders(power)
    loc_of = {order: loc for loc, orders in legal.items() for order in orders}
    builds = game.builds(power)
    accepted: list[str] = []
    errors: list[str] = []
    used: set[str] = set()
    n_builds = n_disbands = 0
    for line in _lines(text):
        order = normalize_order(line)
        shown = line if len(line) <= 60 else line[:57] + "..."
        loc = loc_of.get(order)
        if loc is None:
            errors.append(f"{shown!r}: not a legal order now")
            continue
        if order == "WAIVE" or order.endswith(" B"):
            if n_builds >= builds:
                errors.append(f"{shown!r}: {power} may build {max(builds, 0)} unit(s) this winter")
                continue
            n_builds += 1
            if order == "WAIVE":
                accepted.append(order)
                continue
        elif order.endswith(" D") and game.phase_type == "adjustments":
            if n_disbands >= -builds:
                errors.append(f"{shown!r}: {power} owes {max(-builds, 0)} disband(s)")
                continue
            n_disbands += 1
        if loc in used:
            errors.append(f"{shown!r}: a second order for the unit in {loc}")
            continue
        used.add(loc)
        accepted.append(order)
    return accepted, errors


MAX_MESSAGES = len(POWERS)  # per press reply: one to each other power and one to all


def read_press(text: str, power: str, max_chars: int) -> tuple[list[tuple[str, str]], list[str]]:
    """``([(recipient, message)], reasons)`` from a press reply: lines ``TO <POWER>: text`` or
    ``TO ALL: text``; ``PASS`` or an empty reply sends nothing. Messages are cut to ``max_chars``
    and stripped of control characters; at most :data:`MAX_MESSAGES` are sent per reply."""
    if not isinstance(text, str):
        return [], [f"press must be text, got {type(text).__name__}"]
    sent: list[tuple[str, str]] = []
    errors: list[str] = []
    for raw in strip_think(text).split("\n"):
        line = raw.strip()
        if line.upper() in _NOTHING:
            continue
        m = _PRESS.match(line)
        if not m:
            errors.append(f"{line[:60]!r}: press lines read 'TO <POWER>: message' or 'TO ALL: message'")
            continue
        recipient = m.group(1).upper()
        if recipient not in POWERS and recipient != "ALL":
            errors.append(f"{recipient!r} is not a power (use one of {', '.join(POWERS)} or ALL)")
            continue
        if recipient == power:
            errors.append(f"{power} cannot write to itself")
            continue
        message = _CONTROL.sub("", m.group(2)).strip()[:max_chars]
        if not message:
            continue
        if len(sent) == MAX_MESSAGES:
            errors.append(f"at most {MAX_MESSAGES} messages per press reply; {line[:40]!r} was not sent")
            continue
        sent.append((recipient, message))
    return sent, errors
