"""What one seat observes: a numeric feature vector, a legal-action mask and a text transcript.

* ``FeatureLayout`` - offsets of the feature blocks for ``n`` players (documented in ``avalon_v0``).
* ``features`` - the float32 feature vector of one seat, built from its information set only.
* ``legal_mask`` - int8 mask over the flat action code (all zeros for a seat that is not acting): the
  observation's ``action_mask``.
* ``allowed_action_texts`` - ``info["allowed_actions"]`` of the text variant: every legal action as the
  complete text the protocol parses back to it (every team spelt out), ``None`` where speech is free.
* ``seat_text`` - the seat's transcript: rules summary, night knowledge, public events, own
  hidden choices, and, when acting, the instruction with the legal replies.
* ``SeatStream`` - one seat's observations as a conversation: the rules and everything unread at its
  first turn, then only what is new since its last turn (what ``evolver/AvalonSeats-v0`` shows the
  policy, and what every host shows a player with ``conversation = True``).
* ``view_allowed_texts`` - ``allowed_action_texts`` from a seat's own ``SeatView`` (what a player holds).

Nothing here reads another seat's role, vote or quest card before it is public: features come
from ``AvalonGame.view(seat)`` plus public results, text from the seat's own transcript.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np

from .engine import PHASES, AvalonGame, SeatView
from .rules import ROLE_TITLES, ROLES, AvalonConfig

__all__ = [
    "FeatureLayout",
    "features",
    "legal_mask",
    "seat_text",
    "rules_summary",
    "legal_action_texts",
    "allowed_action_texts",
    "view_allowed_texts",
    "SeatStream",
    "MAX_PROPOSALS",
]

MAX_PROPOSALS = 25  # 5 quests x 5 proposals, under either hammer rule
_PHASES = PHASES


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
            ("lady_holder", n),  # Lady of the Lake (zeros when the rule is off)
            ("lady_holders", n),
        ]
        self.offsets: dict[str, tuple[int, int]] = {}
        pos = 0
        for name, size in blocks:
            self.offsets[name] = (pos, size)
            pos += size
        self.size = pos
        self.start = {name: off for name, (off, _) in self.offsets.items()}
        # The blocks written at every observation, as plain ints (read on the hot path).
        self.seat_block = self.start["phase"]  # seat .. merlin_candidates: what the seat knows from the deal on
        self.phase, self.acting, self.quest = self.start["phase"], self.start["acting"], self.start["quest"]
        self.rejections, self.leader, self.team = self.start["rejections"], self.start["leader"], self.start["team"]
        self.my_cards = self.start["my_cards"]


@cache
def _layout(n: int) -> FeatureLayout:
    return FeatureLayout(n)


def _history_on(game: AvalonGame, records, L: FeatureLayout, since: tuple[int, int, bool, int]) -> tuple[list, list]:
    """Feature entries of the public history added since ``since`` (counts of proposals and quests,
    whether the end was seen, Lady holders): on-indices and ``(index, value)`` pairs."""
    o, n = L.start, game.n
    n_prop, n_quest, ended, _ = since
    on: list[int] = []
    values: list[tuple[int, float]] = []
    quests, proposals = records.quests, records.proposals
    for q in range(n_quest, len(quests)):
        team, fails, ok = quests[q]
        status = o["quest_status"] + 3 * q
        on.append(status + (1 if ok else 2))
        values.append((status, 0.0))  # no longer pending
        values.append((o["quest_fails"] + q, fails / len(team)))
        base = o["quest_teams"] + q * n
        on += [base + j for j in team]
    width = 3 * n + 2
    for i in range(n_prop, min(len(proposals), MAX_PROPOSALS)):
        _, leader, team, votes, approved = proposals[i]
        base = o["proposals"] + i * width
        on.append(base + leader)
        members = base + n
        on += [members + j for j in team]
        if votes is not None:
            voters = base + 2 * n
            on += [voters + j for j in _approvers(votes)]
        on.append(base + 3 * n)
        if approved:
            on.append(base + 3 * n + 1)
    if game.phase == "end" and not ended:  # roles are revealed to everyone at the end
        on += [o["revealed_roles"] + j * len(ROLES) + ROLES.index(r) for j, r in enumerate(game.roles)]
        on.append(o["winner"] + (game.winner == "evil"))
    if game.lady is not None:  # the holder moves: rewrite the block
        values += [(o["lady_holder"] + j, float(j == game.lady)) for j in range(n)]
        on += [o["lady_holders"] + j for j in game.lady_holders]
    return on, values


@lru_cache(maxsize=4096)  # vote rounds repeat (2**n outcomes at n players)
def _approvers(votes: tuple[bool, ...]) -> tuple[int, ...]:
    return tuple(j for j, v in enumerate(votes) if v)


class _FeatureState:
    """One game's feature caches. A seat's vector is the sum of two that never overlap:

    * this **moment**'s public vector: the public history (brought up to date with only what was added
      since: a proposal, a quest result, the Lady, the end) plus the public state of the moment (phase,
      quest, rejections, leader, team) and the ``acting`` flag; it is the same for every seat that
      acts in the moment (the voters of a round, the quest members), so it is built once per moment
      for an acting seat and once for a waiting one;
    * the seat's **own** vector: what it knows from the deal on (seat, role, side, night knowledge, the
      Lady's answers) and its own quest cards, written when a card is added.

    One addition then gives the fresh array the caller keeps (no per-step copy-and-patch)."""

    __slots__ = ("layout", "history", "counts", "public", "own", "own_cards", "moments", "moment_key")

    def __init__(self, L: FeatureLayout):
        self.layout = L
        self.history = -1
        self.counts = (0, 0, False, 0)
        self.public = np.zeros(L.size, dtype=np.float32)
        for q in range(5):  # every quest pending
            self.public[L.start["quest_status"] + 3 * q] = 1.0
        self.own: dict[int, np.ndarray] = {}
        self.own_cards = [0] * L.n  # per seat: quest cards written into its own vector
        self.moments: list[np.ndarray | None] = [None, None]  # this moment's vector: waiting, acting
        self.moment_key = -1  # the count of public log entries the moments were written at


def _own_start(game: AvalonGame, seat: int, L: FeatureLayout) -> np.ndarray:
    """The seat's own vector before any quest card: what it knows from the deal on. Deals repeat
    (60 role arrangements at 5 players), so without the Lady's answers it is kept per deal and seat;
    the caller copies it."""
    lady = game.lady_results[seat]
    memo = game._t.own_vectors
    key = (game.roles, seat)
    if not lady:
        vector = memo.get(key)
        if vector is not None:
            return vector
    o, k = L.start, game.knowledge[seat]
    on = [o["seat"] + seat, o["role"] + ROLES.index(game.roles[seat])]
    if game.is_evil[seat]:
        on.append(o["evil"])
    on += [o["known_evil"] + j for j in k.evil]
    on += [o["known_good"] + j for j in k.good]
    on += [o["merlin_candidates"] + j for j in k.merlin_candidates]
    for target, evil in lady:  # the Lady of the Lake's answers are knowledge too
        on.append((o["known_evil"] if evil else o["known_good"]) + target)
    vector = np.zeros(L.size, dtype=np.float32)
    vector[on] = 1.0
    if not lady and len(memo) < 16384:
        memo[key] = vector
    return vector


def _moment(game: AvalonGame, st: _FeatureState, acting: bool) -> np.ndarray:
    """The public history plus this moment's public state, and the ``acting`` flag."""
    L, q, rejections = st.layout, game.quest, game.rejections
    moment = st.public.copy()
    moment[L.phase + _PHASE_INDEX[game.phase]] = 1.0
    moment[L.quest + (q if q < 4 else 4)] = 1.0
    moment[L.rejections + (rejections if rejections < 4 else 4)] = 1.0
    moment[L.leader + game.leader] = 1.0
    base = L.team
    for j in game.team:
        moment[base + j] = 1.0
    if acting:
        moment[L.acting] = 1.0
    return moment


