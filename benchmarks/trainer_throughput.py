"""Tokens per second of EvolverGRPOTrainer against TRL's stock GRPOTrainer on one single-turn task.

Both trainers get the same tiny model (built from a config, same seed), the same tokenizer, the same
batch (per-device batch, G), the same prompt and the same per-completion token cap; the stock trainer
generates with ``model.generate`` and a plain reward function, ours plays a one-step environment
through ``rollout_func`` and replaces the advantages. Throughput = tokens seen (prompt + completion,
TRL's ``num_input_tokens_seen``) / ``train()`` wall time. Prints both and the ratio (target >= 0.85).

    python benchmarks/trainer_throughput.py [--steps 6] [--batch 32] [--tokens 32]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402

from evolver_gym.core import Task, UnicodeText  # noqa: E402

PROMPT = "guess a number from 0 to 9 . task : find the number 3"


class OneShot(gym.Env):
    """One action, then the episode ends; reward 1 if the action holds the digit 3."""

    def __init__(self):
        self.observation_space, self.action_space = UnicodeText(1000), UnicodeText(1000, examples=("3",))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.task = Task.from_dict(options["task"])
        return PROMPT, {"task": self.task.public(), "instruction": PROMPT, "step": 0, "action_valid": True}

    def step(self, action):
        ok = "3" in action
        return "done", float(ok), True, False, {"task": self.task.public(), "instruction": PROMPT, "step": 1,
                                                 "action_valid": True, "success": ok, "score": float(ok),
                                                 "evaluation": {}}


def _model(seed):
    from tests.train.fixtures import tiny_policy

    return tiny_policy(seed=seed, hidden=128)


def run(kind: str, steps: int, batch: int, g: int, tokens: int, out: str) -> float:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from evolver_train.config import EvolverGRPOConfig
    from evolver_train.trainer import EvolverGRPOTrainer

    torch.manual_seed(0)
    model, tok = _model(0)
    common = dict(output_dir=out, per_device_train_batch_size=batch, num_generations=g, max_steps=steps,
                  learning_rate=1e-4, report_to="none", save_strategy="no", disable_tqdm=True, logging_steps=1,
                  bf16=False, use_cpu=True)
    if kind == "stock":
        args = GRPOConfig(max_completion_length=tokens, gradient_checkpointing=False, **common)
        data = Dataset.from_dict({"prompt": [[{"role": "user", "content": PROMPT}]] * 64})

        def reward(completions, **kw):
            return [float("3" in c[0]["content"]) for c in completions]

        trainer = GRPOTrainer(model, reward_funcs=[reward], args=args, train_dataset=data, processing_class=tok)
    else:
        args = EvolverGRPOConfig(max_turns=1, max_turn_tokens=tokens, max_episode_tokens=tokens + 1, **common)
        task = Task("bench/0", "bench", PROMPT)
        trainer = EvolverGRPOTrainer(model, args, OneShot, tasks=[task] * 64, processing_class=tok)
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    seen = trainer.state.num_input_tokens_seen
    print(f"{kind:>7}: {seen} tokens in {seconds:.2f} s = {seen / seconds:.0f} tokens/s", flush=True)
    return seen / seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--tokens", type=int, default=32)
    a = p.parse_args()
    torch.set_num_threads(max(torch.get_num_threads(), 1))
    with tempfile.TemporaryDirectory() as tmp:
        # warm-up (imports, kernels) so neither side pays it
        run("stock", 1, a.batch, a.generations, a.tokens, tmp)
        stock = run("stock", a.steps, a.batch, a.generations, a.tokens, tmp)
        ours = run("evolver", a.steps, a.batch, a.generations, a.tokens, tmp)
    print(f"ratio evolver/stock = {ours / stock:.2f} (target >= 0.85)")


if __name__ == "__main__":
    main()
