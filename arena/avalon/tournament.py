"""Avalon tournaments: fair seating, resumable JSONL results, win rates with Wilson intervals, Elo.

* ``run_tournament`` - play ``num_games`` games between entrants; append each game to a JSONL file
  (a rerun skips games already there), return and write the summary.
* ``summarize`` - per-entrant, per-team and per-role win rates (Wilson 95% intervals), good win
  rate, end reasons, invalid/fallback counts, Elo.
* ``elo_ratings`` - team Elo over games in order.
* ``make_entrant`` - an entrant from a spec: ``random``, ``rule``, ``rule_votes``,
  ``llm:<model>@<base_url>`` (an OpenAI-compatible endpoint) or ``checkpoint:<path>`` (a text policy in a
  model folder), by the arena's one opponent factory (:mod:`arena.avalon.opponents`).

A ``checkpoint:<path>`` entrant plays as its policy played in training
(``evolver_train.arena_seat.PolicySeat``): the training chat, fed what is new since its last turn,
and replies sampled from the policy among the legal ones (``greedy``: the most probable), seeded by the
game, so its Elo and win rates measure the policy itself, with no fallback deciding a move; the same
tournament seed replays the same games. Any chat model folder is such an entrant too (an "LLM seat" that
runs locally and only plays legal moves).

Fairness: games come in blocks of ``n`` (the player count). Within a block the entrants keep their
seats (entrants are dealt round-robin over seats, rotated between blocks and shuffled), and the
roles rotate one seat per game, so each seat, hence each entrant, plays every role of the deal
equally often.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from evolver_gym.core.seeding import derive_seed, make_rng
from evolver_gym.core.stats import team_elo, wilson_interval

from ..games_log import play_logged
from .bots import Player
from .opponents import make_opponent
from .play import play_game
from .rules import EVIL_ROLES, AvalonConfig

__all__ = ["run_tournament", "side_matchup", "summarize", "elo_ratings", "make_entrant", "schedule"]


def make_entrant(spec: str, name: str | None = None, *, greedy: bool = False) -> Callable[[], Player]:
    """A factory of fresh players for ``spec``: :func:`arena.avalon.opponents.make_opponent`."""
    return make_opponent(spec, name, greedy=greedy)


def schedule(
    entrants: list[str], config: AvalonConfig, seed: int, index: int
) -> tuple[list[str], list[str], int]:
    """``(lineup, roles, game_seed)`` of game ``index``: entrant per seat, role per seat."""
    n = config.num_players
    block, r = divmod(index, n)
    rng = make_rng(seed, "tournament-block", block)
    lineup = [entrants[(s + block) % len(entrants)] for s in range(n)]
    rng.shuffle(lineup)
    base = list(config.roles_in_play())
    rng.shuffle(base)
    roles = [base[(s + r) % n] for s in range(n)]
    return lineup, roles, derive_seed(seed, "tournament-game", index)


def run_tournament(
    entrants: Iterable[str] | dict[str, str],
    *,
    num_games: int,
    config: AvalonConfig,
    seed: int = 0,
    out: str | os.PathLike | None = None,
    save_records: bool = False,
    progress: Callable[[int, int], None] | None = None,
    greedy: bool = False,
) -> dict[str, Any]:
    """Play a tournament and return its summary.

    Args:
        entrants: Entrant specs (names = specs) or ``{name: spec}``.
        num_games: Games in total (a multiple of the player count gives exactly fair roles).
        config: The rules of every game.
        seed: Tournament seed (seating, deals, players).
        out: JSONL file of game results; rerunning with the same file resumes. The summary goes to
            ``<out>.summary.json``.
        save_records: Keep every game's public record (for the viewer) in the results.
        progress: Called with ``(games_done, num_games)``.
        greedy: ``checkpoint:`` entrants take the most probable legal reply instead of sampling one.
    """
    specs = dict(entrants) if isinstance(entrants, dict) else {e: e for e in entrants}
    if not specs:
        raise ValueError("a tournament needs at least one entrant")
    if not isinstance(num_games, int) or num_games < 1:
        raise ValueError(f"num_games must be a positive int, got {num_games!r}")
    factories = {name: make_entrant(spec, name, greedy=greedy) for name, spec in specs.items()}
    names = sorted(specs)
    def play(index: int) -> tuple[dict[str, Any], list[Player]]:
        lineup, roles, game_seed = schedule(names, config, seed, index)
        players = [factories[name]() for name in lineup]
        return {"lineup": lineup, **play_game(players, config=config, seed=game_seed, roles=roles)}, players

    identity: dict[str, Any] = {"tournament_seed": seed, "config": config.to_dict()}
    if greedy:  # other games than sampling plays; logs written before the option stay resumable
        identity["greedy"] = True
    return play_logged(out, num_games, identity=identity, play=play, summarize=summarize,
                       save_records=save_records, progress=progress)


def elo_ratings(games: list[dict[str, Any]], k: float = 32.0, start: float = 1500.0) -> dict[str, float]:
    """Team Elo (:func:`evolver_gym.core.stats.team_elo`): each side's rating is the mean of its seats'
    entrant ratings; a side gains ``k * (result - expected)``, split equally among its seats (an entrant
    sums over its seats)."""
    matches = []
    for g in games:
        lineup, evil = g["lineup"], [r in EVIL_ROLES for r in g["roles"]]
        good_team = [name for name, e in zip(lineup, evil) if not e]
        evil_team = [name for name, e in zip(lineup, evil) if e]
        matches.append((good_team, evil_team, 1.0 if g["winner"] == "good" else 0.0))
    return {name: round(r, 1) for name, r in sorted(team_elo(matches, k=k, start=start).items())}


def _rate(wins: int, n: int) -> dict[str, Any]:
    lo, hi = wilson_interval(wins, n)
    return {
        "games": n,
        "wins": wins,
        "win_rate": round(wins / n, 4) if n else None,
        "ci95": [round(lo, 4), round(hi, 4)],
    }


def summarize(games: list[dict[str, Any]]) -> dict[str, Any]:
    """Win rates per entrant / team / role with Wilson 95% intervals, end reasons, Elo."""
    tallies: dict[str, dict[str, Any]] = {}
    reasons: dict[str, int] = {}
    good_wins = 0
    invalid: dict[str, int] = {}
    fallbacks: dict[str, int] = {}
    for g in games:
        reasons[g["end_reason"]] = reasons.get(g["end_reason"], 0) + 1
        good_wins += g["winner"] == "good"
        for s, (name, role) in enumerate(zip(g["lineup"], g["roles"], strict=True)):
            side = "evil" if role in EVIL_ROLES else "good"
            won = int(g["winner"] == side)
            t = tallies.setdefault(name, {})
            for key in ("all", f"team:{side}", f"role:{role}"):
                w_n = t.setdefault(key, [0, 0])
                w_n[0] += won
                w_n[1] += 1
            invalid[name] = invalid.get(name, 0) + g["invalid_actions"][s]
            fallbacks[name] = fallbacks.get(name, 0) + g["fallback_actions"][s]
            llm = (g.get("llm_stats") or [None] * len(g["lineup"]))[s]
            if llm:  # a model seat repairs bad replies itself; count what it had to repair
                t.setdefault("llm", {})
                for key, value in llm.items():
                    t["llm"][key] = t["llm"].get(key, 0) + value
    entrants = {}
    for name, t in sorted(tallies.items()):
        entrants[name] = {
            "overall": _rate(*t["all"]),
            "teams": {k[5:]: _rate(*v) for k, v in sorted(t.items()) if k.startswith("team:")},
            "roles": {k[5:]: _rate(*v) for k, v in sorted(t.items()) if k.startswith("role:")},
            "invalid_actions": invalid[name],
            "fallback_actions": fallbacks[name],
        }
        if "llm" in t:
            entrants[name]["llm"] = t["llm"]
    return {
        "games": len(games),
        "good_win": _rate(good_wins, len(games)),
        "end_reasons": dict(sorted(reasons.items())),
        "entrants": entrants,
        "elo": elo_ratings(games),
    }


def side_matchup(
    good: str, evil: str, *, num_games: int, config: AvalonConfig, seed: int = 0
) -> dict[str, Any]:
    """Good win rate when every good seat is ``good`` and every evil seat is ``evil`` (entrant specs).

    Example:
        >>> side_matchup("rule", "random", num_games=20, config=AvalonConfig(5))["good_win"]["games"]
        20
    """
    good_f, evil_f = make_entrant(good), make_entrant(evil)
    games = []
    for index in range(num_games):
        _, roles, game_seed = schedule(["x"], config, seed, index)
        players = [evil_f() if r in EVIL_ROLES else good_f() for r in roles]
        res = play_game(players, config=config, seed=game_seed, roles=roles)
        games.append({**res, "lineup": [evil if r in EVIL_ROLES else good for r in roles]})
    wins = sum(g["winner"] == "good" for g in games)
    reasons: dict[str, int] = {}
    for g in games:
        reasons[g["end_reason"]] = reasons.get(g["end_reason"], 0) + 1
    return {
        "good": good,
        "evil": evil,
        "num_players": config.num_players,
        "good_win": _rate(wins, num_games),
        "end_reasons": dict(sorted(reasons.items())),
    }