def features(game: AvalonGame, seat: int) -> np.ndarray:
    """The feature vector of ``seat`` (values in [0, 1]); a fresh array the caller may keep."""
    records = game._read
    if records is None or records.synced != len(game.log):
        records = game.records
    st = records.cache.get("features")
    if st is None:
        st = records.cache["features"] = _FeatureState(_layout(game.n))
    if st.history != records.history:
        counts = (len(records.proposals), len(records.quests), game.phase == "end", len(game.lady_holders))
        on, values = _history_on(game, records, st.layout, st.counts)
        public = st.public
        for i in on:  # a few entries: one by one is cheaper than a fancy index
            public[i] = 1.0
        for i, v in values:
            public[i] = v
        if st.counts[3] != counts[3]:  # the new Lady holder's answers arrive with her
            st.own.clear()
        st.history, st.counts = records.history, counts
    own = st.own.get(seat)
    if own is None:
        own = st.own[seat] = _own_start(game, seat, st.layout).copy()
        st.own_cards[seat] = 0
    cards = records.cards[seat]
    if st.own_cards[seat] != len(cards):  # cards are only ever added
        base = st.layout.my_cards
        for q, fail in cards[st.own_cards[seat] :]:
            own[base + 2 * q + fail] = 1.0
        st.own_cards[seat] = len(cards)
    # The engine logs a public entry whenever the moment's state (or the history) changes, so the
    # count of public entries keys the moment.
    if st.moment_key != records.n_public:
        st.moment_key = records.n_public
        st.moments = [None, None]
    acting = game.actor == seat
    moment = st.moments[acting]
    if moment is None:
        moment = st.moments[acting] = _moment(game, st, acting)
    return moment + own  # the two never share a nonzero entry: the sum is exact


