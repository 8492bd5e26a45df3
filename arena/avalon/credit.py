"""Step credit from the rules: decisions of a seat that its own knowledge can judge.

* ``step_credit`` - the credit of one decision (-1 for a blunder, 0 for a judged sound decision,
  ``None`` where no rule applies), judged only from what the deciding seat itself knows (its side,
  its night knowledge and its Lady of the Lake answers) and the public state.

The multi-seat environment (:mod:`arena.avalon.seats`) and the single-seat view write it into
``info["step_credit"]`` after each of a seat's actions; ``wrappers.attribution``'s ``env-rules``
attributor turns it into step labels for the ADCA advantage, like any other environment's.

Example:
    >>> from arena.avalon import AvalonConfig, AvalonGame
    >>> g = AvalonGame(AvalonConfig(5, discussion_rounds=0), ["merlin", "servant", "servant", "assassin", "minion"], 0)
    >>> g.phase
    'proposal'
    >>> step_credit(g, 0, g.codec.team_code([0, 3])), step_credit(g, 0, g.codec.team_code([0, 1]))
    (-1.0, 0.0)
"""

from __future__ import annotations

from .engine import AvalonGame

__all__ = ["step_credit"]


def step_credit(game: AvalonGame, seat: int, code: int) -> float | None:
    """Credit of ``seat`` playing ``code`` now (before it is played), judged from what the seat knows:

    * -1 for a good seat approving or proposing a team with a player it knows is evil, 0 for a good seat
      that knows an evil player approving or proposing a team without one;
    * -1 for a good seat rejecting the fifth proposal of a round when that hands evil the game;
    * -1 for an evil seat approving or proposing a team with no evil player it knows of (itself included),
      0 for one approving or proposing a team with one;
    * on a quest that one Fail card fails, with no other evil player the seat knows of on the team (no
      teammate can fail it instead): -1 for an evil seat's Success card (it hands the quest to good), 0 for
      its Fail card;
    * ``None`` for every other decision (no rule judges it).

    Judging sound decisions too (0, not ``None``) matters in lost games, where every unjudged step takes the
    outcome's sign: the sound ones then stand apart from the blunders.
    """
    c = game.codec
    if game.phase == "vote" and code in (c.APPROVE, c.REJECT):
        team = game.team
        if code == c.REJECT:
            fifth = game.rejections == 4 and game.config.hammer == "evil_wins"
            return -1.0 if fifth and not game.is_evil[seat] else None
    elif game.phase == "proposal" and c.TEAM0 <= code < c.APPROVE:
        team = c.decode(code)[1]
    elif game.phase == "quest" and game.is_evil[seat] and code in (c.SUCCESS, c.FAIL):
        partners = set(game.knowledge[seat].evil).intersection(game.team) - {seat}
        if game.fails_needed != 1 or partners:
            return None
        return -1.0 if code == c.SUCCESS else 0.0
    else:
        return None
    known_evil = set(game.knowledge[seat].evil) | {t for t, evil in game.lady_results[seat] if evil}
    if game.is_evil[seat]:
        known_evil.add(seat)
        return 0.0 if known_evil.intersection(team) else -1.0
    if not known_evil:
        return None  # a seat that knows no evil player cannot be judged by this rule
    return -1.0 if known_evil.intersection(team) else 0.0
