"""Diplomacy throughput: full games (1901 to the Winter of ``--max-year``) per CPU-second, one core.

Rows:

* ``game + bots``  - :class:`arena.diplomacy.game.DiplomacyGame` driven directly by the bots (the
  engine's legal orders, adjudication and our order checks; no observations);
* ``aec loop``     - the user's loop on ``diplomacy_v0.env()``: ``agent_iter``, ``last()`` (the board
  features and the text observation built at every step), the bots' orders as text;
* ``parallel``     - ``diplomacy_v0.parallel_env()``: one step per stage, every power's observation
  built at every step;
* ``aec discrete``  - ``diplomacy_v0.env(variant="discrete")``: one unit per step, a random choice
  among the mask (``np.random.choice(np.flatnonzero(mask))``), no press (the press row is skipped).

Each row is the best of ``--repeats`` passes; figures are games and adjudicated phases per CPU-second
of this process (``time.process_time``) and games per wall second.

Usage: python benchmarks/diplomacy_throughput.py [--games 20] [--max-year 1910] [--repeats 3] [--bots random]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from arena import diplomacy_v0
from arena.diplomacy.bots import BOT_KINDS, make_bot
from arena.diplomacy.game import POWERS, DiplomacyConfig, DiplomacyGame
from arena.diplomacy.orders import check_orders


def game_loop(cfg: DiplomacyConfig, kind: str, games: int) -> int:
    phases = 0
    for seed in range(games):
        g = DiplomacyGame(cfg)
        bots = {p: make_bot(kind) for p in POWERS}
        for p, b in bots.items():
            b.reset(p, seed)
        while not g.done:
            for p in list(g.acting):
                if g.stage == "press":
                    g.submit(p, press=[])
                else:
                    g.submit(p, orders=check_orders(g, p, bots[p].act(g))[0])
        phases += len(g.history)
    return phases


def aec_loop(cfg: DiplomacyConfig, kind: str, games: int) -> int:
    env = diplomacy_v0.env(config=cfg)
    phases = 0
    for seed in range(games):
        env.reset(seed=seed)
        bots = {p.lower(): make_bot(kind) for p in POWERS}
        for a, b in bots.items():
            b.reset(a.upper(), seed)
        for agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            assert obs["text"]
            env.step(None if terminated or truncated else bots[agent].act(env.unwrapped.game, obs["text"]))
        phases += len(env.unwrapped.game.history)
    return phases


def parallel_loop(cfg: DiplomacyConfig, kind: str, games: int) -> int:
    env = diplomacy_v0.parallel_env(config=cfg)
    phases = 0
    for seed in range(games):
        obs, _ = env.reset(seed=seed)
        bots = {p.lower(): make_bot(kind) for p in POWERS}
        for a, b in bots.items():
            b.reset(a.upper(), seed)
        while env.agents:
            actions = {a: bots[a].act(env.game, obs[a]["text"]) for a in env.agents}
            obs, *_ = env.step(actions)
        phases += len(env.game.history)
    return phases


def discrete_loop(cfg: DiplomacyConfig, kind: str, games: int) -> int:
    env = diplomacy_v0.env(config=cfg, variant="discrete")
    phases = 0
    np.random.seed(0)
    for seed in range(games):
        env.reset(seed=seed)
        for _agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated else np.random.choice(np.flatnonzero(obs["action_mask"])))
        phases += len(env.unwrapped.game.history)
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--max-year", type=int, default=1910)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bots", choices=BOT_KINDS, default="random")
    args = parser.parse_args()
    if args.games < 1 or args.repeats < 1:
        parser.error(f"--games and --repeats must be positive, got {args.games} and {args.repeats}")
    print(
        f"python {platform.python_version()}, {platform.processor() or platform.machine()}, "
        f"single process, load average {os.getloadavg()[0]:.1f}; {args.bots} bots, games to Winter {args.max_year}"
    )
    print(f"{'press':>5} {'setup':<16} {'games/s':>8} {'games/CPU-s':>12} {'phases/CPU-s':>13}")
    game_loop(DiplomacyConfig(max_year=1901), args.bots, 1)  # load the map once
    for press in (0, 1):
        cfg = DiplomacyConfig(max_year=args.max_year, press_rounds=press)
        loops = [("game + bots", game_loop), ("aec loop", aec_loop), ("parallel", parallel_loop)]
        if not press:
            loops.append(("aec discrete", discrete_loop))
        for name, loop in loops:
            best = (0.0, 0.0, 0.0)
            for _ in range(args.repeats):
                t, c = time.perf_counter(), time.process_time()
                phases = loop(cfg, args.bots, args.games)
                wall, cpu = time.perf_counter() - t, time.process_time() - c
                best = max(best, (args.games / cpu, args.games / wall, phases / cpu))
            print(f"{press:>5} {name:<16} {best[1]:>8.1f} {best[0]:>12.1f} {best[2]:>13.0f}", flush=True)


if __name__ == "__main__":
    main()
