"""AppWorld throughput: reset time, one-API-call code step latency (median, p99), steps per second.

Run: python benchmarks/appworld_throughput.py [--resets 200] [--steps 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from evolver_gym.appworld.env import AppWorldEnv


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resets", type=int, default=200)
    ap.add_argument("--steps", type=int, default=2000)
    args = ap.parse_args()
    env = AppWorldEnv(split="train", max_steps=10**9)
    tasks = env.tasks("train")
    t0 = time.perf_counter()
    env.reset(options={"task": tasks[0]})
    first = time.perf_counter() - t0
    resets = []
    for i in range(args.resets):
        t = time.perf_counter()
        env.reset(options={"task": tasks[i % len(tasks)]})
        resets.append(time.perf_counter() - t)
    env.step(
        "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
        "me = apis.supervisor.show_profile()\n"
        "tok = apis.phone.login(username=me['phone_number'], password=pw['phone'])['access_token']"
    )
    steps = []
    start = time.perf_counter()
    for _ in range(args.steps):
        t = time.perf_counter()
        env.step("alarms = apis.phone.show_alarms(access_token=tok)")
        steps.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    env.close()
    print(f"first reset (starts the sandbox worker): {first * 1e3:.1f} ms")
    print(
        f"reset: median {statistics.median(resets) * 1e3:.2f} ms, p99 {pct(resets, 0.99) * 1e3:.2f} ms "
        f"over {args.resets}"
    )
    print(
        f"one-call code step: median {statistics.median(steps) * 1e3:.3f} ms, p99 {pct(steps, 0.99) * 1e3:.3f} ms "
        f"over {args.steps}"
    )
    print(f"steps per second (one env, sequential): {args.steps / total:.0f}")


if __name__ == "__main__":
    main()
