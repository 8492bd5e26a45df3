"""What the leakage guard on targets catches, and what it costs (WebShop).

Usage:
    python benchmarks/leakage_guard.py [--shop quickstart|default] [--n 300] [--seed 0]
        [--split-scheme goal|product|type|category]

Synthesises ``n`` tasks with the guard on text and goals only (the guard before target checks), then:

* finds the leaks by brute force: replays each reference and scores its purchase against every
  dev/test goal with the shop's reward (a leak scores 1.0 on one);
* counts those whose target (product and option values) equals a dev/test goal's;
* runs the text-only guard, the target guard and the target guard with ``solved_by_protected`` on
  them, timing each in this one run.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from evolver_gym.webshop import WebShopEnv
from wrappers.questioning import LeakageGuard, SynthesisConfig, TaskPool, build_synthesizer, replay

SHOPS = {
    "quickstart": dict(num_products=200, goals="synthetic", max_steps=8),
    "default": dict(num_products=1000, goals="human"),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shop", default="quickstart", choices=list(SHOPS))
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split-scheme", default="goal")
    args = p.parse_args()

    env = WebShopEnv(**SHOPS[args.shop], split_scheme=args.split_scheme)
    protected = env.tasks("dev") + env.tasks("test")
    pool = TaskPool(None)
    cfg = SynthesisConfig(batch=64, seed=args.seed, max_steps=env.max_steps, embedding_threshold=None,
                          leakage_cosine=None, leakage_targets="off")
    build_synthesizer(env, pool, cfg, embedder=None).run(args.n)
    tasks = pool.tasks(origin="synthetic")

    leaks, same_target = [], []
    targets = {env.target_key(t) for t in protected}
    for t in tasks:
        bought = replay(env, t, t.reference).steps[-1].info["evaluation"]["purchased"]
        if any(env.world.reward(g.goal, bought["asin"], bought["options"])[0] == 1.0 for g in protected):
            leaks.append(t.task_id)
            if env.target_key(t) in targets:
                same_target.append(t.task_id)
        elif env.target_key(t) in targets:
            same_target.append(t.task_id)

    out = {"shop": args.shop, "split_scheme": args.split_scheme, "synthesised": len(tasks),
           "protected": len(protected), "references solving a dev/test goal": len(leaks),
           "same target as a dev/test goal": len(same_target)}
    for name, kwargs in (("text only", {}), ("targets", {"env": env}),
                         ("targets + solved_by_protected", {"env": env, "solved_by_protected": True})):
        t0 = time.perf_counter()
        verdicts = LeakageGuard(protected, **kwargs).near(tasks)
        seconds = time.perf_counter() - t0
        by_id = dict(zip([t.task_id for t in tasks], verdicts, strict=True))
        out[name] = {"rejected": sum(v is not None for v in verdicts),
                     "leaks rejected": sum(by_id[i] is not None for i in leaks),
                     "reasons": dict(Counter(v for v in verdicts if v is not None)),
                     "seconds (init + check)": round(seconds, 3)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