_PHASE_INDEX = {p: i for i, p in enumerate(_PHASES)}


def legal_mask(game: AvalonGame, seat: int, size: int, *, simultaneous: bool = False) -> np.ndarray:
    """int8 mask over the flat code; nonzero only for the acting seat (or, with ``simultaneous``,
    every seat whose choice is due). A fresh array the caller may keep."""
    codes = game.legal_codes(seat, simultaneous=simultaneous)
    masks = game._t.masks  # legal sets repeat across games: one array per set and rules
    mask = masks.get(codes)
    if mask is None or len(mask) != size:
        mask = np.zeros(size, dtype=np.int8)
        if codes:
            mask[list(codes)] = 1
        if len(masks) < 4096:
            masks[codes] = mask
    return mask.copy()


def _discussion_rule(rounds: int) -> str:
    """The discussion clause of the rules text: none when the game has no discussion."""
    if rounds <= 0:
        return ""
    if rounds == 1:
        return "discussion (every player speaks once, the leader first), "
    return f"discussion ({rounds} rounds; every player speaks once a round, the leader first), "


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
        f"Each round: {_discussion_rule(config.discussion_rounds)}the leader proposes a team, "
        "every player votes publicly; a strict majority approves (a tie rejects); "
        f"the leader role passes clockwise after every proposal; {hammer}.",
        f"On an approved quest each member secretly plays a card. {quest_rule}. "
        "Only the number of Fail cards is revealed.",
    ]
    if config.lady_of_the_lake:
        lines.append(
            "Lady of the Lake: after quests 2, 3 and 4 her holder examines one player who has not held her, "
            "learns in secret whether that player is good or evil, and hands her to that player."
        )
    return "\n".join(lines)


def _instruction(game: AvalonGame, seat: int, variant: str, simultaneous: bool = False) -> str:
    """The closing instruction of a seat's text; the acting seat's is memoised per rules table for
    the phases that repeat all game (votes, quest cards, proposals, speech turns)."""
    phase = game.phase
    if phase in ("vote", "quest", "proposal", "discussion") and (
        game.actor == seat or (simultaneous and seat in game.pending())
    ):
        if phase == "vote":
            key = (phase, game.team, game.rejections == 4)
        elif phase == "quest":
            key = (phase, game.is_evil[seat] or not game.config.good_must_succeed)
        elif phase == "proposal":
            key = (phase, game.quest)
        else:
            key = (phase, variant, game.leader, game.quest)
        memo = game._t.instructions
        text = memo.get(key)
        if text is None:
            text = memo[key] = _instruction_text(game, seat, variant, simultaneous)
        return text
    return _instruction_text(game, seat, variant, simultaneous)


