"""Seconds per SFT step of the quickstart's warm start: the model's own loss against ``action_token_loss``.

A demonstration labels its actions only (about a tenth of its tokens). The model's own loss projects every
position onto the vocabulary; ``action_token_loss`` projects the labelled ones. Both train the same policy
(the quickstart's size, built from the same seed) on the same batches of the quickstart's demonstrations
(human train goals of the product split, the quickstart's observation shaping), one full step each
(forward, backward, clipping, AdamW), interleaved so that load affects both alike. Prints seconds per step
of each, the ratio, and the largest difference between the two losses on the first batches (the same
value up to float rounding).

    python benchmarks/sft_step.py [--steps 40] [--threads 1]

With ``--progress``, the warm start's own loop (``train_sft``) instead, with its progress reporting on
(TensorBoard scalars every step, a resume checkpoint every ``--save-steps`` steps, ETA lines) against off
(``report_to: none``, ``save_steps: 0``), on the same demonstrations, runs alternated: wall seconds per run
and per step of each, and their ratio. Both runs train the same weights (checked).

    python benchmarks/sft_step.py --progress [--steps 40] [--save-steps 10] [--repeats 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPING = ["drop_repeated_instruction", "top_results=5", "numbered_results"]
ENV_KWARGS = {"num_products": 600, "max_steps": 8, "goals": "synthetic", "split_scheme": "product"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="timed steps of each loss")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--progress", action="store_true", help="time train_sft with progress reporting on and off")
    parser.add_argument("--save-steps", type=int, default=10, help="--progress: steps between resume checkpoints")
    parser.add_argument("--repeats", type=int, default=2, help="--progress: runs of each setting")
    args = parser.parse_args(argv)
    if args.progress:
        return progress_overhead(args)

    import gymnasium as gym
    import numpy as np
    import torch

    import evolver_gym  # noqa: F401 - registers the environment ids
    from evolver_gym.core import make_rng
    from evolver_train.envs import shape_environment
    from evolver_train.policy import TinyPolicyConfig, build_policy
    from evolver_train.rollout import ChatCodec
    from evolver_train.sft import _batches, action_token_loss, collect_demonstrations, encode_demonstration

    torch.set_num_threads(args.threads)
    env = shape_environment(gym.make("evolver/WebShop-v0", **ENV_KWARGS), SHAPING)
    tasks = env.unwrapped.tasks("train")
    demonstrations = collect_demonstrations(env, tasks, 512, imperfect_share=0.0, seed=0)
    size = TinyPolicyConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512)
    models, optimizers = {}, {}
    for name in ("model's own loss", "action_token_loss"):
        torch.manual_seed(0)
        model, tokenizer = build_policy("tiny", env=env, tasks=tasks, size=size, seed=0)
        model.train()
        models[name], optimizers[name] = model, torch.optim.AdamW(model.parameters(), lr=3e-3)
    env.close()
    codec = ChatCodec(tokenizer, max_observation_tokens=256)
    encoded = [encode_demonstration(codec, d) for d in demonstrations if d.steps]
    labelled = sum(sum(t != -100 for t in e[1]) for e in encoded) / sum(len(e[0]) for e in encoded)
    pad = tokenizer.pad_token_id
    batches = _batches([len(e[0]) for e in encoded], args.batch_size, make_rng(0, "sft-batches"))

    def step(name, input_ids, labels):
        model, optimizer = models[name], optimizers[name]
        start = time.perf_counter()
        if name == "model's own loss":
            loss = model(input_ids=input_ids, labels=labels).loss
        else:
            loss = action_token_loss(model, input_ids, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return time.perf_counter() - start, loss.item()

    seconds = {name: [] for name in models}
    gaps = []
    for i in range(args.steps + 2):  # two warm-up steps
        rows = [encoded[int(k)] for k in next(batches)]
        width = max(len(r[0]) for r in rows)
        input_ids = torch.tensor([r[0] + [pad] * (width - len(r[0])) for r in rows])
        labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in rows])
        order = list(models) if i % 2 == 0 else list(reversed(models))
        results = {name: step(name, input_ids, labels) for name in order}
        if i < 5:  # the two policies are still close: their losses must agree
            gaps.append(abs(results["model's own loss"][1] - results["action_token_loss"][1]))
        if i >= 2:
            for name, (s, _) in results.items():
                seconds[name].append(s)
    print(f"{len(encoded)} demonstrations, {np.mean([len(e[0]) for e in encoded]):.0f} tokens each, "
          f"{labelled:.1%} of tokens labelled; batch {args.batch_size}, {args.threads} thread(s), "
          f"{args.steps} steps each")
    for name, values in seconds.items():
        print(f"  {name:18s} {statistics.median(values):.3f} s/step median, {statistics.mean(values):.3f} mean")
    ratio = statistics.median(seconds["model's own loss"]) / statistics.median(seconds["action_token_loss"])
    print(f"  speed-up (median own / median action_token_loss): {ratio:.2f}x")
    print(f"  largest loss difference over the first 5 batches: {max(gaps):.2e}")
    return 0


def progress_overhead(args: argparse.Namespace) -> int:
    """Wall time of ``train_sft`` with progress reporting (TensorBoard, checkpoints, ETA) on against off."""
    import tempfile

    import gymnasium as gym
    import torch

    import evolver_gym  # noqa: F401 - registers the environment ids
    from evolver_train.envs import shape_environment
    from evolver_train.policy import load_policy
    from evolver_train.sft import SFTConfig, collect_demonstrations, train_sft

    env = shape_environment(gym.make("evolver/WebShop-v0", **ENV_KWARGS), SHAPING)
    demonstrations = collect_demonstrations(env, env.unwrapped.tasks("train"), 512, imperfect_share=0.0, seed=0)
    env.close()
    common = dict(env_kwargs=ENV_KWARGS, observation_shaping=SHAPING, max_observation_tokens=256, hidden_size=128,
                  num_hidden_layers=2, num_attention_heads=4, batch_size=args.batch_size, max_steps=args.steps,
                  max_minutes=0, num_threads=args.threads, log_every=10, num_demonstrations=len(demonstrations))
    settings = {"off": dict(report_to="none", save_steps=0),
                "on": dict(report_to="tensorboard", save_steps=args.save_steps, save_total_limit=1)}
    seconds: dict[str, list[float]] = {name: [] for name in settings}
    weights: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for name in (list(settings) if r % 2 == 0 else list(reversed(settings))):
                out = f"{tmp}/{name}{r}"
                config = SFTConfig(output_dir=out, **common, **settings[name])
                start = time.perf_counter()
                train_sft(config, demonstrations=list(demonstrations))
                seconds[name].append(time.perf_counter() - start)
                weights[name] = load_policy(out)[0].state_dict()
    same = all(torch.equal(weights["on"][k], weights["off"][k]) for k in weights["off"])
    print(f"train_sft, {len(demonstrations)} demonstrations, the main job's policy size, batch {args.batch_size}, "
          f"{args.threads} thread(s), {args.steps} steps a run, {args.repeats} runs of each, alternated")
    for name, values in seconds.items():
        print(f"  progress {name:3s}: {statistics.median(values):.2f} s a run median "
              f"({statistics.median(values) / args.steps:.3f} s a step), runs {[round(v, 2) for v in values]}")
    ratio = statistics.median(seconds["on"]) / statistics.median(seconds["off"])
    print(f"  on / off: {ratio:.3f}; checkpoint every {args.save_steps} steps; same weights: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
