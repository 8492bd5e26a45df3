"""When the boosted clip of stripped experience rows acts: the importance ratio and the clip per setting.

Strip mode (navigation, experience_share 0.5) on the test guessing game with the tiny test policy and a
LoRA adapter. For each setting, every optimiser step's ``ratio/max_deviation`` (largest |ratio - 1| over
all rows), ``exp/ratio_max_deviation`` (over the stripped rows) and
``clip_ratio/experience_region_mean`` (share of the stripped rows' tokens clipped, their own upper clip
``experience_clip_high``) are collected; the table gives the generations, the steps with a moved ratio,
the largest deviation and the mean and largest experience clip (and its two sides: below, where
A < 0 and the ratio fell under 1 - epsilon; above, where A > 0 and it rose over 1 + experience_clip_high).

    python benchmarks/experience_clip.py [--steps 8] [--lr 0.5] [--lr 0.05]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SETTINGS = {"num_iterations=1 (default)": {}, "num_iterations=2": {"num_iterations": 2},
            "steps_per_generation=2": {"steps_per_generation": 2}}


def run(settings: dict, steps: int, lr: float, out: str) -> list[dict]:
    from peft import LoraConfig

    from evolver_train.config import EvolverGRPOConfig
    from evolver_train.trainer import EvolverGRPOTrainer
    from tests.train.fixtures import GuessEnv, HintWrapper, tiny_policy
    from wrappers.navigation import NavigationConfig
    from wrappers.navigation.plugin import training_hooks

    model, tok = tiny_policy()
    args = EvolverGRPOConfig(output_dir=out, per_device_train_batch_size=8, num_generations=4, max_steps=steps,
                             learning_rate=lr, max_turns=4, max_episode_tokens=200, max_turn_tokens=6,
                             report_to="none", save_strategy="no", rollout_seed=3, disable_tqdm=True, **settings)
    hooks = [training_hooks(NavigationConfig(experience_share=0.5, experience_mode="strip"))]
    trainer = EvolverGRPOTrainer(model, args, lambda: HintWrapper(GuessEnv()), tasks=GuessEnv().tasks(), hooks=hooks,
                                 processing_class=tok,
                                 peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    trainer.train()
    return [h for h in trainer.state.log_history if "loss" in h]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="optimiser steps per setting")
    parser.add_argument("--lr", type=float, action="append", help="learning rates (repeatable; default 0.5)")
    a = parser.parse_args()
    print("| learning rate | setting | generations | steps with ratio != 1 | max abs(ratio - 1) | "
          "max on stripped rows | experience clip, mean | max | below, max | above (boosted), max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for lr in a.lr or [0.5]:
        for name, settings in SETTINGS.items():
            with tempfile.TemporaryDirectory() as out:
                logs = run(settings, a.steps, lr, out)
            gens = sum("env/success_rate" in h for h in logs)
            moved = sum(h["ratio/max_deviation"] > 1e-6 for h in logs)
            clip = [h.get("clip_ratio/experience_region_mean", 0.0) for h in logs]
            deviation = max(h["ratio/max_deviation"] for h in logs)
            stripped = max(h.get("exp/ratio_max_deviation", 0.0) for h in logs)
            low = max(h.get("clip_ratio/experience_low_mean", 0.0) for h in logs)
            high = max(h.get("clip_ratio/experience_high_mean", 0.0) for h in logs)
            print(f"| {lr:g} | {name} | {gens} | {moved}/{len(logs)} | {deviation:.3f} | {stripped:.3f} "
                  f"| {sum(clip) / len(clip):.4f} | {max(clip):.4f} | {low:.4f} | {high:.4f} |", flush=True)


if __name__ == "__main__":
    main()
