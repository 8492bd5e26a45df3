"""The flat action code shared by the discrete and the text variants, and the text protocol.

* ``ActionCodec`` - flat code layout for ``n`` players: encode, decode, describe.
* ``parse_action`` - model text -> ``Parsed`` (code and/or speech), or ``ParseError`` naming the bad value.
* ``strip_private`` - drops ``<think>...</think>`` reasoning so it never reaches other seats.
* ``sanitize_speech`` - clips speech and removes moderator / seat-tag spoofing.

Flat code for ``n`` players (``n = 5`` gives 59 actions, ``n = 10`` gives 1071)::

    0                      NOOP (only for seats that are not acting, in the parallel view)
    1 + m                  TEAM with member bitmask m (legal only with the quest's team size)
    1 + 2**n + 0..3        APPROVE, REJECT, SUCCESS, FAIL
    next n                 ASSASSINATE player j
    next 2                 SAY PASS, SAY CLAIM_GOOD        (speech acts, discussion only)
    next n                 SAY ACCUSE player j
    next n                 SAY VOUCH for player j
    next n                 LADY: examine player j (Lady of the Lake, optional rule)

Text grammar (case-insensitive; the last match wins; ``<think>`` blocks are ignored)::

    TEAM: 0, 2, 3     VOTE: approve | reject     QUEST: success | fail     ASSASSINATE: 2     LADY: 4
    SAY: <speech>     (in discussion any text is speech; PASS says nothing)
    JSON {"action": "VOTE: approve"} or {"say": "..."} is accepted too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache

__all__ = ["ActionCodec", "Parsed", "ParseError", "parse_action", "strip_private", "sanitize_speech"]


class ParseError(ValueError):
    """Model text that is not a legal action now; the message says what was wrong."""


@dataclass(frozen=True)
class Parsed:
    """A parsed text action: ``code`` for structured actions and speech acts, ``speech`` for free talk."""

    code: int | None
    speech: str | None = None


class ActionCodec:
    """The flat action layout for ``n`` players.

    Example:
        >>> c = ActionCodec(5)
        >>> c.size, c.team_code([0, 2]), c.decode(c.team_code([0, 2]))
        (59, 6, ('team', (0, 2)))
        >>> c.describe(c.APPROVE), c.describe(c.accuse(3))
        ('VOTE: approve', 'SAY: I suspect Player 3 is evil.')
    """

    def __init__(self, n: int):
        self.n = n
        self.NOOP = 0
        self.TEAM0 = 1
        base = 1 + (1 << n)
        self.APPROVE, self.REJECT, self.SUCCESS, self.FAIL = base, base + 1, base + 2, base + 3
        self.ASSASSINATE0 = base + 4
        self.PASS = self.ASSASSINATE0 + n
        self.CLAIM_GOOD = self.PASS + 1
        self.ACCUSE0 = self.PASS + 2
        self.VOUCH0 = self.ACCUSE0 + n
        self.LADY0 = self.VOUCH0 + n  # appended last: earlier codes keep their values
        self.size = self.LADY0 + n
        # The legal sets every seat shares, built once.
        self.VOTES = (self.APPROVE, self.REJECT)
        self.CARDS = (self.SUCCESS, self.FAIL)
        self.SUCCESS_ONLY = (self.SUCCESS,)

    # -- encoders -------------------------------------------------------------------------
    def team_code(self, members) -> int:
        mask = 0
        for m in members:
            mask |= 1 << int(m)
        return self.TEAM0 + mask

    def assassinate(self, target: int) -> int:
        return self.ASSASSINATE0 + target

    def accuse(self, target: int) -> int:
        return self.ACCUSE0 + target

    def vouch(self, target: int) -> int:
        return self.VOUCH0 + target

    def lady(self, target: int) -> int:
        return self.LADY0 + target

    def is_speech(self, code: int) -> bool:
        return self.PASS <= code < self.LADY0

    # -- decoder --------------------------------------------------------------------------
    def decode(self, code: int) -> tuple[str, object]:
        """``(kind, argument)``: kinds noop, team, approve, reject, success, fail, assassinate,
        pass, claim_good, accuse, vouch, lady."""
        code = int(code)
        if not 0 <= code < self.size:
            raise ValueError(f"action code {code} is outside 0..{self.size - 1}")
        if code == 0:
            return ("noop", None)
        if code < self.APPROVE:
            mask = code - self.TEAM0
            return ("team", tuple(i for i in range(self.n) if mask >> i & 1))
        if code < self.ASSASSINATE0:
            return (("approve", "reject", "success", "fail")[code - self.APPROVE], None)
        if code < self.PASS:
            return ("assassinate", code - self.ASSASSINATE0)
        if code == self.PASS:
            return ("pass", None)
        if code == self.CLAIM_GOOD:
            return ("claim_good", None)
        if code < self.VOUCH0:
            return ("accuse", code - self.ACCUSE0)
        if code < self.LADY0:
            return ("vouch", code - self.VOUCH0)
        return ("lady", code - self.LADY0)

    def speech_text(self, code: int) -> str:
        """The sentence a speech act says aloud (empty for PASS)."""
        kind, arg = self.decode(code)
        return {
            "pass": "",
            "claim_good": "I am loyal to Arthur.",
            "accuse": f"I suspect Player {arg} is evil.",
            "vouch": f"I trust Player {arg}.",
        }[kind]

    def describe(self, code: int) -> str:
        """The text-protocol form of ``code``; ``parse_action`` maps it back to ``code``."""
        kind, arg = self.decode(code)
        if kind == "team":
            return "TEAM: " + ", ".join(str(i) for i in arg)
        if kind in ("approve", "reject"):
            return f"VOTE: {kind}"
        if kind in ("success", "fail"):
            return f"QUEST: {kind}"
        if kind == "assassinate":
            return f"ASSASSINATE: {arg}"
        if kind == "lady":
            return f"LADY: {arg}"
        if kind == "pass":
            return "PASS"
        if kind == "noop":
            return "NOOP"
        return "SAY: " + self.speech_text(code)

    @cache  # noqa: B019 - one codec per player count, kept for the process
    def speech_lookup(self) -> dict[str, int]:
        table = {self.speech_text(c).lower(): c for c in range(self.CLAIM_GOOD, self.LADY0)}
        table[""] = self.PASS
        table["pass"] = self.PASS
        return table


_THINK = re.compile(r"<think>.*?(</think>|$)", re.IGNORECASE | re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)(</answer>|$)", re.IGNORECASE | re.DOTALL)
_TAG_SPOOF = re.compile(
    r"\[(?:moderator|system|game|host|player\s*\d+)[^\]]*\]|^\s*(?:moderator|system|game)\s*:",
    re.IGNORECASE | re.MULTILINE,
)


def strip_private(text: str) -> str:
    """The public part of a model reply: ``<think>`` blocks removed, ``<answer>`` content if any."""
    text = _THINK.sub(" ", text)
    m = _ANSWER.findall(text)
    if m:
        text = m[-1][0]
    return text.strip()


def sanitize_speech(text: str, max_chars: int) -> str:
    """One line of speech: printable, no moderator/seat tags, at most ``max_chars`` characters."""
    text = _TAG_SPOOF.sub("", text)
    text = "".join(c if c.isprintable() else " " for c in text)
    text = " ".join(text.split())
    return text[:max_chars]


_PATTERNS = {
    "team": re.compile(r"team\s*[:=]\s*\[?([^\]\n]*)", re.IGNORECASE),
    "vote": re.compile(r"vote\s*[:=]\s*\W*(approve|reject|yes|no)\b", re.IGNORECASE),
    "quest": re.compile(r"quest\s*[:=]\s*\W*(success|fail|pass)\b", re.IGNORECASE),
    "assassinate": re.compile(r"assassinate\s*[:=]\s*\W*(?:player\s*|p)?(-?\d+)", re.IGNORECASE),
    "lady": re.compile(r"lady\s*[:=]\s*\W*(?:player\s*|p)?(-?\d+)", re.IGNORECASE),
    "say": re.compile(r"say\s*[:=]\s*(.*)", re.IGNORECASE | re.DOTALL),
}
_WORD = {
    "approve": "approve",
    "yes": "approve",
    "reject": "reject",
    "no": "reject",
    "success": "success",
    "pass": "success",
    "fail": "fail",
}


def _json_action(text: str) -> str | None:
    """``{"action": ..., "say": ...}`` replies become the equivalent grammar line."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if "say" in data and isinstance(data["say"], str):
        return "SAY: " + data["say"]
    action = data.get("action")
    if isinstance(action, str):
        return action
    if isinstance(data.get("team"), list):
        return "TEAM: " + ", ".join(str(x) for x in data["team"])
    return None


