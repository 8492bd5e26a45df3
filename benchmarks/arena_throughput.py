"""Avalon throughput: full games per second on one core.

Measures, for 5 and 10 players (official rules, one discussion round per proposal):

* ``engine``   - the rules engine with bots deciding from ``AvalonGame.view`` (discrete codes);
* ``harness``  - ``arena.avalon.play.play_game`` (the text env, as tournaments use it) with bots;
* ``aec``      - the PettingZoo ``raw_env`` (discrete variant) with a full observation (features,
  mask, text) built for the acting seat every step and a random legal action from the mask.

Usage: python benchmarks/arena_throughput.py [--games 300] [--players 5 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from arena.avalon import AvalonConfig, AvalonGame
from arena.avalon.bots import make_player
from arena.avalon.env import raw_env
from arena.avalon.play import play_game


def engine_games(cfg: AvalonConfig, kind: str, games: int) -> float:
    rng = np.random.default_rng(0)
    players = [make_player(kind) for _ in range(cfg.num_players)]
    start = time.perf_counter()
    for g_i in range(games):
        game = AvalonGame.deal(cfg, rng)
        for s, p in enumerate(players):
            p.reset(s, g_i)
        while not game.done:
            s = game.actor
            game.step(players[s].act(game.view(s)))
    return games / (time.perf_counter() - start)


def harness_games(cfg: AvalonConfig, kind: str, games: int) -> float:
    start = time.perf_counter()
    for seed in range(games):
        play_game([make_player(kind) for _ in range(cfg.num_players)], config=cfg, seed=seed)
    return games / (time.perf_counter() - start)


def aec_games(cfg: AvalonConfig, games: int) -> float:
    env = raw_env(config=cfg)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for seed in range(games):
        env.reset(seed=seed)
        while not env.game.done:
            obs = env.observe(env.agent_selection)
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return games / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--players", type=int, nargs="+", default=[5, 10])
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cpus visible, single process"
    )
    print(f"{'players':>7} {'setup':<28} {'games/s':>9}")
    for n in args.players:
        cfg = AvalonConfig(n)
        for kind in ("rule", "random"):
            engine_games(cfg, kind, 20)  # warm caches
            print(f"{n:>7} {'engine + ' + kind + ' bots':<28} {engine_games(cfg, kind, args.games):>9.0f}")
        print(f"{n:>7} {'harness (text env) + rule':<28} {harness_games(cfg, 'rule', args.games):>9.0f}")
        print(f"{n:>7} {'aec discrete, observe+mask':<28} {aec_games(cfg, args.games):>9.0f}")


if __name__ == "__main__":
    main()
