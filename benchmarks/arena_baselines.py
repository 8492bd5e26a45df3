"""Avalon bot baselines: good win rate (Wilson 95% interval) for each good-vs-evil bot pairing.

Every good seat is played by the first kind, every evil seat by the second; roles rotate over
seats by the tournament schedule. Rules: official (Merlin + Assassin, evil wins on five rejections,
one discussion round), plus the AvalonBench/AgentEvolver variant at 5 players.

Usage: python benchmarks/arena_baselines.py [--games 500] [--players 5 7 10]
"""

from __future__ import annotations

import argparse

from arena.avalon import AvalonConfig
from arena.avalon.tournament import side_matchup

PAIRS = [
    ("random", "random"),
    ("rule", "random"),
    ("random", "rule"),
    ("rule", "rule"),
    ("rule", "rule_votes"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=500)
    parser.add_argument("--players", type=int, nargs="+", default=[5, 7, 10])
    args = parser.parse_args()
    configs = [(f"official, {n}p", AvalonConfig(n)) for n in args.players]
    configs.append(("AvalonBench rules, 5p", AvalonConfig.avalonbench(5)))
    print("| rules | good | evil | games | good win rate | 95% CI | end reasons |")
    print("|---|---|---|---|---|---|---|")
    for label, cfg in configs:
        for good, evil in PAIRS:
            r = side_matchup(good, evil, num_games=args.games, config=cfg, seed=0)
            g = r["good_win"]
            reasons = ", ".join(f"{k} {v}" for k, v in r["end_reasons"].items())
            print(
                f"| {label} | {good} | {evil} | {g['games']} | {g['win_rate']:.3f} | "
                f"[{g['ci95'][0]:.3f}, {g['ci95'][1]:.3f}] | {reasons} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
