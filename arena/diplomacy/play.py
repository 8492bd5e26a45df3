"""One Diplomacy game between seven players through the turn-based environment, with its record.

Example:
    >>> from arena.diplomacy.bots import make_bot
    >>> res = play_game([make_bot("rule")] + [make_bot("random") for _ in range(6)],
    ...                 config=DiplomacyConfig(max_year=1902), seed=0)
    >>> res["end_reason"], len(res["record"]["phases"]) > 0, round(sum(res["scores"].values()), 6)
    ('year_limit', True, 1.0)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from .bots import Bot
from .env import raw_env
from .game import AGENTS, POWERS, DiplomacyConfig

__all__ = ["play_game"]


def play_game(
    players: list[Bot] | dict[str, Bot],
    *,
    config: DiplomacyConfig | None = None,
    seed: int = 0,
    start: dict[str, Any] | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Play a game; ``players`` are seven bots in power order (AUSTRIA ... TURKEY) or ``{power: bot}``.

    Every player acts on the environment's view: the game (public board, its legal orders) and its
    own text observation. Returns ``winner``, ``end_reason``, ``scores``, ``supply_centers``,
    ``invalid_actions`` (per power, in power order), ``steps`` and ``record`` (config, phases with
    orders, results and states, and the press). ``on_event`` receives ``{"phase": entry}`` after each
    adjudicated phase (the live viewer).
    """
    if isinstance(players, dict):
        missing = [p for p in POWERS if p not in players]
        if missing:
            raise ValueError(f"players lacks powers {missing}")
        seats = [players[p] for p in POWERS]
    else:
        seats = list(players)
        if len(seats) != len(POWERS):
            raise ValueError(f"a game needs 7 players (one per power), got {len(seats)}")
    config = config or DiplomacyConfig()
    env = raw_env(config=config)
    env.reset(seed=seed, options={"start": start} if start else None)
    for power, bot in zip(POWERS, seats):
        bot.reset(power, seed)
    by_agent = dict(zip(AGENTS, seats))
    game = env.game
    seen = 0
    steps = 0
    while not game.done and steps < 100_000:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        text = env.observe(agent)["text"]
        env.step(by_agent[agent].act(game, text))
        steps += 1
        if on_event is not None:
            while seen < len(game.history):
                on_event({"phase": game.history[seen]})
                seen += 1
    invalid = [env._invalid[a] for a in AGENTS]
    record = {
        "game": "diplomacy",
        "config": config.to_dict(),
        "seed": seed,
        "players": [getattr(b, "name", type(b).__name__) for b in seats],
        "phases": game.history,
        "messages": [asdict(m) for m in game.messages],
        "winner": game.winner,
        "end_reason": game.end_reason,
    }
    return {
        "winner": game.winner,
        "end_reason": game.end_reason,
        "scores": game.scores(),
        "supply_centers": {p: len(game.centers(p)) for p in POWERS},
        "invalid_actions": invalid,
        "steps": steps,
        "record": record,
    }
