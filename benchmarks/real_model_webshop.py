"""A pretrained chat model (SmolLM2-135M-Instruct, offline) on WebShop, on CPU: zero-shot success and
the time of LoRA GRPO steps.

Prints the zero-shot held-out evaluation (dev goals, Wilson 95% interval), the invalid-action rate,
then times ``--grpo-steps`` LoRA GRPO steps of the recipe in ``configs/smollm2_webshop.yaml`` with
rollout and update tokens per second. Reads the recipe for every rollout setting, so the figures
are those of the recipe.

    nice -n 5 python benchmarks/real_model_webshop.py --num-tasks 20 --grpo-steps 1
"""

from __future__ import annotations

import argparse
import json
import os
import time

import yaml

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/smollm2_webshop.yaml")
    p.add_argument("--model", help="checkpoint folder (default: evolver models fetch smollm2-135m-instruct)")
    p.add_argument("--num-tasks", type=int, default=20, help="dev goals of the zero-shot evaluation")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--grpo-steps", type=int, default=1, help="LoRA GRPO steps to time (0: skip)")
    p.add_argument("--groups", type=int, default=2, help="tasks per GRPO step (G rollouts each)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    import torch

    from evolver_train.evaluation import RolloutSettings, evaluate_policy
    from evolver_train.models import fetch_model
    from evolver_train.policy import load_policy

    with open(args.config, encoding="utf-8") as fh:
        recipe = yaml.safe_load(fh)
    folder = args.model or str(fetch_model("smollm2-135m-instruct", log=lambda *_: None))
    model, tok = load_policy(folder)
    tok.padding_side = "left"
    settings = RolloutSettings.from_config(recipe)
    print(f"model {folder}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
          f"torch threads {torch.get_num_threads()}", flush=True)

    t0 = time.perf_counter()
    report = None if args.num_tasks == 0 else evaluate_policy(
        model, tok, recipe["env_id"], split=recipe.get("evolver_eval_split", "dev"), k=1, num_tasks=args.num_tasks,
        temperature=args.temperature, env_kwargs=recipe["env_kwargs"],
        observation_shaping=recipe.get("observation_shaping", ()), rollout=settings, seed=args.seed)
    seconds = time.perf_counter() - t0
    lo, hi = report["success_rate_ci95"] if report else (0.0, 0.0)
    if report:
        print(f"zero-shot: success {report['success_rate']:.3f} (95% CI {lo:.3f}-{hi:.3f}) on {report['num_tasks']} "
              f"dev goals at temperature {args.temperature}, score {report['score']:.3f}, invalid actions "
              f"{report['invalid_action_rate']:.3f}, {report['episode_len']:.1f} steps/episode, {seconds:.0f} s",
              flush=True)

    if args.grpo_steps:
        from trl import get_peft_config

        from evolver_train.envs import build_training_environment
        from evolver_train.train_cli import load_model, parse_config
        from evolver_train.trainer import EvolverGRPOTrainer

        g = int(recipe.get("num_generations", 4))
        run = parse_config(["--config", args.config, "--model-name-or-path", folder, "--output-dir",
                               "/tmp/real_model_webshop_bench", "--max-steps", str(args.grpo_steps),
                               "--per-device-train-batch-size", str(g * args.groups), "--report-to", "none",
                               "--save-strategy", "no", "--evolver-eval-episodes", "0", "--disable-tqdm", "true"])
        config = run.train
        config.sft = None
        built = build_training_environment(config, run.mechanisms)
        model, tok = load_model(run)
        peft = get_peft_config(run.model)
        trainer = EvolverGRPOTrainer(model, config, built.env_factory, tasks=built.train_tasks, processing_class=tok,
                                     peft_config=peft)
        t0 = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - t0
        logs = [h for h in trainer.state.log_history if "loss" in h]
        model_tokens = sum(h.get("env/model_tokens", 0) for h in logs) * g * args.groups
        env_tokens = sum(h.get("env/env_tokens", 0) for h in logs) * g * args.groups
        rows = {k: logs[-1].get(k) for k in ("env/success_rate", "env/invalid_action_rate", "env/episode_len",
                                             "step_time")}
        print(f"GRPO: {args.grpo_steps} LoRA step(s) of {args.groups} tasks x G={g}: {seconds:.1f} s total, "
              f"{seconds / args.grpo_steps:.1f} s/step; sampled {model_tokens:.0f} model tokens and "
              f"{env_tokens:.0f} observation tokens; last step {json.dumps(rows)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
