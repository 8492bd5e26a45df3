"""Supervised baseline on the product-held-out split: clean SFT, then held-out success with its interval.

Usage:
    python benchmarks/honest_split.py --steps 750 --seed 0 --out runs/honest/sft750_s0
    python benchmarks/honest_split.py --checkpoint runs/honest/rl/checkpoint --out runs/honest/rl_eval

Trains the quickstart's tiny policy (hidden 128, 2 layers, 4 heads, lr 3e-3, batch 16) on clean oracle
demonstrations (``imperfect_share`` 0, no experience block) of the train goals of a 600-product shop
with synthetic goals cut by ``split_scheme=product`` (no dev or test product appears in any train goal),
for ``--steps`` steps, or takes ``--checkpoint`` as it is; then evaluates it with
``evolver_train.evaluation.evaluate_policy``: every dev goal once (595), sampled at temperature 1, and
``--train-goals`` train goals likewise (the seen-product reference). Writes ``<out>/report.json``
(success with its 95% Wilson interval, score, the evaluation sample's fingerprint, wall times) and
prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

ENV_ID = "evolver/WebShop-v0"
SHAPING = ["drop_repeated_instruction", "top_results=5"]
# The quickstart's rollout layout (configs/quickstart.yaml).
ROLLOUT = dict(max_turns=8, max_episode_tokens=640, max_turn_tokens=48, max_observation_tokens=256)


def env_kwargs(num_products: int, split_scheme: str) -> dict:
    return dict(num_products=num_products, max_steps=8, goals="synthetic", split_scheme=split_scheme)


def evaluate(checkpoint: str, split: str, num_tasks: int | None, kwargs: dict, seed: int) -> dict:
    from evolver_train.evaluation import RolloutSettings, evaluate_policy
    from evolver_train.policy import build_policy

    model, tokenizer = build_policy(checkpoint)
    model.eval()
    start = time.monotonic()
    report = evaluate_policy(model, tokenizer, ENV_ID, split=split, k=1, temperature=1.0, num_tasks=num_tasks,
                             env_kwargs=kwargs, observation_shaping=SHAPING, rollout=RolloutSettings(**ROLLOUT),
                             seed=seed)
    keep = ("num_episodes", "success_rate", "success_rate_ci95", "score", "episode_len", "invalid_action_rate",
            "truncated_rate")
    return {"split": split, **{key: report[key] for key in keep},
            "sample": {key: v for key, v in report["sample"].items() if key not in ("task_ids", "seeds")},
            "seconds": round(time.monotonic() - start, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=750, help="SFT steps (batch 16)")
    p.add_argument("--seed", type=int, default=0, help="SFT seed (demonstrations, init, batches)")
    p.add_argument("--checkpoint", default=None, help="evaluate this checkpoint instead of training one")
    p.add_argument("--num-products", type=int, default=600)
    p.add_argument("--split-scheme", default="product")
    p.add_argument("--num-demonstrations", type=int, default=2000)
    p.add_argument("--train-goals", type=int, default=128, help="train goals evaluated (0 = none)")
    p.add_argument("--eval-seed", type=int, default=0, help="seed of the evaluation's episodes")
    p.add_argument("--num-threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    p.add_argument("--out", required=True)
    args = p.parse_args()

    import torch

    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    kwargs = env_kwargs(args.num_products, args.split_scheme)
    out = Path(args.out)
    record: dict = {"command": "python benchmarks/honest_split.py " + " ".join(os.sys.argv[1:]),
                    "env_kwargs": kwargs, "observation_shaping": SHAPING, "load_before": os.getloadavg()}
    checkpoint = args.checkpoint
    if checkpoint is None:
        from evolver_train.sft import SFTConfig, train_sft

        config = SFTConfig(output_dir=str(out / "sft"), env_id=ENV_ID, env_kwargs=kwargs, split="train",
                           num_demonstrations=args.num_demonstrations, imperfect_share=0.0, hidden_size=128,
                           num_hidden_layers=2, num_attention_heads=4, learning_rate=3e-3, batch_size=16,
                           max_steps=args.steps, max_minutes=0, observation_shaping=SHAPING,
                           max_observation_tokens=ROLLOUT["max_observation_tokens"], seed=args.seed,
                           num_threads=args.num_threads, log_every=100)
        start = time.monotonic()
        checkpoint = str(train_sft(config))
        record["sft"] = {"steps": args.steps, "seed": args.seed, "seconds": round(time.monotonic() - start, 1)}
    record["checkpoint"] = checkpoint
    record["dev"] = evaluate(checkpoint, "dev", None, kwargs, args.eval_seed)
    if args.train_goals:
        record["train"] = evaluate(checkpoint, "train", args.train_goals, kwargs, args.eval_seed)
    record["load_after"] = os.getloadavg()
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
