"""What one seat observes: a numeric feature vector, a legal-action mask and a text transcript.

* ``FeatureLayout`` - offsets of the feature blocks for ``n`` players (documented in ``avalon_v0``).
* ``features`` - the float32 feature vector of one seat, built from its information set only.
* ``legal_mask`` - int8 mask over the flat action code (all zeros for a seat that is not acting).
* ``seat_text`` - the seat's transcript: rules summary, night knowledge, public events, own
  hidden choices, and, when acting, the instruction with the legal replies.

Nothing here reads another seat's role, vote or quest card before it is public: features come
from ``AvalonGame.view(seat)`` plus public results, text from the seat's own transcript.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np

from .engine import AvalonGame
from .rules import ROLE_TITLES, ROLES, AvalonConfig

__all__ = [
    "FeatureLayout",
    "features",
    "legal_mask",
    "seat_text",
    "rules_summary",
    "legal_action_texts",
    "MAX_PROPOSALS",
]

MAX_PROPOSALS = 25  # 5 quests x 5 proposals, under either hammer rule
_PHASES = ("discussion", "proposal", "vote", "quest", "assassination", "end")


class FeatureLayout:
    """Offsets of each block in the feature vector for ``n`` players."""

    def __init__(self, n: int):
        self.n = n
        blocks = [
            ("seat", n),
            ("role", len(ROLES)),
            ("evil", 1),
            ("known_evil", n),
            ("known_good", n),
            ("merlin_candidates", n),
            ("phase", len(_PHASES)),
            ("acting", 1),
            ("quest", 5),
            ("rejections", 5),
            ("leader", n),
            ("team", n),
            ("quest_status", 15),
            ("quest_fails", 5),
            ("quest_teams", 5 * n),
            ("my_cards", 10),
            ("proposals", MAX_PROPOSALS * (3 * n + 2)),
            ("revealed_roles", n * len(ROLES)),
            ("winner", 2),
        ]
        self.offsets: dict[str, tuple[int, int]] = {}
        pos = 0
        for name, size in blocks:
            self.offsets[name] = (pos, size)
            pos += size
        self.size = pos
        self.start = {name: off for name, (off, _) in self.offsets.items()}


@cache
def _layout(n: int) -> FeatureLayout:
    return FeatureLayout(n)


def _public_history(game: AvalonGame, o: dict[str, int]) -> tuple[list[int], list[tuple[int, float]]]:
    """On-indices and fractional entries of the quest and proposal history (public to all seats).

    Cached on the game per history length: it changes at most 30 times a game, observations
    are built at every step.
    """
    key = (len(game.proposals), len(game.quests), game.done)
    cache = game.__dict__.setdefault("_feature_cache", {})
    if cache.get("key") == key:
        return cache["on"], cache["frac"]
    n = game.n
    on: list[int] = []
    frac: list[tuple[int, float]] = []
    for q in range(5):
        if q < len(game.quests):
            team, fails, ok = game.quests[q]
            on.append(o["quest_status"] + 3 * q + (1 if ok else 2))
            frac.append((o["quest_fails"] + q, fails / len(team)))
            on += [o["quest_teams"] + q * n + j for j in team]
        else:
            on.append(o["quest_status"] + 3 * q)
    width = 3 * n + 2
    for i, (_, leader, team, votes, approved) in enumerate(game.proposals[:MAX_PROPOSALS]):
        base = o["proposals"] + i * width
        on.append(base + leader)
        on += [base + n + j for j in team]
        if votes is not None:
            on += [base + 2 * n + j for j, v in enumerate(votes) if v]
        on.append(base + 3 * n)
        if approved:
            on.append(base + 3 * n + 1)
    if game.done:  # roles are revealed to everyone at the end
        on += [o["revealed_roles"] + j * len(ROLES) + ROLES.index(r) for j, r in enumerate(game.roles)]
        on.append(o["winner"] + (game.winner == "evil"))
    cache.update(key=key, on=on, frac=frac)
    return on, frac


def features(game: AvalonGame, seat: int) -> np.ndarray:
    """The feature vector of ``seat`` (values in [0, 1])."""
    L = _layout(game.n)
    o = L.start
    x = np.zeros(L.size, dtype=np.float32)
    k = game.knowledge[seat]
    on = [
        o["seat"] + seat,
        o["role"] + ROLES.index(game.roles[seat]),
        o["phase"] + _PHASES.index(game.phase),
        o["quest"] + min(game.quest, 4),
        o["rejections"] + min(game.rejections, 4),
        o["leader"] + game.leader,
    ]
    if game.is_evil[seat]:
        on.append(o["evil"])
    if game.actor == seat:
        on.append(o["acting"])
    on += [o["known_evil"] + j for j in k.evil]
    on += [o["known_good"] + j for j in k.good]
    on += [o["merlin_candidates"] + j for j in k.merlin_candidates]
    on += [o["team"] + j for j in game.team]
    on += [o["my_cards"] + 2 * q + fail for q, fail in game.cards[seat]]
    history, frac = _public_history(game, o)
    x[on] = 1.0
    x[history] = 1.0
    for i, v in frac:
        x[i] = v
    return x


def legal_mask(game: AvalonGame, seat: int, size: int) -> np.ndarray:
    """int8 mask over the flat code; nonzero only for the acting seat."""
    mask = np.zeros(size, dtype=np.int8)
    codes = game.legal_codes(seat)
    if codes:
        mask[list(codes)] = 1
    return mask


@lru_cache(maxsize=64)
def rules_summary(config: AvalonConfig) -> str:
    """The rules as every seat reads them (counts and variants of this very game)."""
    n = config.num_players
    fails = ", ".join(str(f) for f in config.fails_needed)
    roles = ", ".join(ROLE_TITLES[r] for r in sorted(set(config.roles_in_play()), key=ROLES.index))
    hammer = (
        "if five teams in a row are rejected for one quest, evil wins at once"
        if config.hammer == "evil_wins"
        else "if four teams in a row are rejected, the fifth team is approved without a vote"
    )
    quest_rule = (
        "Good players must play SUCCESS; evil players may play SUCCESS or FAIL"
        if config.good_must_succeed
        else "Any player may play SUCCESS or FAIL"
    )
    lines = [
        f"Avalon with {n} players (Player 0 to Player {n - 1}): {config.num_good} good (loyal to Arthur), "
        f"{config.num_evil} evil (minions of Mordred). Roles in play: {roles}.",
        f"Five quests; team sizes {', '.join(map(str, config.team_sizes))}; Fail cards needed to fail each "
        f"quest: {fails}. Three successful quests and good wins (unless the Assassin then names Merlin); "
        "three failed quests and evil wins.",
        "Each round: discussion (every player speaks once, the leader first), the leader proposes a team, "
        "every player votes publicly; a strict majority approves (a tie rejects); "
        f"the leader role passes clockwise after every proposal; {hammer}.",
        f"On an approved quest each member secretly plays a card. {quest_rule}. "
        "Only the number of Fail cards is revealed.",
    ]
    return "\n".join(lines)


def _instruction(game: AvalonGame, seat: int, variant: str) -> str:
    phase, c = game.phase, game.codec
    if game.done:
        return "The game is over."
    if game.actor != seat:
        return f"Waiting for Player {game.actor} ({phase})."
    if phase == "discussion":
        if variant == "text":
            return (
                "Your turn to speak before the leader, Player "
                f"{game.leader}, proposes a team of {game.team_size}. Reply 'SAY: <your message>' or 'PASS'."
            )
        return "Your turn to speak: PASS, CLAIM_GOOD, ACCUSE <player> or VOUCH <player> (speech acts)."
    if phase == "proposal":
        return (
            f"You are the leader: propose exactly {game.team_size} distinct players from 0 to {game.n - 1} "
            f"(you may include yourself). Reply 'TEAM: {', '.join(str(i) for i in range(game.team_size))}'."
        )
    if phase == "vote":
        warn = ""
        if game.rejections == 4 and game.config.hammer == "evil_wins":
            warn = " This is the fifth proposal of the round: if it is rejected, evil wins."
        return (
            f"Vote on team [{', '.join(map(str, game.team))}]. Reply 'VOTE: approve' or 'VOTE: reject'.{warn}"
        )
    if phase == "quest":
        if c.FAIL in game.legal_codes(seat):
            return "You are on the quest. Reply 'QUEST: success' or 'QUEST: fail'."
        return "You are on the quest. Reply 'QUEST: success' (good players must succeed)."
    targets = [c.decode(code)[1] for code in game.legal_codes(seat)]
    return (
        "Name the player you believe is Merlin. Reply 'ASSASSINATE: <player>'; choices: "
        + ", ".join(map(str, targets))
        + "."
    )


def seat_text(
    game: AvalonGame, seat: int, variant: str = "text", *, error: str = "", max_chars: int = 32768
) -> str:
    """The transcript of ``seat``; older lines are dropped (and counted) beyond ``max_chars``."""
    head = rules_summary(game.config)
    lines = game.lines[seat]
    tail = _instruction(game, seat, variant)
    if error:
        tail = f"Your last reply was not accepted: {error}\n{tail}"
    body = "\n".join(lines)
    budget = max_chars - len(head) - len(tail) - 64
    if len(body) > budget:
        keep, total = [lines[0]], len(lines[0])
        tail_lines: list[str] = []
        for line in reversed(lines[1:]):
            if total + len(line) + 1 > budget - 48:
                break
            tail_lines.append(line)
            total += len(line) + 1
        omitted = len(lines) - 1 - len(tail_lines)
        body = "\n".join(keep + [f"[... {omitted} earlier lines omitted ...]"] + tail_lines[::-1])
    return f"{head}\n\n{body}\n\n{tail}"[:max_chars]


def legal_action_texts(game: AvalonGame, seat: int, limit: int = 64) -> list[str]:
    """Text forms of the seat's legal actions (teams are summarised when there are too many)."""
    codes = game.legal_codes(seat)
    if not codes:
        return []
    if game.phase == "proposal" and len(codes) > limit:
        return [f"TEAM: <{game.team_size} distinct players from 0 to {game.n - 1}>"]
    return list(_describe_all(game.n, codes, game.phase == "discussion"))


@lru_cache(maxsize=4096)
def _describe_all(n: int, codes: tuple[int, ...], speech: bool) -> tuple[str, ...]:
    from .engine import _codec

    texts = tuple(_codec(n).describe(c) for c in codes)
    return texts + ("SAY: <free text>",) if speech else texts
