"""Diplomacy tournaments: fair seating over the seven powers, resumable JSONL results, scores, Elo.

Fairness: games come in blocks of seven. Within a block the entrants keep their seats (dealt
round-robin over seats, rotated between blocks and shuffled) and the seats rotate one power per
game, so each entrant plays every power equally often (with entrants that do not divide seven,
the seat counts even out over consecutive blocks). The results file is read and appended as in
:mod:`arena.avalon.tournament` (a rerun with the same file resumes; a cut last line is replayed).

Summary per entrant: power-games played, mean score (sum-of-squares, a solo 1) with a Student's t
95% interval, solo wins (Wilson 95%), mean supply centres, and per-power mean scores; Elo from
every pair of powers in every game (the higher score wins the pair, equal scores draw).

Example:
    >>> s = run_tournament(["rule", "random"], num_games=7, config=DiplomacyConfig(max_year=1903))
    >>> s["games"], sorted(s["entrants"]), s["entrants"]["rule"]["power_games"]
    (7, ['random', 'rule'], 21)
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from typing import Any

from evolver_gym.core.seeding import derive_seed, make_rng
from evolver_gym.core.stats import mean_interval, wilson_interval

from ..games_log import play_logged
from .bots import BOT_KINDS, Bot, make_bot
from .game import POWERS, DiplomacyConfig
from .play import play_game

__all__ = ["run_tournament", "schedule", "summarize", "elo_ratings", "make_entrant"]


def make_entrant(spec: str, name: str | None = None) -> Callable[[], Bot]:
    """A factory of fresh players for ``spec``: ``random``, ``rule`` or ``llm:<model>@<base_url>``
    (an OpenAI-compatible endpoint; :class:`~arena.diplomacy.llm_seat.DiplomacyLLMSeat`)."""
    if spec.startswith("llm:"):
        model, _, base_url = spec[4:].partition("@")
        if not model:
            raise ValueError(f"llm entrant spec {spec!r} lacks a model: use 'llm:<model>@<base_url>'")

        def factory() -> Bot:
            from evolver_gym.core.llm import OpenAIChatClient

            from .llm_seat import DiplomacyLLMSeat

            client = OpenAIChatClient(model=model, base_url=base_url or None, role="arena")
            return DiplomacyLLMSeat(client, name=name or spec)

        return factory
    if spec not in BOT_KINDS:
        raise ValueError(f"unknown Diplomacy entrant {spec!r}; use one of {BOT_KINDS} or 'llm:<model>@<base_url>'")
    return lambda: make_bot(spec, name)


def schedule(entrants: list[str], seed: int, index: int) -> tuple[list[str], int]:
    """``(entrant per power in power order, game seed)`` of game ``index``."""
    n = len(POWERS)
    block, r = divmod(index, n)
    rng = make_rng(seed, "diplomacy-block", block)
    seats = [entrants[(s + block) % len(entrants)] for s in range(n)]
    rng.shuffle(seats)
    lineup = [seats[(j + r) % n] for j in range(n)]
    return lineup, derive_seed(seed, "diplomacy-game", index)


def run_tournament(
    entrants: Iterable[str] | dict[str, str],
    *,
    num_games: int,
    config: DiplomacyConfig,
    seed: int = 0,
    out: str | os.PathLike | None = None,
    save_records: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Play a tournament and return its summary (``<out>.summary.json`` too when ``out`` is given).

    Args:
        entrants: Entrant specs (names = specs) or ``{name: spec}``.
        num_games: Games in total (a multiple of 7 gives every entrant every power equally often).
        config: The rules of every game.
        seed: Tournament seed (seating and the bots' seeds).
        out: JSONL file of game results; rerunning with the same file resumes.
        save_records: Keep every game's record (for the viewer) in the results.
        progress: Called with ``(games_done, num_games)``.
    """
    specs = dict(entrants) if isinstance(entrants, dict) else {e: e for e in entrants}
    if not specs:
        raise ValueError("a tournament needs at least one entrant")
    if not isinstance(num_games, int) or num_games < 1:
        raise ValueError(f"num_games must be a positive int, got {num_games!r}")
    factories = {name: make_entrant(spec, name) for name, spec in specs.items()}
    names = sorted(specs)
    def play(index: int) -> tuple[dict[str, Any], list[Bot]]:
        lineup, game_seed = schedule(names, seed, index)
        players = [factories[name]() for name in lineup]
        return {"lineup": lineup, **play_game(players, config=config, seed=game_seed)}, players

    identity = {"game": "diplomacy", "tournament_seed": seed, "config": config.to_dict()}
    return play_logged(out, num_games, identity=identity, play=play, summarize=summarize,
                       save_records=save_records, progress=progress)


