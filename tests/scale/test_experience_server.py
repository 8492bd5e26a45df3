"""One experience pool on a real Milvus server, written and read by several processes at once."""

from __future__ import annotations

import multiprocessing as mp

import gymnasium as gym
import numpy as np
import pytest

import evolver_gym  # noqa: F401 - registers the ids
from wrappers.navigation import Experience, ExperienceContext, ExperiencePool

DIM, PER_RANK, SHARED, RANKS = 64, 24, 6, 4
ENV = "evolver/WebShop-v0"


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _writer(uri: str, collection: str, rank: int, out) -> None:
    """Add own experiences in small batches (reading each back) and the shared ones everyone adds."""
    try:
        with ExperiencePool(uri, dim=DIM, collection=collection) as pool:
            own = _unit(np.random.default_rng(rank), PER_RANK)
            shared = _unit(np.random.default_rng(999), SHARED)
            ids, misses = [], 0
            for start in range(0, PER_RANK, 4):
                recs = [Experience(f"rank {rank} situation {i}", f"advice {i}", env_id=ENV,
                                   source_task_id=f"r{rank}/t{i}") for i in range(start, start + 4)]
                ids += pool.add(recs, vectors=own[start:start + 4])
                hits = pool.search_vectors(own[start:start + 4], top_k=1, threshold=0.99, env_id=ENV)
                misses += sum(not h or h[0].experience.id != i for h, i in zip(hits, ids[-4:]))
                if start == 8:  # the shared ones land in the middle, while the other ranks write too
                    recs = [Experience(f"shared situation {j}", f"advice {j} as rank {rank} saw it", env_id=ENV,
                                       source_task_id=f"r{rank}/shared{j}", score=rank / 10)
                            for j in range(SHARED)]
                    ids += pool.add(recs, vectors=shared)
            out.put((rank, ids, misses, None))
    except BaseException as exc:  # report instead of hanging the parent
        out.put((rank, [], 0, repr(exc)))


def test_concurrent_writers_lose_nothing_and_compaction_leaves_no_duplicates(milvus_server):
    collection = "concurrent"
    ctx = mp.get_context("spawn")  # fresh interpreters: no client state shared with the parent
    out = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(milvus_server.uri, collection, r, out)) for r in range(RANKS)]
    for p in procs:
        p.start()
    results = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [r[3] for r in results] == [None] * RANKS, results
    assert all(r[2] == 0 for r in results), "a process did not read back its own acknowledged writes"
    returned = {i for r in results for i in r[1]}

    # Strong reads: this process wrote nothing, and must see every write the others had acknowledged.
    with ExperiencePool(milvus_server.uri, dim=DIM, collection=collection, consistency="Strong") as pool:
        assert pool.stats()["search"] == "milvus"  # a server pool never searches a local mirror
        before = len(pool)
        # every experience is there: on a server, add() leaves merging across writers to compact()
        assert before == RANKS * (PER_RANK + SHARED)
        assert len(pool.get(sorted(returned))) == len(returned)  # every id add() returned is stored
        removed = pool.compact()
        after = pool.all(ENV)
        assert len(after) == len(pool) == RANKS * PER_RANK + SHARED == before - len(removed)
        present = {e.id for e in after}
        assert all(removed.get(i, i) in present for i in returned)  # merged-away ids point at a stored row
        vecs = np.stack([v for _, v in pool._get_with_vectors(sorted(present))])
        sims = vecs @ vecs.T - 2 * np.eye(len(vecs))
        assert sims.max() < pool.config.merge_threshold  # no near-duplicates left
        shared = [e for e in after if e.when_to_use.startswith("shared")]
        assert len(shared) == SHARED
        for e in shared:  # each kept shared row remembers the other ranks' sources and the best content
            assert len(e.metadata["merged_from"]) + 1 == RANKS
            assert e.content.endswith(f"as rank {RANKS - 1} saw it") and e.score == pytest.approx((RANKS - 1) / 10)
        assert pool.compact() == {}  # idempotent


def test_server_index_is_hnsw_and_search_is_exact_on_small_pools(milvus_server):
    with ExperiencePool(milvus_server.uri, dim=DIM, collection="index_choice") as pool:
        assert pool.config.index == "HNSW"
        desc = pool._client.describe_index("index_choice", "vector")
        assert desc["index_type"] == "HNSW" and int(desc["M"]) == pool.config.hnsw_m
        vecs = _unit(np.random.default_rng(5), 200)
        pool.add([Experience(f"s{i}", "a", env_id="x") for i in range(200)], vectors=vecs, merge=False)
        pool.flush()
        queries = vecs[:20] + 0.05 * _unit(np.random.default_rng(6), 20)
        got = [h[0].experience.when_to_use for h in pool.search_vectors(queries, top_k=1, threshold=-1.0)]
        assert got == [f"s{i}" for i in range(20)]


def test_experience_context_rebuilds_from_its_spec_and_runs_in_async_workers(milvus_server, embedder):
    uri = milvus_server.uri
    with ExperiencePool(uri, embedder=embedder, collection="experience") as pool:
        probe = gym.make(ENV, num_products=200)
        _, info = probe.reset(seed=0)
        probe.close()
        pool.add([Experience(info["instruction"], "open the cheapest matching item first", env_id=ENV)])
        assert len(pool) == 1  # a Strong count: the server's query node has the row before other clients search
    env = ExperienceContext(gym.make(ENV, num_products=200), uri, threshold=0.5)
    obs, info = env.reset(seed=0)
    assert "open the cheapest matching item first" in obs and info["experience"]["ids"]
    rebuilt = gym.make(env.spec)  # the spec records the pool's configuration, not the live object
    assert isinstance(rebuilt, ExperienceContext) and rebuilt.pool.config.uri == uri
    assert rebuilt.reset(seed=0) == (obs, info)
    rebuilt.close()
    env.close()
    wrap = [lambda e: ExperienceContext(e, uri, threshold=0.5)]
    # spawn, not fork: this process holds open gRPC channels, and gRPC is not fork-safe.
    vec = gym.make_vec(ENV, 2, vectorization_mode="async", wrappers=wrap, vector_kwargs={"context": "spawn"},
                       num_products=200)
    try:
        obs, info = vec.reset(seed=[0, 0])
        assert obs[0] == obs[1] and "open the cheapest matching item first" in obs[0]
    finally:
        vec.close()


def test_local_server_writes_its_settings_and_refuses_unknown_ones(milvus_server, tmp_path):
    import yaml

    from wrappers.navigation.local_server import LocalMilvusServer

    written = yaml.safe_load((milvus_server.base_dir / "configs" / "milvus.yaml").read_text())
    assert written["dataCoord"]["segment"]["sealProportion"] == 0.9  # the fixture's setting reached the server
    assert written["dataCoord"]["segment"]["maxSize"] == 512  # the rest stays Milvus's
    assert written["proxy"]["port"] == milvus_server.port  # the package's own settings are still filled in
    with pytest.raises(ValueError, match="dataCoord.segment.maxSise"):
        LocalMilvusServer(tmp_path / "typo", settings={"dataCoord.segment.maxSise": 1024}).start()
    assert not (tmp_path / "typo").exists()  # refused before anything was created
    with pytest.raises(ValueError, match=r"\[1024\]"):
        LocalMilvusServer(tmp_path / "bad", settings={"dataCoord.segment.maxSize": [1024]})
