"""SmolLM2-135M-Instruct zero-shot on ``evolver/BFCL-v0``: a sample of entries, greedy, on CPU.

The model (``evolver models fetch smollm2-135m-instruct``) plays through ``ChatCaller`` and
``TransformersChatClient``: the episode as one chat (observations as user messages, replies as assistant
messages). To keep the CPU cost to minutes, the function docs use BFCL's Python doc format
(``func_doc_fmt=python``, about 2.4 times shorter than the default JSON) and the harness hands a turn back
after ``--max-calls`` calling replies (BFCL allows 20; a model that loops would only lose more time).

    python benchmarks/bfcl_smollm2.py [--per-category 2] [--split dev] [--max-calls 3]

The sample is the first ``--per-category`` tasks of ``--split`` in each category (``entry`` scheme,
seed 0). Prints successes per category with Wilson 95% intervals, the share of replies that decoded to
calls, and the wall time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from evolver_gym.bfcl.env import BFCLEnv
from evolver_gym.bfcl.package import CATEGORIES
from evolver_gym.bfcl.policies import ChatCaller
from evolver_gym.bfcl.tasks import HANDBACK
from evolver_gym.core.stats import wilson_interval
from evolver_gym.core.trajectory import record_episode

PYTHON_DOCS = "ret_fmt=python&tool_call_tag=False&func_doc_fmt=python&prompt_fmt=plaintext&style=classic"


def play(env: BFCLEnv, task, client, max_calls: int):
    """One entry played by ``client`` as one chat; a turn is handed back after ``max_calls`` calling replies."""
    caller = ChatCaller(client)
    budget = {"turn": -1, "left": max_calls}

    def policy(obs, info):
        if info.get("turn") != budget["turn"] or "results" not in info:
            budget.update(turn=info.get("turn"), left=max_calls)
        if budget["left"] <= 0:
            return HANDBACK
        budget["left"] -= 1
        return caller(obs, info)

    return record_episode(env, policy, options={"task": task})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="~/.cache/evolver/models/smollm2-135m-instruct")
    parser.add_argument("--per-category", type=int, default=2)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--max-calls", type=int, default=3, help="calling replies per turn before a hand-back")
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args(argv)
    model = Path(args.model).expanduser()
    if not model.is_dir():
        parser.error(f"--model {str(model)!r} is not a folder: run `evolver models fetch smollm2-135m-instruct`")
    if args.per_category < 1 or args.max_calls < 1:
        parser.error("--per-category and --max-calls must be positive")

    from evolver_gym.core.llm.config import LLMConfig
    from evolver_gym.core.llm.local import TransformersChatClient

    client = TransformersChatClient(LLMConfig(backend="transformers", model=str(model), temperature=0.0,
                                              max_tokens=args.max_tokens))
    start = time.perf_counter()
    replies = calls = 0
    rows = []
    for category in CATEGORIES:
        env = BFCLEnv(split=args.split, categories=(category,), prompt_format=PYTHON_DOCS)
        wins = 0
        for task in env.tasks()[: args.per_category]:
            t0 = time.perf_counter()
            traj = play(env, task, client, args.max_calls)
            for step in traj.steps:
                replies += 1
                calls += int(bool(step.info.get("calls")))
            wins += int(traj.success)
            print(f"{task.task_id}: success {traj.success}, {len(traj.steps)} steps, "
                  f"{time.perf_counter() - t0:.0f} s, first reply {traj.steps[0].action[:80]!r}", flush=True)
        env.close()
        rows.append((category, wins))
    n = args.per_category
    print(f"\nSmolLM2-135M-Instruct zero-shot, greedy, {args.split} first {n} per category, Python docs, "
          f"{args.max_calls} calling replies per turn at most, {time.perf_counter() - start:.0f} s")
    print("| " + " | ".join(c for c, _ in rows) + " |")
    print("|" + "---|" * len(rows))
    cells = []
    for _, k in rows:
        lo, hi = wilson_interval(k, n)
        cells.append(f"{k}/{n} [{100 * lo:.0f}, {100 * hi:.0f}]%")
    print("| " + " | ".join(cells) + " |")
    print(f"replies that decoded to calls: {calls}/{replies}")


if __name__ == "__main__":
    main()
