"""``evolver play``: play reference policies on an environment and print their scores.

* ``play_main`` - the oracle and the rule baseline ("search the instruction, buy the first
  result") on a split; success rate and mean score for each.

Example::

    evolver play --env-id evolver/WebShop-v0 --split dev --n 100
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .cli_args import rename_flags

__all__ = ["play_main", "play_policies"]


# old spelling -> current one (accepted with a deprecation line)
_RENAMED = {"--env": "--env-id", "--num_products": "--num-products", "--data_dir": "--data-dir"}


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="evolver play", description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="evolver/WebShop-v0", help="environment id (default: %(default)s)")
    parser.add_argument("--split", default="dev", help="task split (default: %(default)s)")
    parser.add_argument("--n", type=int, default=100, help="tasks to play, from the start of the split")
    parser.add_argument("--num-products", type=int, default=None, help="WebShop catalog size")
    parser.add_argument("--seed", type=int, default=0, help="catalog / world seed")
    parser.add_argument("--data-dir", default=None, help="WebShop: folder with the real data files")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = parser.parse_args(rename_flags(argv, _RENAMED, "evolver play"))
    if args.n < 1:
        parser.error(f"--n must be positive, got {args.n}")
    return args


def play_policies(env: Any, tasks: list[Any], *, progress: bool = True) -> dict[str, dict[str, float]]:
    """Play the oracle and the rule baseline on ``tasks``; ``{policy: {success_rate, mean_score, n}}``."""
    from tqdm import tqdm

    from evolver_gym.core import record_episode
    from evolver_gym.webshop.policies import rule_baseline

    unwrapped = env.unwrapped
    results = {}
    policies = {"oracle": None, "rule_baseline": rule_baseline}
    if hasattr(unwrapped, "reference_policies"):  # environments with their own baselines (Avalon seat)
        policies = unwrapped.reference_policies()
    for name, policy in policies.items():
        scores, wins = [], 0
        for task in tqdm(tasks, desc=name, disable=not progress, leave=False):
            if policy is None:
                plan = iter(unwrapped.oracle(task))

                def act(obs, info, plan=plan):
                    return next(plan, "click[buy now]")
            else:
                act = policy
            traj = record_episode(env, act, options={"task": task}, max_steps=10_000)
            scores.append(traj.score)
            wins += int(traj.success)
        results[name] = {
            "success_rate": wins / len(tasks),
            "mean_score": 100.0 * sum(scores) / len(scores),
            "n": len(tasks),
        }
    return results


def play_main(argv: list[str] | None = None) -> int:
    args = _parse(list(sys.argv[1:] if argv is None else argv))
    import gymnasium as gym

    import evolver_gym  # noqa: F401  (registers the ids)

    kwargs: dict[str, Any] = {"seed": args.seed}
    if args.env_id == "evolver/AvalonSeat-v0":
        kwargs = {"deal_key": f"evolver-play-{args.seed}"}
    if args.num_products is not None:
        kwargs["num_products"] = args.num_products
    if args.data_dir is not None:
        kwargs["data_dir"] = args.data_dir
    try:
        env = gym.make(args.env_id, **kwargs)
    except (gym.error.Error, TypeError, ValueError) as exc:
        print(f"evolver play: cannot make {args.env_id!r}: {exc}", file=sys.stderr)
        return 2
    unwrapped = env.unwrapped
    if not hasattr(unwrapped, "reference_policies") and args.env_id != "evolver/WebShop-v0":
        print(
            f"evolver play: only evolver/WebShop-v0 and evolver/AvalonSeat-v0 have baselines here, got {args.env_id!r}",
            file=sys.stderr,
        )
        return 2
    try:
        tasks = unwrapped.tasks(args.split)
    except ValueError as exc:
        print(f"evolver play: {exc}", file=sys.stderr)
        return 2
    if args.n > len(tasks):
        print(f"evolver play: --n {args.n} is more than the {len(tasks)} tasks of split {args.split!r}; "
              f"use --n {len(tasks)} or fewer", file=sys.stderr)
        return 2
    tasks = tasks[: args.n]
    results = play_policies(env, tasks, progress=sys.stderr.isatty())
    if args.json:
        print(json.dumps(results, sort_keys=True))
    else:
        print(f"{args.env_id}  split={args.split}  tasks={len(tasks)}")
        for name, r in results.items():
            print(f"  {name:<14} success {100 * r['success_rate']:5.1f}%   score {r['mean_score']:5.1f}")
    env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(play_main())
