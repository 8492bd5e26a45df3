"""``evolver train``: GRPO on a text environment from a YAML recipe (basic or overall mode).

* ``main`` - parse ``--config file.yaml`` plus ``--field value`` overrides, build the model, the
  environments and the mechanism services, train, save, and print the evaluation before and after.
* ``load_model`` - a (model, tokenizer) pair from ``model_name_or_path`` (or ``tiny``).
* ``run_warm_start`` - the config's ``sft:`` block, run before RL (``evolver sft`` on the same env).

With an ``sft:`` block the run is: SFT warm start -> held-out evaluation -> GRPO -> evaluation;
it writes the checkpoint, TensorBoard logs, ``learning_curves.png`` and ``evaluation.json``.

Example::

    evolver train --config configs/basic.yaml --max_steps 20 --output_dir runs/basic
    evolver train --config configs/overall.yaml --model_name_or_path runs/sft
    evolver train --config configs/quickstart.yaml      # SFT warm start + overall-mode GRPO, ~15 min on 2 CPUs
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

__all__ = ["main", "load_model", "parse_config", "run_warm_start"]


def parse_config(argv: list[str]):
    """``EvolverGRPOConfig`` from ``argv`` via ``TrlParser`` (YAML defaults, command-line overrides)."""
    from trl import TrlParser

    from .config import EvolverGRPOConfig

    parser = TrlParser((EvolverGRPOConfig,), prog="evolver train",
                       description="GRPO on a multi-turn text environment (AgentEvolver's modes on TRL).")
    (config,) = parser.parse_args_and_config(argv)
    return config


def run_warm_start(config: Any) -> str:
    """Run the config's ``sft`` block (``evolver sft``) into ``<output_dir>/sft``; returns the checkpoint.

    The SFT run shares the environment and the codec settings with training, so the warm-started
    policy sees the same token layout at RL time.
    """
    from .sft import SFTConfig, train_sft

    shared = {"env_id": config.env_id, "env_kwargs": dict(config.env_kwargs), "split": config.task_split,
              "model_name_or_path": config.model_name_or_path, "system_prompt": config.system_prompt,
              "max_observation_tokens": config.max_observation_tokens,
              "observation_shaping": list(config.observation_shaping), "seed": config.seed,
              "output_dir": os.path.join(config.output_dir, "sft")}
    navigation = dict(config.wrapper_kwargs.get("navigation") or {}) if "navigation" in config.wrappers else {}
    if "max_chars" in navigation:  # experience blocks in demonstrations as long as those injected at RL time
        shared["experience_max_chars"] = int(navigation["max_chars"])
    sft_config = SFTConfig(**{**shared, **dict(config.sft)})
    return str(train_sft(sft_config))


def load_model(config: Any, env: Any = None, tasks: list[Any] | None = None):
    """``(model, tokenizer)``: a checkpoint folder or hub name, or ``tiny`` built for ``env``.

    ``tiny`` uses :func:`evolver_train.policy.build_environment_tokenizer`, the same code path as
    ``evolver sft``.
    """
    if not config.model_name_or_path:
        raise ValueError("model_name_or_path is required (a local folder, a hub name, or 'tiny')")
    if config.model_name_or_path == "tiny":
        from .policy import build_environment_tokenizer, build_tiny_policy

        if env is None:
            raise ValueError("model_name_or_path 'tiny' needs the environment to build its tokenizer")
        tokenizer = build_environment_tokenizer(env, tasks or [], extra_texts=[config.system_prompt or ""])
        model = build_tiny_policy(tokenizer, seed=config.seed)
    else:
        from .policy import load_policy

        model, tokenizer = load_policy(config.model_name_or_path)
    tokenizer.padding_side = "left"
    eos = model.generation_config.eos_token_id  # keep every EOS id the model stops on (a list for chat models)
    eos = [eos] if isinstance(eos, int) else list(eos or [])
    model.generation_config.eos_token_id = eos if tokenizer.eos_token_id in eos else [tokenizer.eos_token_id, *eos]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def _describe_env(config: Any) -> str:
    kwargs = ", ".join(f"{k}={v}" for k, v in sorted(config.env_kwargs.items()))
    return f"{config.env_id}({kwargs})" if kwargs else config.env_id


def _report(config: Any, n_eval: int, before: dict[str, float], after: dict[str, float], seconds: float) -> str:
    def pts(key: str) -> str:
        return f"{100 * (after[key] - before[key]):+.1f} points"
    return "\n".join([
        "",
        f"== evolver train: held-out evaluation on {config.env_id}, before and after RL ==",
        f"   {config.evolver_eval_split} split, {n_eval} goals never trained on, one episode each, sampled at "
        f"temperature {config.evolver_eval_temperature}, no experience in the prompt",
        *([f"   environment as configured (reduced for a small CPU run): {_describe_env(config)}"
           + (f", observation shaping {list(config.observation_shaping)}" if config.observation_shaping else "")]
          if config.env_kwargs or config.observation_shaping else []),
        f"   success rate: before RL {before['success_rate']:.3f}  ->  after RL {after['success_rate']:.3f}  "
        f"({pts('success_rate')})",
        f"   score:        before RL {before['score']:.3f}  ->  after RL {after['score']:.3f}  ({pts('score')})",
        f"   wall time {seconds / 60:.1f} min; checkpoint, TensorBoard logs (runs/) and learning_curves.png in "
        f"{config.output_dir}",
        ""])


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    config = parse_config(argv)

    from .curves import plot_learning_curves
    from .envs import build_training_environment
    from .trainer import EvolverGRPOTrainer

    if config.sft:
        print(f"== warm start: supervised fine-tuning on oracle demonstrations ({_describe_env(config)}) ==",
              flush=True)
        config.model_name_or_path = run_warm_start(config)
    built = build_training_environment(config)
    probe = built.env_factory() if config.model_name_or_path == "tiny" else None
    model, tokenizer = load_model(config, probe, built.train_tasks)
    if probe is not None:
        probe.close()
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
    eval_tasks = built.eval_tasks[: config.evolver_eval_episodes] if config.evolver_eval_episodes else []
    before = None
    if eval_tasks:
        print(f"== evaluation before RL: {len(eval_tasks)} {config.evolver_eval_split} goals ==", flush=True)
        before = trainer.evaluate_episodes(eval_tasks, seed=1)
        print(f"before RL: {json.dumps(before)}", flush=True)
    print(f"== GRPO: {config.max_steps} steps, {config.per_device_train_batch_size // config.num_generations} tasks x "
          f"G={config.num_generations}, mechanisms: {', '.join(config.wrappers) or 'none (plain GRPO)'} ==", flush=True)
    trainer.train(resume_from_checkpoint=config.resume_from_checkpoint)
    trainer.save_model(config.output_dir)
    tokenizer.save_pretrained(config.output_dir)
    after = None
    if eval_tasks:
        print(f"== evaluation after RL: {len(eval_tasks)} {config.evolver_eval_split} goals ==", flush=True)
        after = trainer.evaluate_episodes(eval_tasks, seed=1)
        print(f"after RL: {json.dumps(after)}", flush=True)
    history = [dict(row) for row in trainer.state.log_history]
    curves = plot_learning_curves(history, os.path.join(config.output_dir, "learning_curves.png"),
                                  before=before, after=after, title=f"{_describe_env(config)}, "
                                  f"mechanisms: {', '.join(config.wrappers) or 'none'}")
    seconds = time.monotonic() - started
    with open(os.path.join(config.output_dir, "evaluation.json"), "w", encoding="utf-8") as fh:
        json.dump({"before": before, "after": after, "eval_split": config.evolver_eval_split,
                   "eval_goals": len(eval_tasks), "env_id": config.env_id, "env_kwargs": config.env_kwargs,
                   "seed": config.seed, "wall_seconds": seconds, "curves": str(curves),
                   "plugin": trainer.plugin_state}, fh, indent=2, default=str)
    if before is not None and after is not None:
        print(_report(config, len(eval_tasks), before, after, seconds), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
