"""Prefix reuse in the in-process chat clients: seconds per multi-turn conversation with and without it.

The same greedy conversations are played by a ``TransformersChatClient`` (prefix reuse on, its default)
and a ``PolicyChatClient`` over the same model object with it off (that one first), in one process:

* synthetic (default): a system prompt of about ``--system-tokens`` tokens of function docs, then
  ``--turns`` user messages, each followed by the model's own reply;
* ``--bfcl N``: the first N ``base`` entries of ``evolver/BFCL-v0`` (dev split), played as
  ``benchmarks/bfcl_smollm2.py`` plays them (Python docs, ``--max-calls`` calling replies per turn).

The model is SmolLM2-135M-Instruct from ``--model`` when that folder exists, else the tiny random model
of ``build_tiny_chat_model`` (with a system prompt cut to fit its 512 positions). Prints CPU-seconds
(``time.process_time``) and wall seconds per conversation, their ratio, the share of prompt tokens
taken from the cache, and whether both clients gave the same replies.

    python benchmarks/prefix_cache.py [--turns 6] [--system-tokens 2000] [--max-tokens 48] [--threads 1]
    python benchmarks/prefix_cache.py --bfcl 1
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

USER_TURNS = ["List the files in the current folder.", "Open notes.txt and tell me how many lines it has.",
              "Copy it to the backup folder.", "Now search the backup folder for files named report.",
              "Sort those results by size and show the largest.", "Send the largest one to alice@example.com.",
              "Delete the copy in the backup folder.", "What did you do in total? Summarise in one line."]


def system_prompt(tokenizer, tokens: int) -> str:
    """Made-up function docs, about ``tokens`` tokens long."""
    parts, i = [], 0
    while len(tokenizer("".join(parts))["input_ids"]) < tokens:
        parts.append(f"def tool_{i}(path: str, pattern: str = '*', limit: int = {10 + i}) -> dict:\n"
                     f"    \"\"\"Tool number {i}: reads the folder at path, keeps the entries that match pattern, "
                     f"returns at most limit of them with their sizes.\"\"\"\n")
        i += 1
    return "You can call these Python functions; answer with a list of calls.\n\n" + "".join(parts)


def synthetic(client, system: str, turns: int) -> list[str]:
    messages = [{"role": "system", "content": system}]
    replies = []
    for turn in range(turns):
        messages.append({"role": "user", "content": USER_TURNS[turn % len(USER_TURNS)]})
        replies.append(client.chat(messages))
        messages.append({"role": "assistant", "content": replies[-1]})
    return replies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="~/.cache/evolver/models/smollm2-135m-instruct")
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--system-tokens", type=int, default=2000)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=1, help="conversations per client")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--bfcl", type=int, default=0, help="play this many BFCL entries instead")
    parser.add_argument("--max-calls", type=int, default=3, help="--bfcl: calling replies per turn")
    args = parser.parse_args(argv)

    import torch

    from evolver_gym.core.llm import LLMConfig, PolicyChatClient, TransformersChatClient

    torch.set_num_threads(args.threads)
    folder = Path(args.model).expanduser()
    if folder.is_dir():
        name = folder.name
        cached = TransformersChatClient(LLMConfig(backend="transformers", model=str(folder), temperature=0.0,
                                                  max_tokens=args.max_tokens))
        model, tokenizer = cached.model, cached.tokenizer
    else:
        from evolver_gym.core.llm.testing import build_tiny_chat_model

        name = "tiny random model (no model folder)"
        model, tokenizer = build_tiny_chat_model()
        args.system_tokens = min(args.system_tokens, 120)
        cached = PolicyChatClient(model, tokenizer, temperature=0.0, max_tokens=args.max_tokens, prefix_cache=True)
    plain = PolicyChatClient(model, tokenizer, temperature=0.0, max_tokens=args.max_tokens, prefix_cache=False)

    if args.bfcl:
        from bfcl_smollm2 import PYTHON_DOCS, play

        from evolver_gym.bfcl.env import BFCLEnv

        env = BFCLEnv(split="dev", categories=("base",), prompt_format=PYTHON_DOCS)
        tasks = env.tasks()[: args.bfcl]
        what = f"{len(tasks)} BFCL base dev entries, {args.max_calls} calling replies per turn at most"

        def conversations(client):
            return [[step.action for step in play(env, task, client, args.max_calls).steps] for task in tasks]
    else:
        system = system_prompt(tokenizer, args.system_tokens)
        what = (f"synthetic: {len(tokenizer(system)['input_ids'])}-token system prompt, {args.turns} turns, "
                f"{args.repeats} conversation(s) per client")

        def conversations(client):
            return [synthetic(client, system, args.turns) for _ in range(args.repeats)]

    times = {"off": [0.0, 0.0], "on": [0.0, 0.0]}
    replies = {}
    for label, client in (("off", plain), ("on", cached)):
        cpu, wall = time.process_time(), time.perf_counter()
        replies[label] = conversations(client)
        times[label] = [time.process_time() - cpu, time.perf_counter() - wall]
        print(f"prefix cache {label}: {times[label][0]:.1f} CPU-s, {times[label][1]:.1f} s", flush=True)
    n = len(replies["on"])
    stats = cached.stats.snapshot()
    flat = [(a, b) for conv_a, conv_b in zip(replies["off"], replies["on"]) for a, b in zip(conv_a, conv_b)]
    print(f"\n{name}, greedy, max_tokens {args.max_tokens}, {args.threads} torch thread(s), "
          f"load average {os.getloadavg()[0]:.1f}; {what}")
    print("| prefix cache | CPU-s per conversation | wall s per conversation | prompt tokens from the cache |")
    print("|---|---:|---:|---:|")
    print(f"| off | {times['off'][0] / n:.1f} | {times['off'][1] / n:.1f} | 0 |")
    print(f"| on | {times['on'][0] / n:.1f} | {times['on'][1] / n:.1f} | "
          f"{stats['cached_prompt_tokens']:,} of {stats['prompt_tokens']:,} "
          f"({100 * stats['cached_prompt_tokens'] / max(1, stats['prompt_tokens']):.0f}%) |")
    print(f"speedup: {times['off'][0] / times['on'][0]:.2f}x CPU, {times['off'][1] / times['on'][1]:.2f}x wall; "
          f"replies identical: {sum(a == b for a, b in flat)}/{len(flat)}")


if __name__ == "__main__":
    main()
