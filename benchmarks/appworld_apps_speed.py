"""Reset and one-API step: the real apps (``evolver/AppWorldApps-v0``) beside the embedded world (``AppWorld-v0``).

Both run agent code in the same sandbox; they differ in what answers the API calls (the embedded
world's SQLite handlers in this process, or AppWorld's FastAPI apps in their own process over a pipe)
and in what a reset copies (6 small in-memory databases, or the 12 databases of the real apps, loaded
from the on-disk base world into memory by the package's own ``set_local_dbs``). Measured in one
command, alternating the two environments, so both see the same machine load.

Also printed: the real apps' cold start (start the server process, import the package, open the world)
and, with ``--build``, the generation of a fresh world (seed 0) in a temporary cache.

Run (needs ``bash scripts/setup.sh appworld-apps``):
    python benchmarks/appworld_apps_speed.py [--resets 30] [--steps 200] [--build]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.appworld_apps.backend import AppsServer, unavailable_reason
from evolver_gym.appworld_apps.env import AppWorldAppsEnv

STEP = "print(apis.supervisor.show_profile()['first_name'])"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def ms(values: list[float]) -> str:
    return f"median {1000 * statistics.median(values):.1f} ms, p90 {1000 * pct(values, 0.9):.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resets", type=int, default=30)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--build", action="store_true", help="also time the generation of a fresh world")
    args = ap.parse_args()
    reason = unavailable_reason()
    if reason is not None:
        raise SystemExit(f"AppWorld's apps are not installed: {reason}")

    if args.build:
        before = os.environ.get("EVOLVER_APPWORLD_APPS_CACHE")
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["EVOLVER_APPWORLD_APPS_CACHE"] = tmp
            t = time.perf_counter()
            with AppsServer() as server:
                server.open_world(0)
            print(f"world generation (seed 0, 13 people, all 9 apps) and open: {time.perf_counter() - t:.1f} s")
        if before is None:
            del os.environ["EVOLVER_APPWORLD_APPS_CACHE"]
        else:
            os.environ["EVOLVER_APPWORLD_APPS_CACHE"] = before

    t = time.perf_counter()
    real = AppWorldAppsEnv(split="train", max_steps=10**9)
    real_tasks = real.tasks("train")
    print(f"real apps, cold start (server process, package import, world opened): {time.perf_counter() - t:.1f} s")
    emb = AppWorldEnv(split="train", max_steps=10**9)
    emb_tasks = emb.tasks("train")
    real.reset(options={"task": real_tasks[0]})
    emb.reset(options={"task": emb_tasks[0]})

    resets = {"embedded": [], "real": []}
    for i in range(args.resets):
        for name, env, tasks in (("embedded", emb, emb_tasks), ("real", real, real_tasks)):
            t = time.perf_counter()
            env.reset(options={"task": tasks[i % len(tasks)]})
            resets[name].append(time.perf_counter() - t)
    steps = {"embedded": [], "real": []}
    for _ in range(args.steps):
        for name, env in (("embedded", emb), ("real", real)):
            t = time.perf_counter()
            _, _, _, _, info = env.step(STEP)
            steps[name].append(time.perf_counter() - t)
            assert info["action_valid"], info
    print("| metric | AppWorld-v0 (embedded) | AppWorldApps-v0 (real apps) |")
    print("|---|---|---|")
    print(f"| reset ({args.resets}) | {ms(resets['embedded'])} | {ms(resets['real'])} |")
    print(f"| one-API code step ({args.steps}) | {ms(steps['embedded'])} | {ms(steps['real'])} |")
    emb.close()
    real.close()


if __name__ == "__main__":
    main()
