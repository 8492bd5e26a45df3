"""Avalon throughput: full games per second on one core.

Measures, for 5 and 10 players (official rules; one discussion round per proposal, and none):

* ``engine``   - the rules engine with bots deciding from ``AvalonGame.view`` (discrete codes);
* ``harness``  - ``arena.avalon.play.play_game`` (the text env, as tournaments use it) with bots;
* ``aec``      - the full turn-based loop: PettingZoo ``raw_env`` (discrete variant), the acting
  seat's full observation (features, mask, text transcript) built at every step and a random legal
  action drawn from the mask.

Each figure is the best of ``--repeats`` passes, as wall-clock games/s and as games per CPU-second
of this process (``time.process_time``: what one core delivers, less sensitive to other jobs on a
shared machine).

Usage: python benchmarks/arena_throughput.py [--games 300] [--players 5 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time
from collections.abc import Callable

import numpy as np

from arena.avalon import AvalonConfig, AvalonGame
from arena.avalon.bots import make_player
from arena.avalon.env import raw_env
from arena.avalon.play import play_game


def _timed(run: Callable[[], int], repeats: int) -> tuple[float, float]:
    """``(games per wall second, games per CPU second)``, best of ``repeats`` passes."""
    wall = cpu = 0.0
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        games = run()
        wall = max(wall, games / (time.perf_counter() - t))
        cpu = max(cpu, games / max(time.process_time() - c, 1e-9))
    return wall, cpu


def engine_games(cfg: AvalonConfig, kind: str, games: int) -> int:
    rng = np.random.default_rng(0)
    players = [make_player(kind) for _ in range(cfg.num_players)]
    for g_i in range(games):
        game = AvalonGame.deal(cfg, rng)
        for s, p in enumerate(players):
            p.reset(s, g_i)
        while not game.done:
            s = game.actor
            game.step(players[s].act(game.view(s)))
    return games


def harness_games(cfg: AvalonConfig, kind: str, games: int) -> int:
    for seed in range(games):
        play_game([make_player(kind) for _ in range(cfg.num_players)], config=cfg, seed=seed)
    return games


def aec_games(cfg: AvalonConfig, games: int) -> int:
    env = raw_env(config=cfg)
    pick = random.Random(0).randrange
    for seed in range(games):
        env.reset(seed=seed)
        while not env.game.done:
            obs = env.observe(env.agent_selection)
            assert obs["text"] and obs["observation"].size  # every part of the observation is built
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[pick(len(legal))]))
    return games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--players", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cpus visible, single process, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'players':>7} {'discussion':>10} {'setup':<28} {'games/s':>9} {'games/CPU-s':>12}")
    for n in args.players:
        for rounds in (1, 0):
            cfg = AvalonConfig(n, discussion_rounds=rounds)
            rows = []
            for kind in ("rule", "random"):
                engine_games(cfg, kind, 20)  # warm caches
                rows.append((f"engine + {kind} bots", lambda k=kind, c=cfg: engine_games(c, k, args.games)))
            rows.append(("harness (text env) + rule", lambda c=cfg: harness_games(c, "rule", args.games)))
            rows.append(("aec discrete, observe+mask", lambda c=cfg: aec_games(c, args.games)))
            for name, run in rows:
                wall, cpu = _timed(run, args.repeats)
                print(f"{n:>7} {rounds:>10} {name:<28} {wall:>9.0f} {cpu:>12.0f}", flush=True)


if __name__ == "__main__":
    main()
