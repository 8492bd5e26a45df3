"""AppWorld robustness fuzz: seeded hostile actions in tool and code mode; exceptions out of step() and
observations outside observation_space (both must be 0).

Run: python benchmarks/appworld_fuzz.py [--n 10000] [--modes tool code] [--seed 0] [--timeout-s 0.3]
"""

from __future__ import annotations

import argparse
import time

from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.appworld.fuzz import fuzz_actions, fuzz_env


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--modes", nargs="+", default=["tool", "code"], choices=["tool", "code"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout-s", type=float, default=0.3, help="per-cell wall limit (code mode)")
    args = ap.parse_args()
    for mode in args.modes:
        env = AppWorldEnv(split="train", action_mode=mode, timeout_s=args.timeout_s)
        start = time.perf_counter()
        report = fuzz_env(env, fuzz_actions(args.n, mode, seed=args.seed))
        took = time.perf_counter() - start
        env.close()
        print(
            f"{mode} mode: {args.n} actions in {took:.1f} s, exceptions out of step() {report['exceptions']}, "
            f"observations outside the space {report['outside_space']}, faults {report['faults']}"
        )
        for action, problem in report["examples"]:
            print(f"  e.g. {action[:80]!r} -> {problem[:160]}")


if __name__ == "__main__":
    main()
