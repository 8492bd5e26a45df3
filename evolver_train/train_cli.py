"""``evolver train``: GRPO on a text environment from a YAML recipe (basic or overall mode).

* ``main`` - parse ``--config file.yaml`` plus ``--field value`` overrides, build the model, the
  environments and the mechanism services, train, save, and print the evaluation before and after.
* ``load_model`` - a (model, tokenizer) pair from ``model_name_or_path`` (or ``tiny``).

Example::

    evolver train --config configs/basic.yaml --max_steps 20 --output_dir runs/basic
    evolver train --config configs/overall.yaml --model_name_or_path runs/sft
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["main", "load_model", "parse_config"]


def parse_config(argv: list[str]):
    """``EvolverGRPOConfig`` from ``argv`` via ``TrlParser`` (YAML defaults, command-line overrides)."""
    from trl import TrlParser

    from .config import EvolverGRPOConfig

    parser = TrlParser((EvolverGRPOConfig,), prog="evolver train",
                       description="GRPO on a multi-turn text environment (AgentEvolver's modes on TRL).")
    (config,) = parser.parse_args_and_config(argv)
    return config


def _texts_for_vocabulary(env_factory: Any, tasks: list[Any], n: int = 64) -> list[str]:
    """Instructions, oracle actions and observations of a few episodes: the tiny tokenizer's corpus."""
    env = env_factory()
    base = env.unwrapped
    texts: list[str] = []
    for task in tasks[:n]:
        texts.append(task.instruction)
        obs, _ = env.reset(seed=0, options={"task": task})
        texts.append(str(obs))
        actions = base.oracle(task) if hasattr(base, "oracle") else []
        for action in actions:
            texts.append(action)
            obs, _, term, trunc, _ = env.step(action)
            texts.append(str(obs))
            if term or trunc:
                break
    env.close()
    return texts


def load_model(config: Any, env_factory: Any = None, tasks: list[Any] | None = None):
    """``(model, tokenizer)``: a checkpoint folder or hub name, or ``tiny`` built from the environment."""
    if not config.model_name_or_path:
        raise ValueError("model_name_or_path is required (a local folder, a hub name, or 'tiny')")
    if config.model_name_or_path == "tiny":
        from .policy import build_tiny_policy, build_word_tokenizer

        tokenizer = build_word_tokenizer(_texts_for_vocabulary(env_factory, tasks or []))
        model = build_tiny_policy(tokenizer, seed=config.seed)
    else:
        from .policy import load_policy

        model, tokenizer = load_policy(config.model_name_or_path)
    tokenizer.padding_side = "left"
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    config = parse_config(argv)

    from .envs import build_training_environment
    from .trainer import EvolverGRPOTrainer

    built = build_training_environment(config)
    model, tokenizer = load_model(config, built.env_factory, built.train_tasks)
    peft_config = None
    if config.use_peft:
        from peft import LoraConfig

        targets: Any = config.lora_target_modules
        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                                 target_modules="all-linear" if targets == ["all-linear"] else targets,
                                 task_type="CAUSAL_LM")
    trainer = EvolverGRPOTrainer(
        model, config, built.env_factory, tasks=built.train_tasks if "questioning" not in config.wrappers else None,
        hooks=built.hooks, processing_class=tokenizer, peft_config=peft_config, eval_tasks=built.eval_tasks)
    before = None
    if config.evolver_eval_episodes and built.eval_tasks:
        before = trainer.evaluate_episodes(built.eval_tasks[: config.evolver_eval_episodes], seed=1)
        print(f"evaluation before training ({config.evolver_eval_split}, {len(built.eval_tasks[:config.evolver_eval_episodes])} "
              f"tasks, T={config.evolver_eval_temperature}): {json.dumps(before)}", flush=True)
    trainer.train(resume_from_checkpoint=config.resume_from_checkpoint)
    trainer.save_model(config.output_dir)
    tokenizer.save_pretrained(config.output_dir)
    if before is not None:
        after = trainer.evaluate_episodes(built.eval_tasks[: config.evolver_eval_episodes], seed=1)
        print(f"evaluation after training: {json.dumps(after)}", flush=True)
        with open(os.path.join(config.output_dir, "evaluation.json"), "w", encoding="utf-8") as fh:
            json.dump({"before": before, "after": after, "plugin": trainer.plugin_state}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
