"""A short arena training run whose step credit also comes from a real local LLM judge.

The judge labels the learning seats' decisions that no hidden-state rule can judge (GOOD +1,
BAD -1, weighted by ``step_credit_weight``). The model (by default the offline SmolLM2-135M-Instruct
checkpoint) answers through the project's OpenAI-compatible loopback server
(``evolver_gym.core.llm.testing.ScriptedLLMServer`` with ``model_handler``), so the run goes through
the same HTTP client a hosted judge would. Prints every step's row (labels, fallbacks, seconds) and
the judge's counts (parsed replies, parse failures, request failures).

Usage: python benchmarks/arena_llm_judge.py [--steps 3 --deals 1 --group-size 2 --model DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from arena.train import ArenaTrainConfig, train
from evolver_gym.core.llm.local import TransformersChatClient
from evolver_gym.core.llm.testing import ScriptedLLMServer, model_handler

DEFAULT_MODEL = Path.home() / ".cache" / "evolver" / "models" / "smollm2-135m-instruct"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="local model folder (never downloaded)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--deals", type=int, default=1, help="deals (GRPO groups) per step")
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=256, help="judge reply length limit")
    parser.add_argument("--max-chars", type=int, default=600, help="characters kept per step in the judge prompt")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the judge model")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    local = TransformersChatClient(model=args.model, temperature=0.0, max_tokens=args.max_tokens, seed=0)
    replies: list[str] = []
    answer = model_handler(local)

    def handler(body):
        replies.append(answer(body))
        return replies[-1]

    with ScriptedLLMServer(handler=handler, model="judge") as server:
        config = ArenaTrainConfig(
            steps=args.steps, deals_per_step=args.deals, group_size=args.group_size, learn_sides=("good", "evil"),
            opponent_mix={"rule": 1.0}, llm_judge=f"judge@{server.url}", llm_judge_max_chars=args.max_chars,
            llm_judge_options={"timeout": 1800.0, "max_retries": 0, "max_tokens": args.max_tokens, "concurrency": 1},
            snapshot_every=args.steps, elo_games=0, eval_games=0, output_dir=None, torch_threads=args.threads,
        )  # fmt: skip
        start = time.monotonic()
        report = train(config, log=print)
        seconds = time.monotonic() - start
        prompt_chars = [len(r["messages"][-1]["content"]) for r in server.requests]
    print(f"model {Path(args.model).name}; {len(server.requests)} judge requests, prompt "
          f"{min(prompt_chars, default=0)}-{max(prompt_chars, default=0)} characters; {seconds:.0f} s in all")
    print("judge counts:", json.dumps(report["judge"]))
    for i, text in enumerate(replies[:2]):
        print(f"--- reply {i + 1} (first 400 characters) ---\n{text[:400]}")


if __name__ == "__main__":
    main()
