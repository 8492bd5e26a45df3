"""Seconds per GRPO loss step on a batch sampled under ``allowed_actions_only``: restricted scoring against TRL's.

Rows sampled among a page's clickables are scored under the policy that acted (the softmax renormalised
over the allowed tokens at each restricted position), which needs the logits of the completion
positions; TRL's fused head returns log-probs only and is what the trainer used before. The benchmark
rolls out one batch of the quickstart's GRPO stage (its shop, shaping, policy size and batch: 8 tasks x
G = 8, an untrained policy whose search is forced to the instruction so that it reaches the result and
item pages), then times the loss's forward and backward on that batch both ways,
interleaved so that load affects both alike. Prints seconds per loss step of each, the ratio, and how
many of the batch's model tokens were restricted.

    python benchmarks/restricted_loss.py [--repeats 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

SHAPING = ["drop_repeated_instruction", "top_results=5", "numbered_results"]
ENV_KWARGS = {"num_products": 600, "max_steps": 8, "goals": "synthetic", "split_scheme": "product"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed loss steps of each way")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args(argv)

    import gymnasium as gym
    import torch

    import evolver_gym  # noqa: F401 - registers the environment ids
    from evolver_train.config import EvolverGRPOConfig
    from evolver_train.envs import shape_environment
    from evolver_train.policy import TinyPolicyConfig, build_policy
    from evolver_train.trainer import EvolverGRPOTrainer

    torch.set_num_threads(args.threads)

    def make_env():
        return shape_environment(gym.make("evolver/WebShop-v0", **ENV_KWARGS), SHAPING)

    probe = make_env()
    tasks = probe.unwrapped.tasks("train")
    size = TinyPolicyConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512)
    model, tokenizer = build_policy("tiny", env=probe, tasks=tasks, size=size, seed=0)
    probe.close()
    cfg = EvolverGRPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=64, num_generations=8,
                            max_steps=1, learning_rate=3e-4, loss_type="dapo", beta=0.0, max_turns=8,
                            max_episode_tokens=640, max_turn_tokens=48, max_observation_tokens=256,
                            allowed_actions_only=True, report_to="none", save_strategy="no", disable_tqdm=True,
                            kl_to_start_interval=0)
    class SearchingTrainer(EvolverGRPOTrainer):
        """The untrained policy's search is forced to the instruction, so its episodes reach the pages
        whose clicks are restricted (as a warm-started policy's do)."""

        def _play(self, rows, generate):
            from evolver_train.rollout import allowed_actions_in, play_episodes

            def allowed(info):  # the page's clicks; on the search page, the instruction as the search text
                listed = allowed_actions_in(info)
                return [f"search[{info['instruction']}]"] if listed is None else listed

            return play_episodes(self.env_pool.take(len(rows)), rows, generate, self.codec, max_turns=cfg.max_turns,
                                 max_episode_tokens=cfg.max_episode_tokens, max_turn_tokens=cfg.max_turn_tokens,
                                 allowed_actions=allowed, outcome_key=cfg.outcome_key)

    trainer = SearchingTrainer(model, cfg, make_env, tasks=tasks, processing_class=tokenizer)
    trainer.current_gradient_accumulation_steps = 1
    model.train()
    rows = [trainer.train_dataset[i // 8] for i in range(64)]
    batch = trainer._generate_and_score_completions(rows)
    plain = dict(batch, restricted_tokens=[{} for _ in batch["restricted_tokens"]])
    model_tokens = int((batch["completion_mask"] * batch.get("tool_mask", batch["completion_mask"])).sum())
    restricted = sum(len(r) for r in batch["restricted_tokens"])

    def loss_step(inputs) -> float:
        start = time.perf_counter()
        model.zero_grad()
        trainer._compute_loss(model, inputs).backward()
        return time.perf_counter() - start

    loss_step(batch), loss_step(plain)  # warm-up
    times: dict[str, list[float]] = {"restricted scoring": [], "TRL's fused head": []}
    for _ in range(args.repeats):
        times["restricted scoring"].append(loss_step(batch))
        times["TRL's fused head"].append(loss_step(plain))
    print(f"batch: 64 rows, {batch['completion_ids'].size(1)} completion columns, {model_tokens} model tokens, "
          f"{restricted} restricted; vocabulary {len(tokenizer)}; torch threads {args.threads}")
    for name, values in times.items():
        print(f"{name:>20}: {statistics.median(values):.3f} s per loss step (median of {len(values)})")
    ratio = statistics.median(times["restricted scoring"]) / statistics.median(times["TRL's fused head"])
    print(f"ratio restricted / fused: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
