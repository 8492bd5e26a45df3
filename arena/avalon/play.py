"""Playing whole games with given players.

* ``play_game`` - one game: every seat's ``Player`` acts from its information set (and its text
  transcript when it asks for one); returns a JSON-ready result with the public record.
* ``seat_streams`` / ``turn_text`` - what a player that reads text gets on its turn in a turn-based host:
  a chat policy (``conversation = True``: ``checkpoint:<path>`` seats) what is new since its last turn,
  as ``evolver/AvalonSeats-v0`` showed it in training; any other its whole transcript.

Games are played through ``raw_env`` (text variant), so model replies get the environment's
parser, retries and seeded fallbacks, and bots' integer codes go straight through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evolver_gym.core.seeding import derive_seed

from .bots import Player
from .env import raw_env
from .observation import SeatStream
from .rules import AvalonConfig

__all__ = ["play_game", "seat_streams", "turn_text"]


def seat_streams(players: Sequence[Player | None]) -> dict[int, SeatStream]:
    """A :class:`~arena.avalon.observation.SeatStream` per seat whose player keeps one chat per game."""
    return {s: SeatStream() for s, p in enumerate(players) if p is not None and getattr(p, "conversation", False)}


def turn_text(env: Any, seat: int, player: Player, streams: dict[int, SeatStream]) -> str | None:
    """The text ``player`` reads on its turn at ``seat`` of the turn-based ``env`` (a ``raw_env``): what is
    new since its last turn for a seat of ``streams``, else its whole transcript, or ``None`` for a bot."""
    stream = streams.get(seat)
    if stream is not None:
        return stream.observe(env.game, seat, error=env._errors[env.possible_agents[seat]])
    return env.observe(env.possible_agents[seat])["text"] if player.needs_text else None


def play_game(
    players: Sequence[Player],
    *,
    config: AvalonConfig,
    seed: int,
    roles: Sequence[str] | None = None,
    leader: int | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    max_steps: int = 5000,
) -> dict[str, Any]:
    """Play one game; ``players[i]`` sits in seat ``i``.

    Args:
        players: One player per seat.
        config: The rules.
        seed: Seeds the deal (unless ``roles`` is given), the fallbacks and every player.
        roles: Optional fixed role per seat; ``leader`` an optional first leader.
        on_event: Called with each public event as it happens (live viewers).
        max_steps: Safety cap on environment steps (a game needs far fewer).

    Returns:
        ``{"seed", "roles", "winner", "end_reason", "steps", "invalid_actions", "fallback_actions",
        "record"}`` where ``record`` is :meth:`AvalonGame.record`.
    """
    if len(players) != config.num_players:
        raise ValueError(f"{config.num_players} players needed, got {len(players)}")
    env = raw_env(config=config, variant="text")
    options: dict[str, Any] = {}
    if roles is not None:
        options["roles"] = list(roles)
    if leader is not None:
        options["leader"] = leader
    env.reset(seed=seed, options=options)
    game = env.game
    for i, p in enumerate(players):
        p.reset(i, derive_seed(seed, "seat", i))
    streams = seat_streams(players)
    sent = 0
    steps = 0
    while not game.done and steps < max_steps:
        seat = game.actor
        player = players[seat]
        env.step(player.act(game.view(seat), turn_text(env, seat, player, streams)))
        steps += 1
        if on_event is not None:
            events = game.events  # rendered from the game's record on each access
            for event in events[sent:]:
                on_event(event)
            sent = len(events)
    return {
        "seed": seed,
        "roles": list(game.roles),
        "winner": game.winner,
        "end_reason": game.end_reason,
        "steps": steps,
        "invalid_actions": [env._invalid[a] for a in env.possible_agents],
        "fallback_actions": [env._fallbacks[a] for a in env.possible_agents],
        "record": game.record(),
    }
