"""Avalon's fixed rules: player counts, quest sizes, roles, night knowledge and rule variants.

* ``AvalonConfig`` - one game's rules (player count, role set, variant flags), validated.
* ``Knowledge`` - what one seat learns at night.
* ``night_knowledge`` - the official knowledge table (and the AvalonBench "see all sides" variant).
* ``ROLES``, ``GOOD_ROLES``, ``EVIL_ROLES``, ``SETUP`` - the constant tables.

Official rules (The Resistance: Avalon rulebook):

==========  ====  ====  ====================  ===========================
 players    good  evil  team sizes Q1..Q5     fails needed on Q4
==========  ====  ====  ====================  ===========================
 5          3     2     2 3 2 3 3             1
 6          4     2     2 3 4 3 4             1
 7          4     3     2 3 3 4 4             2
 8          5     3     3 4 4 5 5             2
 9          6     3     3 4 4 5 5             2
 10         6     4     3 4 4 5 5             2
==========  ====  ====  ====================  ===========================
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache
from typing import Any

__all__ = [
    "AvalonConfig",
    "Knowledge",
    "night_knowledge",
    "ROLES",
    "GOOD_ROLES",
    "EVIL_ROLES",
    "ROLE_TITLES",
    "SETUP",
    "HAMMER_RULES",
]

# Order fixes the role one-hot in the feature vector: never reorder, only append.
ROLES = ("merlin", "percival", "servant", "assassin", "morgana", "mordred", "oberon", "minion")
GOOD_ROLES = frozenset({"merlin", "percival", "servant"})
EVIL_ROLES = frozenset({"assassin", "morgana", "mordred", "oberon", "minion"})
ROLE_TITLES = {
    "merlin": "Merlin",
    "percival": "Percival",
    "servant": "Loyal Servant of Arthur",
    "assassin": "Assassin",
    "morgana": "Morgana",
    "mordred": "Mordred",
    "oberon": "Oberon",
    "minion": "Minion of Mordred",
}

# players -> (good, evil, team sizes per quest, fails needed per quest)
SETUP: dict[int, tuple[int, int, tuple[int, ...], tuple[int, ...]]] = {
    5: (3, 2, (2, 3, 2, 3, 3), (1, 1, 1, 1, 1)),
    6: (4, 2, (2, 3, 4, 3, 4), (1, 1, 1, 1, 1)),
    7: (4, 3, (2, 3, 3, 4, 4), (1, 1, 1, 2, 1)),
    8: (5, 3, (3, 4, 4, 5, 5), (1, 1, 1, 2, 1)),
    9: (6, 3, (3, 4, 4, 5, 5), (1, 1, 1, 2, 1)),
    10: (6, 4, (3, 4, 4, 5, 5), (1, 1, 1, 2, 1)),
}

# "evil_wins": official, five rejected teams in one round hand the game to evil.
# "auto_approve": AvalonBench / AgentEvolver, the fifth team of a round is approved without a vote.
HAMMER_RULES = ("evil_wins", "auto_approve")


@dataclass(frozen=True)
class AvalonConfig:
    """The rules of one game. Defaults are the official rules with Merlin and the Assassin.

    Args:
        num_players: 5 to 10.
        special_roles: Named roles in play; the remaining seats are Loyal Servants and Minions.
            Allowed: merlin, percival, assassin, morgana, mordred, oberon. The Assassin is in play
            exactly when Merlin is.
        hammer: ``"evil_wins"`` (official: five rejected teams in a round and evil wins) or
            ``"auto_approve"`` (AvalonBench/AgentEvolver: the fifth team passes without a vote).
        merlin_sees_oberon: Whether Merlin sees Oberon as evil (standard script: yes).
        full_knowledge: AvalonBench/AgentEvolver simplification: Merlin and every evil player see
            every player's side; Percival, Morgana, Mordred and Oberon knowledge is not modelled
            (Percival sees nothing, everyone else as in the official table).
        good_must_succeed: Official: good players can only play Success on a quest. AvalonBench
            does not enforce it.
        discussion_rounds: Times each player speaks before every proposal (leader first).
        max_message_chars: Longest utterance kept; longer speech is clipped.
        max_retries: Invalid actions a seat may retry before a seeded fallback is played for it.
        lady_of_the_lake: The official Lady of the Lake module (7 or more players): the player to the
            right of the first leader holds the Lady; after quests 2, 3 and 4 the holder examines one
            player who has not held her, learns that player's side in secret, and hands her over.

    Example:
        >>> AvalonConfig(7).team_sizes, AvalonConfig(7).fails_needed[3]
        ((2, 3, 3, 4, 4), 2)
        >>> AvalonConfig(5).roles_in_play()
        ('merlin', 'servant', 'servant', 'assassin', 'minion')
    """

    num_players: int = 5
    special_roles: tuple[str, ...] = ("merlin", "assassin")
    hammer: str = "evil_wins"
    merlin_sees_oberon: bool = True
    full_knowledge: bool = False
    good_must_succeed: bool = True
    discussion_rounds: int = 1
    max_message_chars: int = 400
    max_retries: int = 2
    lady_of_the_lake: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.num_players, int) or self.num_players not in SETUP:
            raise ValueError(f"num_players must be an int in 5..10, got {self.num_players!r}")
        roles = tuple(self.special_roles)
        object.__setattr__(self, "special_roles", roles)
        allowed = set(ROLES) - {"servant", "minion"}
        bad = [r for r in roles if r not in allowed]
        if bad:
            raise ValueError(f"unknown special role(s) {bad!r}; allowed: {sorted(allowed)}")
        if len(set(roles)) != len(roles):
            raise ValueError(f"special_roles has duplicates: {roles!r}")
        if ("merlin" in roles) != ("assassin" in roles):
            raise ValueError(f"the Assassin is in play exactly when Merlin is, got {roles!r}")
        needs_merlin = [r for r in ("percival", "morgana") if r in roles]
        if needs_merlin and "merlin" not in roles:
            # Percival's power is finding Merlin and Morgana's is posing as Merlin: both need him.
            raise ValueError(f"special role(s) {needs_merlin!r} need Merlin in play, got {roles!r}")
        good, evil, _, _ = SETUP[self.num_players]
        n_good = sum(r in GOOD_ROLES for r in roles)
        n_evil = sum(r in EVIL_ROLES for r in roles)
        if n_good > good or n_evil > evil:
            raise ValueError(
                f"{self.num_players} players have {good} good and {evil} evil seats; "
                f"special_roles {roles!r} need {n_good} good and {n_evil} evil"
            )
        if self.hammer not in HAMMER_RULES:
            raise ValueError(f"hammer must be one of {HAMMER_RULES}, got {self.hammer!r}")
        if not isinstance(self.discussion_rounds, int) or not 0 <= self.discussion_rounds <= 5:
            raise ValueError(f"discussion_rounds must be an int in 0..5, got {self.discussion_rounds!r}")
        if not isinstance(self.max_message_chars, int) or self.max_message_chars < 1:
            raise ValueError(f"max_message_chars must be a positive int, got {self.max_message_chars!r}")
        if not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {self.max_retries!r}")
        if not isinstance(self.lady_of_the_lake, bool):
            raise ValueError(f"lady_of_the_lake must be a bool, got {self.lady_of_the_lake!r}")
        if self.lady_of_the_lake and self.num_players < 7:
            raise ValueError(
                f"lady_of_the_lake is played with 7 or more players (official rules), got num_players="
                f"{self.num_players}"
            )
        # Configs key the engine's per-deal caches: hash the fields once, not at every lookup.
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f.name) for f in fields(self))))
        # The engine's per-deal tables for these rules (roles -> tables), kept on the object itself
        # so a new game looks its deal up without hashing or comparing the config.
        object.__setattr__(self, "_deals", {})

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        # Rebuilt from the fields, so the cached hash is recomputed in the receiving process.
        return (type(self), tuple(getattr(self, f.name) for f in fields(self)))

    # -- derived tables --------------------------------------------------------------
    @property
    def num_good(self) -> int:
        return SETUP[self.num_players][0]

    @property
    def num_evil(self) -> int:
        return SETUP[self.num_players][1]

    @property
    def team_sizes(self) -> tuple[int, ...]:
        return SETUP[self.num_players][2]

    @property
    def fails_needed(self) -> tuple[int, ...]:
        return SETUP[self.num_players][3]

    def roles_in_play(self) -> tuple[str, ...]:
        """The multiset of roles dealt: good (specials, then Servants), then evil (specials, then Minions)."""
        good = [r for r in self.special_roles if r in GOOD_ROLES]
        evil = [r for r in self.special_roles if r in EVIL_ROLES]
        good += ["servant"] * (self.num_good - len(good))
        evil += ["minion"] * (self.num_evil - len(evil))
        return tuple(good + evil)

    def with_(self, **changes: Any) -> AvalonConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["special_roles"] = list(self.special_roles)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AvalonConfig:
        data = dict(data)
        if "special_roles" in data:
            data["special_roles"] = tuple(data["special_roles"])
        return cls(**data)

    @classmethod
    def avalonbench(cls, num_players: int = 5, **changes: Any) -> AvalonConfig:
        """The AvalonBench / AgentEvolver rules: auto-approved fifth team, Merlin and evil see all
        sides, good players not forced to play Success (roles: Merlin, Assassin, fillers)."""
        base = dict(
            num_players=num_players,
            special_roles=("merlin", "assassin"),
            hammer="auto_approve",
            full_knowledge=True,
            good_must_succeed=False,
        )
        return cls(**{**base, **changes})


@dataclass(frozen=True)
class Knowledge:
    """What one seat learns at night. Seats are 0-based.

    ``evil``: seats this seat sees as evil (never by role). ``good``: seats seen as good (only in the
    ``full_knowledge`` variant). ``merlin_candidates``: Percival's pair (Merlin and Morgana, order
    unknown).
    """

    evil: frozenset[int] = frozenset()
    good: frozenset[int] = frozenset()
    merlin_candidates: frozenset[int] = frozenset()


def night_knowledge(config: AvalonConfig, roles: tuple[str, ...] | list[str], seat: int) -> Knowledge:
    """The night knowledge of ``seat`` given every seat's role (rulebook table).

    - Loyal Servant: nothing. Oberon: nothing, and the other evil players do not see him.
    - Merlin: every evil player except Mordred (and except Oberon if ``merlin_sees_oberon`` is off).
    - Percival: the seats of Merlin and Morgana, not which is which.
    - Assassin, Morgana, Mordred, Minion: the other evil players except Oberon.
    """
    return _night_knowledge(config, tuple(roles), seat)


@lru_cache(maxsize=8192)
def _night_knowledge(config: AvalonConfig, roles: tuple[str, ...], seat: int) -> Knowledge:
    # Deals repeat (60 role arrangements at 5 players), so the table is computed once per deal.
    role = roles[seat]
    others = [s for s in range(len(roles)) if s != seat]
    if config.full_knowledge:
        if role == "merlin" or role in EVIL_ROLES:
            return Knowledge(
                evil=frozenset(s for s in others if roles[s] in EVIL_ROLES),
                good=frozenset(s for s in others if roles[s] in GOOD_ROLES),
            )
        return Knowledge()  # Percival's pair is not part of this variant
    if role == "merlin":
        hidden = {"mordred"} | (set() if config.merlin_sees_oberon else {"oberon"})
        return Knowledge(
            evil=frozenset(s for s in others if roles[s] in EVIL_ROLES and roles[s] not in hidden)
        )
    if role == "percival":
        return Knowledge(merlin_candidates=frozenset(s for s in others if roles[s] in ("merlin", "morgana")))
    if role in EVIL_ROLES and role != "oberon":
        return Knowledge(evil=frozenset(s for s in others if roles[s] in EVIL_ROLES and roles[s] != "oberon"))
    return Knowledge()
