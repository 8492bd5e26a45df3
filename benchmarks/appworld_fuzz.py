"""AppWorld robustness fuzz: seeded hostile actions in tool and code mode; exceptions out of step() and
observations outside observation_space (both must be 0); host memory after huge API arguments.

Run: python benchmarks/appworld_fuzz.py [--n 10000] [--modes tool code] [--seed 0] [--timeout-s 0.3]
     python benchmarks/appworld_fuzz.py --memory --timeout
"""

from __future__ import annotations

import argparse
import os
import time

from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.appworld.fuzz import fuzz_actions, fuzz_env


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def host_memory() -> None:
    """Host RSS around three code steps that each pass 40 strings of 7 MB to an API, then a reset."""
    env = AppWorldEnv(split="train", memory_mb=512)
    env.reset(options={"index": 0})
    env.step(
        "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
        "me = apis.supervisor.show_profile()\n"
        "tok = apis.notes.login(username=me['email'], password=pw['notes'])['access_token']"
    )
    before = rss_mb()
    for _ in range(3):
        env.step("for i in range(40):\n    apis.notes.create_note(access_token=tok, title='t', content='c' * 7000000)")
    after = rss_mb()
    env.reset(options={"index": 0})
    print(f"host RSS: {before:.0f} MB before, {after:.0f} MB after 3 steps with 40 x 7 MB arguments, "
          f"{rss_mb():.0f} MB after reset()")
    env.close()


def timeout_probe(wall_s: float = 2.0) -> None:
    """Wall time of a cell that swallows the timeout, and how many times its one API call ran."""
    env = AppWorldEnv(split="train", timeout_s=wall_s)
    env.reset(options={"index": 0})
    calls = env._ctx.num_calls
    start = time.perf_counter()
    obs, *_, info = env.step(
        "apis.api_docs.show_app_descriptions()\n"
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    )
    took = time.perf_counter() - start
    print(f"timeout_s={wall_s:g}: the step took {took:.1f} s, its API call ran {env._ctx.num_calls - calls} time(s), "
          f"fault {info.get('fault')!r}")
    env.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--modes", nargs="+", default=["tool", "code"], choices=["tool", "code"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout-s", type=float, default=0.3, help="per-cell wall limit (code mode)")
    ap.add_argument("--memory", action="store_true", help="only measure host memory under huge API arguments")
    ap.add_argument("--timeout", action="store_true", help="only measure a cell that swallows its timeout")
    args = ap.parse_args()
    if args.memory or args.timeout:
        if args.memory:
            host_memory()
        if args.timeout:
            timeout_probe()
        return
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