def _instruction_text(game: AvalonGame, seat: int, variant: str, simultaneous: bool = False) -> str:
    phase, c = game.phase, game.codec
    if game.done:
        return "The game is over."
    if game.actor != seat and not (simultaneous and seat in game.pending()):
        if simultaneous and phase in ("vote", "quest"):
            return f"Waiting for the {'votes' if phase == 'vote' else 'quest cards'}."
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
        if c.FAIL in game.legal_codes(seat, simultaneous=simultaneous):
            return "You are on the quest. Reply 'QUEST: success' or 'QUEST: fail'."
        return "You are on the quest. Reply 'QUEST: success' (good players must succeed)."
    targets = [c.decode(code)[1] for code in game.legal_codes(seat)]
    if phase == "lady":
        return (
            "You hold the Lady of the Lake: name a player to examine. Reply 'LADY: <player>'; choices: "
            + ", ".join(map(str, targets))
            + "."
        )
    return (
        "Name the player you believe is Merlin. Reply 'ASSASSINATE: <player>'; choices: "
        + ", ".join(map(str, targets))
        + "."
    )


def seat_text(
    game: AvalonGame,
    seat: int,
    variant: str = "text",
    *,
    error: str = "",
    max_chars: int = 32768,
    simultaneous: bool = False,
) -> str:
    """The transcript of ``seat``; older lines are dropped (and counted) beyond ``max_chars``.
    ``simultaneous``: every voter or quest member is addressed at once (the parallel view)."""
    t = game._t
    head = t.summary
    if head is None:
        head = t.summary = rules_summary(game.config)
    tail = _instruction(game, seat, variant, simultaneous)
    if error:
        tail = f"Your last reply was not accepted: {error}\n{tail}"
    body = _seat_body(game, seat)
    budget = max_chars - len(head) - len(tail) - 64
    if len(body) > budget:
        lines = game.seat_lines(seat)
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


def _seat_body(game: AvalonGame, seat: int) -> str:
    """The seat's transcript joined into one string, extended incrementally (one join per new line
    instead of one join of the whole game per observation)."""
    lines = game.seat_lines(seat)
    cache = game._read.bodies  # brought up to date by seat_lines
    kept = cache.get(seat)
    if kept is None:
        body = "\n".join(lines)
    else:
        count, body = kept
        if count == len(lines):
            return body
        body = body + "\n" + "\n".join(lines[count:])
    cache[seat] = (len(lines), body)
    return body


def legal_action_texts(game: AvalonGame, seat: int, limit: int = 64, *, simultaneous: bool = False) -> list[str]:
    """Text forms of the seat's legal actions (teams are summarised when there are too many)."""
    codes = game.legal_codes(seat, simultaneous=simultaneous)
    if not codes:
        return []
    if game.phase == "proposal" and len(codes) > limit:
        return [f"TEAM: <{game.team_size} distinct players from 0 to {game.n - 1}>"]
    return list(_describe_all(game.n, codes, game.phase == "discussion"))


def allowed_action_texts(game: AvalonGame, seat: int, *, simultaneous: bool = False) -> list[str] | None:
    """The complete replies the seat may give now, each parsed by ``parse_action`` to a legal code.

    A proposal lists every team of the quest's size (``TEAM: 0, 2``; 252 teams at most, with 10
    players); ``None`` in discussion, where any text is speech; an empty list when the seat has
    nothing to do. A fresh list the caller may keep.

    Example:
        >>> from arena.avalon.rules import AvalonConfig
        >>> game = AvalonGame(AvalonConfig(num_players=5, discussion_rounds=0), ("merlin", "servant", "servant",
        ...                   "assassin", "minion"), 0)
        >>> texts = allowed_action_texts(game, 0)
        >>> len(texts), texts[:2]
        (10, ['TEAM: 0, 1', 'TEAM: 0, 2'])
        >>> allowed_action_texts(game, 1)
        []
    """
    return _allowed(game.n, game.phase, game.legal_codes(seat, simultaneous=simultaneous))


