"""Rollout throughput with environments in this process vs in Ray actors (1 and 2), same episodes.

``play_episodes`` drives WebShop episodes with a scripted policy (each turn a search, so every step
runs a BM25 query over the catalog): generation costs nothing here, so the figure is what the
environment side of a rollout can deliver. All backends run in one script on the same rows and
seeds (the episodes are checked equal), so the ratios are comparable on a loaded machine.

    python benchmarks/env_workers.py [--rows 32] [--turns 6] [--products 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import functools
import time

import gymnasium as gym

import evolver_gym  # noqa: F401 - registers the ids
from evolver_train.env_workers import EnvWorkerConfig, init_ray, make_env_pool
from evolver_train.policy import build_word_tokenizer
from evolver_train.rollout import ChatCodec, RowSpec, play_episodes

QUERIES = ["red running shoes", "shampoo for dry hair", "wireless headphones", "cotton t-shirt", "coffee maker",
           "yoga mat", "phone case", "wool socks"]


def _scripted(tok, start: int = 0):
    """A ``generate`` answering every row with a search action (word-tokenizer ids + EOS).

    Each call numbers its queries, so no search repeats and the engine's result cache never answers.
    """
    calls = [start]

    def generate(contexts, caps):
        calls[0] += 1
        ids = []
        for k, cap in enumerate(caps):
            text = f"search[{QUERIES[k % len(QUERIES)]} {QUERIES[(k + calls[0]) % len(QUERIES)]} {calls[0]} {k}]"
            ids.append((tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id])[:cap])
        return ids, [[0.0] * len(x) for x in ids]
    return generate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--products", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import ray

    init_ray(num_cpus=2)
    factory = functools.partial(gym.make, "evolver_gym:evolver/WebShop-v0", num_products=args.products,
                                max_steps=args.turns + 1)
    probe = factory()
    tasks = list(probe.unwrapped.tasks("train"))
    numbers = " ".join(str(i) for i in range(5000))
    tok = build_word_tokenizer([f"search[{q}]" for q in QUERIES] + [numbers] + [t.instruction for t in tasks[:200]])
    tok.chat_template = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }}{{ eos_token }}{% endfor %}"
                         "{% if add_generation_prompt %}<|assistant|> {% endif %}")
    codec = ChatCodec(tok, max_observation_tokens=256)
    rows = [RowSpec(task=tasks[i % len(tasks)].to_dict(), seed=i) for i in range(args.rows)]
    backends = [("in-process", EnvWorkerConfig("local")),
                ("ray, 1 actor", EnvWorkerConfig("ray", num_actors=1)),
                ("ray, 2 actors", EnvWorkerConfig("ray", num_actors=2))]
    reference = None
    print(f"{args.rows} rows x {args.turns} turns, WebShop with {args.products} products, scripted search actions")
    print(f"| backend | steps/s (best of {args.repeats}) | episodes/s | vs in-process |")
    print("|---|---|---|---|")
    base_rate = None
    for name, cfg in backends:
        pool = make_env_pool(factory, cfg)
        pool.take(args.rows)  # build the environments before timing
        best = float("inf")
        for rep in range(args.repeats):
            generate = _scripted(tok, 1000 * rep)  # the same actions for every backend, new ones each repeat
            began = time.perf_counter()
            episodes = play_episodes(pool.take(args.rows), rows, generate, codec, max_turns=args.turns,
                                     max_episode_tokens=4096, max_turn_tokens=16)
            best = min(best, time.perf_counter() - began)
            summary = [(ep.tokens.completion_ids, [s.observation for s in ep.steps], ep.score) for ep in episodes]
            reference = reference or {}
            assert reference.setdefault(rep, summary) == summary, f"{name} played different episodes"
        steps = sum(len(ep.steps) for ep in episodes)
        rate = steps / best
        base_rate = base_rate or rate
        print(f"| {name} | {rate:.1f} | {len(episodes) / best:.2f} | {rate / base_rate:.2f}x |", flush=True)
        pool.close()
    ray.shutdown()


if __name__ == "__main__":
    main()