def parse_action(text: str, phase: str, codec: ActionCodec, *, team_size: int = 0) -> Parsed:
    """Parse a model reply for ``phase`` (discussion, proposal, vote, quest, assassination, lady).

    Legality against the seat's mask is checked by the caller; this only checks the form
    (and team size / player range, which are public).
    """
    if not isinstance(text, str):
        raise ParseError(f"expected text, got {type(text).__name__}")
    body = strip_private(text)
    alt = _json_action(body)
    if alt is not None:
        body = alt
    n = codec.n
    if phase == "discussion":
        says = _PATTERNS["say"].findall(body)
        speech = says[-1] if says else body
        key = " ".join(speech.split()).lower()
        if key in codec.speech_lookup():
            return Parsed(codec.speech_lookup()[key])
        return Parsed(None, speech)
    bare = re.sub(r"[^a-z0-9]", "", body.lower())
    if phase == "proposal":
        found = _PATTERNS["team"].findall(body)
        if not found:
            raise ParseError(
                f"no 'TEAM: ...' line in reply {body[:80]!r}; write e.g. 'TEAM: "
                + ", ".join(str(i) for i in range(team_size))
                + "'"
            )
        ids = [int(x) for x in re.findall(r"-?\d+", found[-1])]
        bad = [i for i in ids if not 0 <= i < n]
        if bad:
            raise ParseError(f"player number(s) {bad} out of range 0..{n - 1}")
        if len(set(ids)) != len(ids):
            raise ParseError(f"team {ids} names a player twice")
        if len(ids) != team_size:
            raise ParseError(f"team {ids} has {len(ids)} players; this quest needs exactly {team_size}")
        return Parsed(codec.team_code(ids))
    if phase == "vote":
        found = _PATTERNS["vote"].findall(body)
        word = _WORD.get(found[-1].lower()) if found else _WORD.get(bare)
        if word not in ("approve", "reject"):
            raise ParseError(f"no vote in reply {body[:80]!r}; write 'VOTE: approve' or 'VOTE: reject'")
        return Parsed(codec.APPROVE if word == "approve" else codec.REJECT)
    if phase == "quest":
        found = _PATTERNS["quest"].findall(body)
        word = _WORD.get(found[-1].lower()) if found else _WORD.get(bare)
        if word not in ("success", "fail"):
            raise ParseError(f"no quest card in reply {body[:80]!r}; write 'QUEST: success' or 'QUEST: fail'")
        return Parsed(codec.SUCCESS if word == "success" else codec.FAIL)
    if phase in ("assassination", "lady"):
        word = "ASSASSINATE" if phase == "assassination" else "LADY"
        found = _PATTERNS[word.lower()].findall(body)
        if not found and re.fullmatch(r"(?:player)?\d+", bare):
            found = re.findall(r"\d+", bare)
        if not found:
            raise ParseError(f"no player in reply {body[:80]!r}; write '{word}: <player number>'")
        target = int(found[-1])
        if not 0 <= target < n:
            raise ParseError(f"player number {target} out of range 0..{n - 1}")
        return Parsed(codec.assassinate(target) if phase == "assassination" else codec.lady(target))
    raise ParseError(f"no action is expected in phase {phase!r}")
