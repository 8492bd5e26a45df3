"""Throughput of the LLM client and of attribution, against the loopback scripted server.

Prints: client requests/s at several concurrency limits (server answers after a fixed latency),
the cost of retries under injected 500s, LLM-judge trajectories/s through ``chat_batch``, and the
per-step overhead of the ``Attribution`` wrapper with the oracle (on WebShop when it is
importable, else on a tiny counter env).

    python benchmarks/attribution_throughput.py [--latency 0.05] [--requests 64]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

from evolver_gym.core import Step, Task, Trajectory
from evolver_gym.core.llm.testing import Fault, ScriptedLLMServer
from wrappers.attribution import Attribution, LLMJudgeAttributor, OracleAttributor

MSG = [{"role": "user", "content": "label these steps please"}]


def client_throughput(latency: float, n: int) -> None:
    def handler(body):
        time.sleep(latency)
        return "Step 1 Judgment: GOOD"

    with ScriptedLLMServer(handler=handler) as server:
        for conc in (1, 4, 16):
            client = server.client(concurrency=conc)
            t = time.perf_counter()
            client.chat_batch([MSG] * n)
            dt = time.perf_counter() - t
            print(f"client  concurrency={conc:<3d} {n} requests, server latency {latency * 1e3:.0f} ms: "
                  f"{n / dt:8.1f} req/s")
        server.handler = lambda body: "ok"
        client = server.client(concurrency=1, backoff_base=0.0, backoff_max=0.0)
        t = time.perf_counter()
        client.chat_batch([MSG] * n)
        base = (time.perf_counter() - t) / n
        t = time.perf_counter()
        for _ in range(n):
            server.fail_next(Fault.http(500))  # faults are served before queued replies
            client.chat(MSG)
        retry = (time.perf_counter() - t) / n
        print(f"client  per-request overhead (no latency): {base * 1e3:.2f} ms; with one 500 + retry "
              f"(zero backoff): {retry * 1e3:.2f} ms; retries counted: {client.stats.snapshot()['retries']}")


def judge_throughput(latency: float, n: int, steps: int = 8) -> None:
    reply = "\n".join(f"Step {i + 1} Analysis: fine.\nStep {i + 1} Judgment: GOOD" for i in range(steps))

    def handler(body):
        time.sleep(latency)
        return reply

    trajs = [Trajectory(Task(f"t/{k}", "bench", "buy a red shirt"),
                        [Step("WebShop [SEP] Search " * 20, f"search[red shirt {i}]") for i in range(steps)],
                        success=True, score=1.0) for k in range(n)]
    with ScriptedLLMServer(handler=handler) as server:
        judge = LLMJudgeAttributor(server.client(concurrency=16))
        t = time.perf_counter()
        results = judge.attribute_batch(trajs)
        dt = time.perf_counter() - t
    assert all(not r.fallback for r in results)
    print(f"judge   {n} trajectories x {steps} steps, concurrency 16, latency {latency * 1e3:.0f} ms: "
          f"{n / dt:8.1f} traj/s ({judge.counts['parsed']} parsed)")


def wrapper_overhead(episodes: int = 30) -> None:
    try:
        import evolver_gym  # noqa: F401

        make = lambda: gym.make("evolver/WebShop-v0", num_products=200)  # noqa: E731
        env0 = make()
        name = "WebShop-v0 (200 products), oracle actions"
    except Exception as exc:  # the env may be absent in a partial checkout
        print(f"wrapper WebShop unavailable ({type(exc).__name__}); skipped")
        return
    results = {}
    for label, env in (("plain", env0), ("Attribution(oracle)", Attribution(make(), OracleAttributor()))):
        base = env.unwrapped
        n_steps, t = 0, time.perf_counter()
        for ep in range(episodes):
            obs, info = env.reset(seed=ep, options={"split": "train", "index": ep})
            for action in base.oracle(base.task if hasattr(base, "task") else Task.from_dict(info["task"])):
                obs, r, term, trunc, info = env.step(action)
                n_steps += 1
                if term or trunc:
                    break
        results[label] = (time.perf_counter() - t) / max(1, n_steps)
    extra = results["Attribution(oracle)"] - results["plain"]
    print(f"wrapper {name}: plain {results['plain'] * 1e3:.3f} ms/step, wrapped "
          f"{results['Attribution(oracle)'] * 1e3:.3f} ms/step (overhead {extra * 1e3:+.3f} ms/step)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--requests", type=int, default=64)
    args = parser.parse_args()
    client_throughput(args.latency, args.requests)
    judge_throughput(args.latency, args.requests)
    wrapper_overhead()


if __name__ == "__main__":
    main()