def elo_ratings(games: list[dict[str, Any]], k: float = 32.0, start: float = 1500.0) -> dict[str, float]:
    """Elo over every pair of powers played by different entrants in each game, in game order: the
    pair's higher score wins (equal scores draw); one game's updates are applied together, each pair
    weighted ``1/6`` (the pairs one power takes part in)."""
    ratings: dict[str, float] = {}
    for g in games:
        lineup = g["lineup"]
        for name in lineup:
            ratings.setdefault(name, start)
        scores = [g["scores"][p] for p in POWERS]
        delta: dict[str, float] = {}
        for i in range(len(POWERS)):
            for j in range(i + 1, len(POWERS)):
                a, b = lineup[i], lineup[j]
                if a == b:
                    continue
                expect = 1.0 / (1.0 + 10 ** ((ratings[b] - ratings[a]) / 400))
                result = 1.0 if scores[i] > scores[j] else 0.0 if scores[i] < scores[j] else 0.5
                d = k * (result - expect) / (len(POWERS) - 1)
                delta[a] = delta.get(a, 0.0) + d
                delta[b] = delta.get(b, 0.0) - d
        for name, d in delta.items():
            ratings[name] += d
    return {name: round(r, 1) for name, r in sorted(ratings.items())}


def _mean(values: list[float]) -> dict[str, Any]:
    mean, lo, hi = mean_interval(values)
    ci = [round(lo, 4), round(hi, 4)] if math.isfinite(lo) else None
    return {"n": len(values), "mean": round(mean, 4), "ci95": ci}


def summarize(games: list[dict[str, Any]]) -> dict[str, Any]:
    """Per entrant: mean score (t 95% interval), solo wins (Wilson 95%), mean centres, per-power
    mean scores, invalid actions; end reasons; Elo."""
    per: dict[str, dict[str, Any]] = {}
    reasons: dict[str, int] = {}
    for g in games:
        reasons[g["end_reason"]] = reasons.get(g["end_reason"], 0) + 1
        for s, (name, power) in enumerate(zip(g["lineup"], POWERS)):
            t = per.setdefault(name, {"scores": [], "centers": [], "solos": 0, "powers": {}, "invalid": 0})
            llm = (g.get("llm_stats") or [None] * len(POWERS))[s]
            if llm:  # a model seat repairs bad replies itself; count what it had to repair
                for key, value in llm.items():
                    t.setdefault("llm", {})[key] = t.get("llm", {}).get(key, 0) + value
            t["scores"].append(g["scores"][power])
            t["centers"].append(g["supply_centers"][power])
            t["solos"] += g["winner"] == power
            t["powers"].setdefault(power, []).append(g["scores"][power])
            t["invalid"] += g["invalid_actions"][s]
    entrants = {}
    for name, t in sorted(per.items()):
        n = len(t["scores"])
        lo, hi = wilson_interval(t["solos"], n)
        entrants[name] = {
            "power_games": n,
            "score": _mean(t["scores"]),
            "solo_wins": {"wins": t["solos"], "rate": round(t["solos"] / n, 4), "ci95": [round(lo, 4), round(hi, 4)]},
            "mean_centers": round(sum(t["centers"]) / n, 3),
            "powers": {p: round(sum(v) / len(v), 4) for p, v in sorted(t["powers"].items())},
            "invalid_actions": t["invalid"],
        }
        if "llm" in t:
            entrants[name]["llm"] = t["llm"]
    return {
        "games": len(games),
        "end_reasons": dict(sorted(reasons.items())),
        "entrants": entrants,
        "elo": elo_ratings(games),
    }
