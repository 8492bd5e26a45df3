"""One rank of a 2-process GRPO run (launched by tests/train/test_distributed.py with `accelerate launch`).

Writes ``<out>/rank<R>.json``: the world size, the backend, the tasks this rank played and a checksum
of the trained LoRA weights, so the test can check the ranks split the batch and stay in sync.
"""

from __future__ import annotations

import gc
import json
import os
import sys

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
from peft import LoraConfig  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from evolver_train.config import EvolverGRPOConfig  # noqa: E402
from evolver_train.trainer import EvolverGRPOTrainer  # noqa: E402
from tests.train.fixtures import GuessEnv, tiny_policy  # noqa: E402


def main(out: str, env_backend: str = "local") -> None:
    model, tok = tiny_policy()
    cfg = EvolverGRPOConfig(output_dir=os.path.join(out, "run"), per_device_train_batch_size=4, num_generations=4,
                            max_steps=2, learning_rate=5e-2, max_turns=3, max_episode_tokens=120, max_turn_tokens=6,
                            report_to="none", save_strategy="no", rollout_seed=3, disable_tqdm=True,
                            env_backend=env_backend, env_workers=1)
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, tasks=GuessEnv().tasks(), processing_class=tok,
                                 peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    played: list[str] = []
    original = trainer._rollout

    def rollout(prompts, t):
        result = original(prompts, t)
        played.extend(ep.spec.task["task_id"] for ep in trainer._episodes)
        return result

    trainer._rollout = rollout
    trainer.rollout_func = rollout
    lora = {n: p for n, p in trainer.model.named_parameters() if "lora" in n and p.requires_grad}
    before = float(sum(p.detach().double().sum() for p in lora.values()))
    trainer.train()
    after = float(sum(p.detach().double().sum() for p in lora.values()))
    acc = trainer.accelerator
    record = {"rank": acc.process_index, "world": acc.num_processes, "distributed_type": str(acc.distributed_type),
              "backend": torch.distributed.get_backend() if torch.distributed.is_initialized() else None,
              "played": played, "before": before, "after": after,
              "losses": [h["loss"] for h in trainer.state.log_history if "loss" in h]}
    with open(os.path.join(out, f"rank{acc.process_index}.json"), "w") as fh:
        json.dump(record, fh)
    trainer.end_distributed()
    assert not torch.distributed.is_initialized()
    assert not any(isinstance(o, DistributedDataParallel) for o in gc.get_objects()), "DDP wrapper still alive"
    # The record is written and the group closed. What is left is the interpreter's own teardown, which
    # this test does not cover: skip it, so that a C++ destructor's race there cannot fail a good run.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:])