def view_allowed_texts(view: SeatView) -> list[str] | None:
    """:func:`allowed_action_texts` of the seat whose information set ``view`` is: text ``i`` is the reply
    of ``view.legal[i]``.

    Example:
        >>> from arena.avalon.rules import AvalonConfig
        >>> game = AvalonGame(AvalonConfig(num_players=5, discussion_rounds=0), ("merlin", "servant", "servant",
        ...                   "assassin", "minion"), 0)
        >>> view_allowed_texts(game.view(0)) == allowed_action_texts(game, 0)
        True
    """
    return _allowed(view.n, view.phase, tuple(view.legal))


def _allowed(n: int, phase: str, codes: tuple[int, ...]) -> list[str] | None:
    if not codes:
        return []
    if phase == "discussion":
        return None
    return list(_describe_codes(n, codes))


@lru_cache(maxsize=4096)
def _describe_codes(n: int, codes: tuple[int, ...]) -> tuple[str, ...]:
    from .engine import _codec

    codec = _codec(n)
    return tuple(codec.describe(c) for c in codes)


@lru_cache(maxsize=4096)
def _describe_all(n: int, codes: tuple[int, ...], speech: bool) -> tuple[str, ...]:
    from .engine import _codec

    texts = tuple(_codec(n).describe(c) for c in codes)
    return texts + ("SAY: <free text>",) if speech else texts


class SeatStream:
    """One seat's observations as a conversation: what is new since its last turn.

    The first observation holds the rules and every transcript line the seat may read (its night
    knowledge first); each later one only the lines added since, at most ``max_new_lines`` of them
    (older unread lines are counted as omitted), the reason its last reply was refused, and the question.
    ``evolver/AvalonSeats-v0`` shows the policy exactly this, so a policy trained there reads the same
    text wherever it is seated (tournaments, the single-seat view, the multi-seat view's opponents).

    Args:
        max_new_lines: Most transcript lines in one observation.

    Example:
        >>> from arena.avalon.rules import AvalonConfig
        >>> game = AvalonGame(AvalonConfig(num_players=5, discussion_rounds=0), ("merlin", "servant", "servant",
        ...                   "assassin", "minion"), 0)
        >>> stream = SeatStream()
        >>> first = stream.observe(game, 0)
        >>> first.startswith("Avalon with 5 players") and "Night: you are Player 0" in first
        True
        >>> game.step(game.codec.team_code([0, 1]))
        >>> print(stream.observe(game, 0))
        Player 0 proposes team [0, 1].
        <BLANKLINE>
        Vote on team [0, 1]. Reply 'VOTE: approve' or 'VOTE: reject'.
    """

    def __init__(self, max_new_lines: int = 40):
        if not isinstance(max_new_lines, int) or isinstance(max_new_lines, bool) or max_new_lines < 1:
            raise ValueError(f"max_new_lines must be a positive int, got {max_new_lines!r}")
        self.max_new_lines = max_new_lines
        self.shown = 0  # transcript lines the seat has read

    def reset(self) -> None:
        """A new game: the next observation is a first one again."""
        self.shown = 0

    def observe(self, game: AvalonGame, seat: int, *, error: str = "", simultaneous: bool = False) -> str:
        """What ``seat`` has not read yet, and the question (the rules too at its first turn); the lines
        returned count as read. ``error``: why its last reply was refused; ``simultaneous``: the question as
        the parallel view asks it (every voter at once)."""
        lines = game.seat_lines(seat)
        new, first = lines[self.shown:], self.shown == 0
        self.shown = len(lines)
        if len(new) > self.max_new_lines:
            new = [f"[... {len(new) - self.max_new_lines} earlier lines omitted ...]", *new[-self.max_new_lines:]]
        parts = [rules_summary(game.config)] if first else []
        parts.append("\n".join(new))
        if error:
            parts.append(f"Your last reply was not accepted: {error}")
        parts.append(_instruction(game, seat, "text", simultaneous=simultaneous))
        return "\n\n".join(p for p in parts if p)
