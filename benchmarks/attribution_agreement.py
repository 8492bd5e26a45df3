"""Agreement of cheap attributors with the WebShop oracle, on recorded episodes.

Episodes: WebShop's rule baseline (search the instruction, click the first result, buy) and a
noisy oracle (the oracle's actions with an invalid click and a wrong search mixed in) on the first
N dev tasks of the 1000-product catalog. Prints accuracy, Cohen's kappa and BAD recall of the
rule attributor and of the outcome-sign fallback (what an unreadable LLM judge degrades to).

    python benchmarks/attribution_agreement.py [--tasks 50]
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import evolver_gym  # noqa: F401
from evolver_gym.core import Trajectory
from evolver_gym.core.seeding import make_random
from evolver_gym.webshop.policies import rule_baseline
from wrappers.attribution import Attribution, Attributor, OracleAttributor, RuleAttributor, evaluate_attributor


class OutcomeSign(Attributor):
    name = "outcome-sign"

    def attribute(self, trajectory: Trajectory):
        return self.fallback(trajectory, reason="outcome's sign")


def episodes(n: int) -> list[Trajectory]:
    env = Attribution(gym.make("evolver/WebShop-v0", num_products=1000), OracleAttributor())
    out = []
    for i in range(n):
        obs, info = env.reset(seed=i, options={"split": "dev", "index": i})
        for _ in range(15):
            obs, r, term, trunc, info = env.step(rule_baseline(obs, info))
            if term or trunc:
                break
        out.append(env.last_trajectory)
        rng = make_random(0, "noisy-oracle", i)
        actions = list(env.unwrapped.oracle(info["task"]))
        actions.insert(rng.randrange(1, len(actions)), "click[no such button]")
        if rng.random() < 0.5:
            actions.insert(0, "search[garden hose]")
        env.reset(seed=i, options={"split": "dev", "index": i})
        for a in actions:
            *_, term, trunc, info = env.step(a)
            if term or trunc:
                break
        out.append(env.last_trajectory)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    args = parser.parse_args()
    trajs = episodes(args.tasks)
    steps = sum(len(t.steps) for t in trajs)
    print(f"{len(trajs)} episodes, {steps} steps, success rate {sum(t.success for t in trajs) / len(trajs):.2f}")
    for att in (RuleAttributor(), OutcomeSign()):
        r = evaluate_attributor(att, trajs)
        print(f"{att.name:<13} accuracy {r['accuracy']:.3f}  kappa {r['kappa']:.3f}  "
              f"BAD recall {r['per_label']['BAD']['recall']:.3f}  "
              f"BAD precision {r['per_label']['BAD']['precision']:.3f}")


if __name__ == "__main__":
    main()
