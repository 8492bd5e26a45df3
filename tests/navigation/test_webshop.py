"""Navigation on the WebShop env: retrieval quality (recall@5 by product type), the CLI, the wrapper."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

pytest.importorskip("evolver_gym.webshop.env")
pytestmark = pytest.mark.slow  # a warm-up of 40 WebShop episodes: ~30-60 s on 2 busy cores

import evolver_gym  # noqa: E402,F401
from wrappers.navigation import ExperienceContext, ExperiencePool, OfflineSummarizer, build_pool, oracle_policy  # noqa: E402
from wrappers.navigation.cli import main as cli_main  # noqa: E402

N_TRAIN = 40


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder):
    env = gym.make("evolver/WebShop-v0", num_products=200)
    uri = str(tmp_path_factory.mktemp("ws") / "ws.db")
    pool = ExperiencePool(uri=uri, embedder=embedder)
    tasks = env.unwrapped.tasks("train")[:N_TRAIN]
    stats = build_pool(env, oracle_policy(env), pool, OfflineSummarizer(), tasks=tasks, rollouts_per_task=1)
    yield env, pool, stats, uri
    pool.close()


def test_warmup_on_webshop_oracle(built):
    env, pool, stats, _ = built
    assert stats["episodes"] == N_TRAIN and stats["successes"] >= 0.9 * N_TRAIN
    assert 0 < len(pool) <= stats["successes"]


def test_recall_at_5_same_product_type(built):
    """Dev instructions retrieve experiences of their own product type first."""
    env, pool, _, _ = built
    have = {e.metadata.get("product_type") for e in pool.all()}
    dev = [t for t in env.unwrapped.tasks("dev") if t.goal.get("query") in have][:40]
    assert len(dev) >= 10
    hits = pool.search_batch([t.instruction for t in dev], top_k=5, threshold=-1.0)
    recall = sum(any(h.experience.metadata.get("product_type") == t.goal["query"] for h in hs)
                 for t, hs in zip(dev, hits)) / len(dev)
    top1 = sum(bool(hs) and hs[0].experience.metadata.get("product_type") == t.goal["query"]
               for t, hs in zip(dev, hits)) / len(dev)
    print(f"recall@5={recall:.2f} top1={top1:.2f} over {len(dev)} dev tasks")
    assert recall >= 0.8 and top1 >= 0.5


def test_wrapper_on_webshop_and_dev_guard(built):
    env, pool, _, _ = built
    n = len(pool)
    wrapped = ExperienceContext(gym.make("evolver/WebShop-v0", num_products=200), pool,
                                summarizer=OfflineSummarizer(), continual=True, top_k=2)
    obs, info = wrapped.reset(seed=0, options={"split": "dev", "index": 0})
    s, e = info["experience"]["span"]
    assert info["experience"]["text"] and obs[s:e] == info["experience"]["text"]
    for a in env.unwrapped.oracle(info["task"]):
        obs, _, term, trunc, info = wrapped.step(a)
        if term or trunc:
            break
    assert info["success"] and len(pool) == n  # dev episode: nothing added


def test_cli_search_stats_export(built, tmp_path, capsys):
    _, pool, _, uri = built
    pool.flush()
    # the CLI opens the same path in this process (shares the milvus-lite server)
    assert cli_main(["search", "--uri", uri, "i need a waterproof mascara", "--top-k", "2"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2 and lines[0]["similarity"] >= lines[1]["similarity"]
    assert cli_main(["stats", "--uri", uri]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == len(pool)
    out = tmp_path / "x.jsonl"
    assert cli_main(["export", "--uri", uri, "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == len(pool)

