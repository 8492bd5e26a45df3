"""The GPU check behind ``scripts/gpu_check.sh``: a few GRPO steps of the real-model recipe with vLLM.

Prints the held-out success before and after, rollout and update tokens per second, and peak GPU
memory. ``--dry-run`` checks the same path on CPU in well under a minute: the vLLM settings are
parsed and validated, then the steps run with the tiny policy and the in-process sampler.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def _overrides(args: argparse.Namespace, dry: bool) -> list[str]:
    common = ["--output_dir", args.output_dir, "--max_steps", str(args.steps), "--report_to", "none",
              "--save_strategy", "no", "--evolver_eval_episodes", str(args.eval_tasks), "--evolver_eval_interval", "0",
              "--disable_tqdm", "true",
              "--max_train_minutes", "0"]
    if dry:
        return common + ["--model_name_or_path", "tiny", "--use_peft", "false", "--num_generations", "2",
                         "--per_device_train_batch_size", "4", "--max_turns", "2", "--max_turn_tokens", "8",
                         "--max_episode_tokens", "160", "--learning_rate", "1e-3"]
    return common + ["--model_name_or_path", args.model, "--use_vllm", "true", "--vllm_mode", "colocate",
                     "--vllm_gpu_memory_utilization", str(args.gpu_memory_utilization),
                     "--per_device_train_batch_size", str(args.tasks * 4), "--num_generations", "4"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/smollm2_webshop.yaml")
    p.add_argument("--model", default=os.path.expanduser("~/.cache/evolver/models/smollm2-135m-instruct"))
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--tasks", type=int, default=8, help="tasks per GRPO step (G=4 rollouts each)")
    p.add_argument("--eval-tasks", type=int, default=64)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    p.add_argument("--output-dir", dest="output_dir", default="/tmp/evolver_gpu_check")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny policy, no vLLM: checks the wiring")
    args = p.parse_args(argv)

    import torch
    from trl import get_peft_config

    from evolver_train.envs import build_training_environment
    from evolver_train.train_cli import load_model, parse_config
    from evolver_train.trainer import EvolverGRPOTrainer

    started = time.monotonic()
    if args.dry_run:  # the GPU run's settings must parse and validate, even where they cannot run
        gpu_args = _overrides(args, dry=False)
        if not os.path.exists(os.path.expanduser(args.model)):  # not fetched on this machine: check the rest
            gpu_args += ["--model_name_or_path", "tiny"]
        gpu = parse_config(["--config", args.config, *gpu_args]).train
        print(f"dry run: GPU settings valid (use_vllm={gpu.use_vllm}, vllm_mode={gpu.vllm_mode}, "
              f"{gpu.per_device_train_batch_size // gpu.num_generations} tasks x G={gpu.num_generations})", flush=True)
        args.eval_tasks = 4
    run = parse_config(["--config", args.config, *_overrides(args, dry=args.dry_run)])
    config = run.train
    config.sft, config.wrappers = None, []  # a few plain GRPO steps: no warm start, no mechanisms
    built = build_training_environment(config, {})
    probe = built.base_env_factory() if run.model.model_name_or_path == "tiny" else None
    model, tok = load_model(run, probe, built.train_tasks)
    peft = get_peft_config(run.model)
    trainer = EvolverGRPOTrainer(model, config, built.env_factory, tasks=built.train_tasks, processing_class=tok,
                                 peft_config=peft)
    timings = {"rollout_s": 0.0, "model_tokens": 0, "rows_tokens": 0}
    rollout = trainer._rollout

    def timed_rollout(prompts, t):
        t0 = time.perf_counter()
        out = rollout(prompts, t)
        timings["rollout_s"] += time.perf_counter() - t0
        timings["model_tokens"] += sum(sum(m) for m in out["env_mask"])
        timings["rows_tokens"] += sum(len(a) + len(b) for a, b in zip(out["prompt_ids"], out["completion_ids"]))
        return out

    trainer._rollout = timed_rollout
    trainer.rollout_func = timed_rollout
    eval_tasks = built.eval_tasks[: args.eval_tasks]
    before = trainer.evaluate_episodes(eval_tasks, seed=1)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - t0
    after = trainer.evaluate_episodes(eval_tasks, seed=1)
    update_s = max(train_s - timings["rollout_s"], 1e-9)
    print(f"steps {trainer.state.global_step}; rollout {timings['model_tokens'] / max(timings['rollout_s'], 1e-9):.0f} "
          f"sampled tokens/s ({timings['rollout_s']:.1f} s); update {timings['rows_tokens'] / update_s:.0f} "
          f"tokens/s ({update_s:.1f} s)", flush=True)
    if torch.cuda.is_available():
        print(f"peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB (torch; vLLM's reserved share "
              f"{config.vllm_gpu_memory_utilization:.2f} of the device on top)", flush=True)
    else:
        print("peak GPU memory: no GPU", flush=True)
    print(f"held-out success ({len(eval_tasks)} {config.evolver_eval_split} goals): before {before['success_rate']:.3f}"
          f" -> after {after['success_rate']:.3f}; invalid actions {before['invalid_action_rate']:.3f} -> "
          f"{after['invalid_action_rate']:.3f}; wall {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
