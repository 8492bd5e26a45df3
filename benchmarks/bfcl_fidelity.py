"""BFCL multi-turn fidelity, baselines and speed: ``evolver/BFCL-v0`` against ``bfcl-eval``'s own checker.

Every entry of the chosen categories (all 800 by default) is played by five callers: the oracle (the
ground truth as replies), do-nothing (a hand-back every turn), one-call-short (the oracle less its last
call), a seeded random caller (``RandomCaller``) and a perturbed oracle (one call of one turn dropped,
duplicated or given another argument value, seeded per entry). For each episode the env's reward is
compared with the verdict ``bfcl-eval`` gives the same replies the way its eval runner does: each
reply decoded by ``default_decode_execute_prompting`` (failed or empty decodes skipped), turn count
checked (``force_terminated``), then ``multi_turn_checker``, run here independently of the env on a
fresh model name.

    python benchmarks/bfcl_fidelity.py [--categories base miss_func miss_param long_context] [--limit N]

Prints the parity table, the success of each caller per category with Wilson 95% intervals, and the
mean wall time of ``reset`` and ``step``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evolver_gym.bfcl.env import BFCLEnv
from evolver_gym.bfcl.package import CATEGORIES, entries, ground_truth
from evolver_gym.bfcl.policies import RandomCaller, one_call_short, perturb
from evolver_gym.bfcl.runtime import official_verdict
from evolver_gym.bfcl.tasks import HANDBACK, oracle_actions
from evolver_gym.core.seeding import make_rng
from evolver_gym.core.stats import wilson_interval

CALLERS = ("oracle", "do-nothing", "one-call-short", "random", "perturbed")


def play(env: BFCLEnv, task_id: str, caller: str, oracle: list[str], seed: int, timing: dict) -> tuple[float, bool]:
    t0 = time.perf_counter()
    obs, info = env.reset(options={"task_id": task_id})
    timing["reset"].append(time.perf_counter() - t0)
    rng = make_rng(seed, task_id, caller)
    if caller == "random":
        policy = RandomCaller(rng)
    else:
        queue = {"oracle": oracle, "do-nothing": [], "one-call-short": one_call_short(oracle),
                 "perturbed": perturb(oracle, rng)}[caller]
        queue = list(queue)
        policy = lambda o, i: queue.pop(0) if queue else HANDBACK  # noqa: E731
    reward, done = 0.0, False
    while not done:
        action = policy(obs, info)
        t0 = time.perf_counter()
        obs, reward, term, trunc, info = env.step(action)
        timing["step"].append(time.perf_counter() - t0)
        done = term or trunc
    return reward, official_verdict(env._entry, env._truth, env.raw_turns())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", nargs="+", default=list(CATEGORIES), choices=CATEGORIES)
    parser.add_argument("--limit", type=int, default=200, help="entries per category (200: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not 1 <= args.limit <= 200:
        parser.error(f"--limit must be in [1, 200], got {args.limit}")

    env = BFCLEnv(categories=tuple(args.categories))
    timing: dict[str, list[float]] = {"reset": [], "step": []}
    wins = {(c, k): 0 for c in args.categories for k in CALLERS}
    agree = {k: [0, 0] for k in CALLERS}
    official_wins = {k: 0 for k in CALLERS}
    start = time.perf_counter()
    for category in args.categories:
        truth = ground_truth(category)
        for entry in entries(category)[: args.limit]:
            oracle = oracle_actions(truth[entry["id"]])
            for caller in CALLERS:
                reward, official = play(env, f"bfcl/{entry['id']}", caller, oracle, args.seed, timing)
                wins[(category, caller)] += int(reward == 1.0)
                official_wins[caller] += int(official)
                agree[caller][0] += int((reward == 1.0) == official)
                agree[caller][1] += 1
    elapsed = time.perf_counter() - start
    n = args.limit
    print(f"bfcl-eval {__import__('importlib.metadata').metadata.version('bfcl-eval')}, categories "
          f"{' '.join(args.categories)}, {n} entries each, seed {args.seed}, {elapsed:.0f} s")
    print("\n| caller | env successes | bfcl-eval checker successes | reward == checker |")
    print("|---|---|---|---|")
    for caller in CALLERS:
        ok, total = agree[caller]
        env_total = sum(wins[(c, caller)] for c in args.categories)
        print(f"| {caller} | {env_total}/{total} | {official_wins[caller]}/{total} | {ok}/{total} "
              f"({100 * ok / total:.1f}%) |")
    print("\n| caller | " + " | ".join(args.categories) + " |")
    print("|---|" + "---|" * len(args.categories))
    for caller in CALLERS:
        cells = []
        for c in args.categories:
            k = wins[(c, caller)]
            lo, hi = wilson_interval(k, n)
            cells.append(f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
        print(f"| {caller} | " + " | ".join(cells) + " |")
    for key in ("reset", "step"):
        values = np.array(timing[key]) * 1000
        print(f"\n{key}: mean {values.mean():.2f} ms, median {np.median(values):.2f} ms, "
              f"p95 {np.percentile(values, 95):.2f} ms over {len(values):,} calls")


if __name__ == "__main__":
    main()
