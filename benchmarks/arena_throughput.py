"""Avalon throughput: full games per second on one core.

Measures, for 5 and 10 players (official rules; one discussion round per proposal, and none):

* ``engine``   - the rules engine with bots deciding from ``AvalonGame.view`` (discrete codes);
* ``harness``  - ``arena.avalon.play.play_game`` (the text env, as tournaments use it) with bots;
* ``aec``      - the full turn-based loop: PettingZoo ``raw_env`` (discrete variant), the acting
  seat's full observation (features, mask, text transcript) built at every step and a random legal
  action drawn from the mask.
* ``user loop`` - the loop a user writes on the default ``avalon_v0.env(...)`` (PettingZoo's
  wrappers): ``for agent in env.agent_iter()``, ``env.last()``, and
  ``np.random.choice(np.flatnonzero(obs["action_mask"]))`` (a NumPy integer) for a live seat.

Each figure is the best of ``--repeats`` passes, as wall-clock games/s and as games per CPU-second
of this process (``time.process_time``: what one core delivers, less sensitive to other jobs on a
shared machine).

Usage: python benchmarks/arena_throughput.py [--games 300] [--players 5 10] [--repeats 3]

Before/after in one run: ``--compare DIR`` names another checkout of the project (for instance
``git worktree add /tmp/before <commit>``); the full loop (``aec``) of that checkout's ``arena`` and of
this one then run in turns, each pass in a fresh process, and the ratio of games per CPU-second of
each pair is printed (pairs taken close together see the same load on a shared machine);
``--loop user`` times the user loop instead:

    python benchmarks/arena_throughput.py --players 5 --games 200 --compare /tmp/before --pairs 9
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from arena import avalon_v0
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


def user_loop_games(cfg: AvalonConfig, games: int) -> int:
    env = avalon_v0.env(config=cfg)
    np.random.seed(0)
    for seed in range(games):
        env.reset(seed=seed)
        for _agent in env.agent_iter():
            obs, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                action = None
            else:
                action = np.random.choice(np.flatnonzero(obs["action_mask"]))
            env.step(action)
    return games


LOOPS = {"aec": aec_games, "user": user_loop_games}


def _one_pass(players: int, rounds: int, games: int, loop: str) -> None:
    """One timed pass of a loop, for ``--compare``: prints where ``arena`` came from and the rates."""
    import arena

    cfg = AvalonConfig(players, discussion_rounds=rounds)
    LOOPS[loop](cfg, 20)  # warm caches
    t, c = time.perf_counter(), time.process_time()
    LOOPS[loop](cfg, games)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    print(json.dumps({"arena": arena.__file__, "games_per_s": games / wall, "games_per_cpu_s": games / cpu}))


def _pass_in(checkout: Path, players: int, rounds: int, games: int, loop: str) -> float:
    """Games per CPU-second of one pass of ``loop`` with ``checkout``'s ``arena`` (a fresh process)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, __file__, "--one-pass", str(players), str(rounds), "--games", str(games), "--loop", loop]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.splitlines()[-1])
    if not Path(result["arena"]).resolve().is_relative_to(checkout.resolve()):
        raise RuntimeError(f"the pass for {checkout} imported arena from {result['arena']}")
    return result["games_per_cpu_s"]


def compare(other: Path, players: list[int], games: int, pairs: int, loop: str = "aec") -> None:
    """``loop`` with ``other``'s arena and with this checkout's, in turns; ratio per pair."""
    this = Path(__file__).resolve().parent.parent
    print(f"loop: {loop}\nbefore: {other}\nafter:  {this}")
    print(f"{'players':>7} {'discussion':>10} {'before, games/CPU-s':>20} {'after, games/CPU-s':>19} "
          f"{'after/before':>24}")
    for n in players:
        for rounds in (1, 0):
            before, after = [], []
            for i in range(pairs):
                # Alternate which side goes first, so a trend in the load favours neither.
                sides = ((other, before), (this, after)) if i % 2 == 0 else ((this, after), (other, before))
                for checkout, rates in sides:
                    rates.append(_pass_in(checkout, n, rounds, games, loop))
            ratios = sorted(a / b for a, b in zip(after, before))
            print(
                f"{n:>7} {rounds:>10} {statistics.median(before):>20.0f} {statistics.median(after):>19.0f} "
                f"{statistics.median(ratios):>10.3f}x ({ratios[0]:.3f}-{ratios[-1]:.3f})",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--players", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="another checkout of the project: time the full loop of its arena and of this one in turns",
    )
    parser.add_argument("--pairs", type=int, default=9, help="passes of each side with --compare (median ratio)")
    parser.add_argument(
        "--loop",
        choices=sorted(LOOPS),
        default="aec",
        help="the loop --compare times: the raw AEC loop, or the user loop on avalon_v0.env()",
    )
    parser.add_argument("--one-pass", type=int, nargs=2, metavar=("PLAYERS", "ROUNDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_pass:
        _one_pass(*args.one_pass, args.games, args.loop)
        return
    print(
        f"python {platform.python_version()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cpus visible, single process, load average {os.getloadavg()[0]:.1f}"
    )
    if args.compare:
        if not (args.compare / "arena" / "avalon").is_dir():
            parser.error(f"--compare must name a checkout of the project (with arena/avalon), got {args.compare}")
        if args.pairs < 1:
            parser.error(f"--pairs must be >= 1, got {args.pairs}")
        compare(args.compare, args.players, args.games, args.pairs, args.loop)
        return
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
            rows.append(("user loop: env(), agent_iter", lambda c=cfg: user_loop_games(c, args.games)))
            for name, run in rows:
                wall, cpu = _timed(run, args.repeats)
                print(f"{n:>7} {rounds:>10} {name:<28} {wall:>9.0f} {cpu:>12.0f}", flush=True)


if __name__ == "__main__":
    main()
