"""How far dev and test lie from train under each split scheme (WebShop, AppWorld, AppWorld's real apps).

Usage:
    python benchmarks/split_overlap.py [--seed 0] [--shops quickstart default] [--no-appworld] [--no-appworld-apps]

For every split scheme it prints, per held-out split: the number of goals (tasks); the share whose
product, whose (product, price bound) and whose category appear in a train goal (AppWorld: whose
scenario template appears in train); and the word Jaccard of each instruction to its nearest train
instruction (``wrappers.questioning.text.jaccard``, whitespace words): median and share >= 0.8;
and, for WebShop, the share that some train goal's reference solves (its purchase scores 1.0 on the
held-out goal: the target overlap that the leakage guard's ``solves`` checks).
``evolver/AppWorldApps-v0`` (when its apps are installed: ``bash scripts/setup.sh appworld-apps``) adds
the share of held-out tasks that touch only apps some train task touches.
Shops: ``quickstart`` (200 products, synthetic goals, as configs/quickstart.yaml), ``product600``
(600 products, synthetic goals, as configs/quickstart_product.yaml: 595 product-held-out dev goals, so
one evaluation of them has a standard error <= 2.1 points) and ``default`` (1,000 products, human
goals, the env's defaults).
"""

from __future__ import annotations

import argparse
import statistics

from evolver_gym.webshop import WebShopEnv
from evolver_gym.webshop.goals import SPLIT_SCHEMES
from wrappers.questioning.text import jaccard, tokens

SHOPS = {
    "quickstart": dict(num_products=200, goals="synthetic"),
    "product600": dict(num_products=600, goals="synthetic"),
    "default": dict(num_products=1000, goals="human"),
}


def nearest_jaccard(texts: list[str], train: list[str]) -> list[float]:
    """For each text, the highest word Jaccard with any train text (exact, brute force)."""
    train_sets = [tokens(t) for t in train]
    return [max((jaccard(tokens(t), s) for s in train_sets), default=0.0) for t in texts]


def _share(flags: list[bool]) -> str:
    return f"{sum(flags)}/{len(flags)} ({sum(flags) / len(flags):.0%})" if flags else "-"


def _jaccard_cells(texts: list[str], train: list[str]) -> tuple[str, str]:
    sims = nearest_jaccard(texts, train)
    if not sims:
        return "-", "-"
    return f"{statistics.median(sims):.2f}", _share([s >= 0.8 for s in sims])


def solved_by_train(env: WebShopEnv, held_out: list, train: list) -> list[bool]:
    """For each held-out task, whether some train task's reference buys a reward of 1.0 on it."""
    by_key: dict[str, list[int]] = {}
    for i, t in enumerate(train):
        for key in env.target_buckets(t, as_solver=True):
            by_key.setdefault(key, []).append(i)
    out = []
    for task in held_out:
        keys = env.target_buckets(task)
        related = range(len(train)) if "*" in keys else sorted({i for k in keys for i in by_key.get(k, ())})
        out.append(any(env.solves(train[i], task) for i in related))
    return out


def webshop_rows(shop: str, seed: int) -> list[list[str]]:
    rows = []
    for scheme in SPLIT_SCHEMES:
        env = WebShopEnv(**SHOPS[shop], seed=seed, split_scheme=scheme)
        splits = env.splits
        train_tasks = env.tasks("train")
        train = splits["train"]
        products = {g["asin"] for g in train}
        bounds = {(g["asin"], g["price_upper"]) for g in train}
        categories = {g["category"] for g in train}
        texts = [g["instruction_text"] for g in train]
        for name in ("dev", "test"):
            goals = splits[name]
            median, high = _jaccard_cells([g["instruction_text"] for g in goals], texts)
            rows.append([shop, scheme, name, f"{len(goals)} (train {len(train)})",
                         _share([g["asin"] in products for g in goals]),
                         _share([(g["asin"], g["price_upper"]) in bounds for g in goals]),
                         _share([g["category"] in categories for g in goals]), median, high,
                         _share(solved_by_train(env, env.tasks(name), train_tasks))])
    return rows


def appworld_rows(seed: int) -> list[list[str]]:
    from evolver_gym.appworld.tasks import SPLIT_SCHEMES as APPWORLD_SCHEMES
    from evolver_gym.appworld.tasks import build_tasks

    rows = []
    for scheme in APPWORLD_SCHEMES:
        train = build_tasks("train", seed, scheme)
        templates = {t.goal["scenario"] for t in train}
        texts = [t.instruction for t in train]
        for name in ("dev", "test_normal", "test_challenge"):
            tasks = build_tasks(name, seed, scheme)
            median, high = _jaccard_cells([t.instruction for t in tasks], texts)
            rows.append(["appworld", scheme, name, f"{len(tasks)} (train {len(train)})",
                         _share([t.goal["scenario"] in templates for t in tasks]), median, high])
    return rows


def appworld_apps_rows(seed: int) -> list[list[str]]:
    from evolver_gym.appworld_apps.env import AppWorldAppsEnv
    from evolver_gym.appworld_apps.tasks import SPLIT_SCHEMES as APPS_SCHEMES
    from evolver_gym.appworld_apps.tasks import build_tasks, task_apps

    env = AppWorldAppsEnv(seed=seed)
    try:
        world = env.world
    finally:
        env.close()
    rows = []
    for scheme in APPS_SCHEMES:
        train = build_tasks(world, "train", scheme)
        templates = {t.goal["scenario"] for t in train}
        apps = set().union(*map(task_apps, train))
        texts = [t.instruction for t in train]
        for name in ("dev", "test_normal", "test_challenge"):
            tasks = build_tasks(world, name, scheme)
            median, high = _jaccard_cells([t.instruction for t in tasks], texts)
            rows.append(["appworld_apps", scheme, name, f"{len(tasks)} (train {len(train)})",
                         _share([t.goal["scenario"] in templates for t in tasks]),
                         _share([task_apps(t) <= apps for t in tasks]), median, high])
    return rows


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0, help="catalog / world seed (also draws the held-out units)")
    p.add_argument("--shops", nargs="+", default=list(SHOPS), choices=list(SHOPS))
    p.add_argument("--no-appworld", action="store_true")
    p.add_argument("--no-appworld-apps", action="store_true", help="skip evolver/AppWorldApps-v0 (its own virtualenv)")
    args = p.parse_args()
    rows = [r for shop in args.shops for r in webshop_rows(shop, args.seed)]
    print(f"WebShop, seed {args.seed}\n")
    print(table(["shop", "scheme", "split", "goals", "product in train", "product + price bound in train",
                 "category in train", "median nearest Jaccard", "nearest Jaccard >= 0.8",
                 "solved by a train reference"], rows))
    if not args.no_appworld:
        print(f"\nAppWorld, world seed {args.seed}\n")
        print(table(["env", "scheme", "split", "tasks", "template in train", "median nearest Jaccard",
                     "nearest Jaccard >= 0.8"], appworld_rows(args.seed)))
    if not args.no_appworld_apps:
        from evolver_gym.appworld_apps import unavailable_reason

        reason = unavailable_reason()
        if reason is not None:
            print(f"\nAppWorld's real apps: skipped ({reason})")
            return
        print(f"\nAppWorld's real apps (evolver/AppWorldApps-v0), world seed {args.seed}\n")
        print(table(["env", "scheme", "split", "tasks", "template in train", "apps all in train",
                     "median nearest Jaccard", "nearest Jaccard >= 0.8"], appworld_apps_rows(args.seed)))


if __name__ == "__main__":
    main()
