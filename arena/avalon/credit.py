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
    """Credit of ``seat`` playing ``code`` now (before it is played), judged from what the seat knows.

    A team is *dirty* for a seat when it holds a player the seat knows is evil (an evil seat counts itself):

    * a good seat that knows an evil player: approving or proposing a dirty team -1, a clean one 0;
      rejecting a dirty team 0 (a rejection of a clean team is not judged: the seat may suspect others);
    * -1 for a good seat rejecting the fifth proposal of a round when that hands evil the game;
    * an evil seat: approving or proposing a dirty team 0, a clean one -1; rejecting a dirty team -1
      (it throws away a quest its side could fail), a clean one 0;
    * on a quest that one Fail card fails, with no other evil player the seat knows of on the team (no
      teammate can fail it instead): -1 for an evil seat's Success card (it hands the quest to good), 0 for
      its Fail card;
    * ``None`` for every other decision (no rule judges it).

    Every vote of an evil seat is judged, both ways: a rule that judged only approvals would let a policy
    escape every -1 by rejecting every team. Judging sound decisions too (0, not ``None``) matters in lost
    games, where every unjudged step takes the outcome's sign: the sound ones then stand apart from the
    blunders.
    """
    c = game.codec
    if game.phase == "vote" and code in (c.APPROVE, c.REJECT):
        team, approve = game.team, code == c.APPROVE
        if not approve and game.rejections == 4 and game.config.hammer == "evil_wins":
            return 0.0 if game.is_evil[seat] else -1.0  # the fifth rejection hands evil the game
    elif game.phase == "proposal" and c.TEAM0 <= code < c.APPROVE:
        team, approve = c.decode(code)[1], True
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
        return 0.0 if bool(known_evil.intersection(team)) == approve else -1.0
    if not known_evil:
        return None  # a seat that knows no evil player cannot be judged by this rule
    dirty = bool(known_evil.intersection(team))
    if approve:
        return -1.0 if dirty else 0.0
    return 0.0 if dirty else None
