"""Tests of the experience pool on milvus-lite: add/merge, search, persistence, durability."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from wrappers.navigation import Experience, ExperiencePool

ENV = "evolver/WebShop-v0"
EXPS = [
    Experience("buying running shoes in a given size", "search the shoe type, click the size, buy", env_id=ENV,
               source_task_id="t1"),
    Experience("ordering ground coffee with a flavor", "search coffee, click the flavor option", env_id=ENV,
               source_task_id="t2"),
    Experience("sending an email to a contact", "look up the contact, then call send_email", env_id="app",
               source_task_id="t3"),
]


def test_add_search_filter_threshold(pool):
    ids = pool.add(EXPS)
    assert ids == [e.id for e in EXPS] and len(pool) == 3
    hits = pool.search("i need size 9 sneakers for jogging", top_k=3)
    assert hits[0].experience.id == EXPS[0].id
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    assert [h.experience.env_id for h in pool.search("email", env_id="app")] == ["app"]
    assert pool.search("email", env_id="no-such-env") == []
    assert pool.search("sneakers", threshold=0.99) == []
    batch = pool.search_batch(["coffee beans hazelnut", "mail my friend"], top_k=1)
    assert [b[0].experience.id for b in batch] == [EXPS[1].id, EXPS[2].id]


def test_near_duplicates_merge(pool):
    pool.add(EXPS[:1])
    dup = Experience("buying running shoes of a given size", "better advice", env_id=ENV, source_task_id="t9",
                     score=1.0)
    other_env = Experience("buying running shoes of a given size", "advice", env_id="other")
    ids = pool.add([dup, other_env])
    assert ids[0] == EXPS[0].id and ids[1] == other_env.id and len(pool) == 2
    merged = pool.get([EXPS[0].id])[0]
    assert merged.content == "better advice" and merged.metadata["merged_from"] == ["t9"]
    assert merged.metadata["merges"] == 1
    # merging inside one call, and disabling it
    a = Experience("ordering tea bags", "x", env_id=ENV)
    b = Experience("ordering tea bags", "y", env_id=ENV)
    assert len(set(pool.add([a, b]))) == 1
    assert len(set(pool.add([Experience("ordering tea", "z", env_id=ENV)], merge=False))) == 1


def test_get_delete_uses_stats_export_import(pool, tmp_path, embedder):
    pool.add(EXPS)
    pool.record_use([EXPS[0].id, "missing"], won=True)
    pool.record_use([EXPS[0].id], won=False)
    e = pool.get([EXPS[0].id])[0]
    assert (e.uses, e.wins, e.win_rate) == (2, 1, 0.5)
    assert pool.delete([EXPS[2].id, "missing"]) == 1 and len(pool) == 2
    st = pool.stats()
    assert st["count"] == 2 and st["per_env"] == {ENV: 2} and st["uses"] == 2
    out = tmp_path / "x.jsonl"
    assert pool.export_jsonl(out) == 2
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {x["id"] for x in lines} == {EXPS[0].id, EXPS[1].id}
    with ExperiencePool(uri=str(tmp_path / "copy.db"), embedder=embedder) as copy:
        assert sorted(copy.import_jsonl(out)) == sorted(x["id"] for x in lines)
        assert copy.get([EXPS[0].id])[0].uses == 2
    (tmp_path / "bad.jsonl").write_text('{"when_to_use": "", "content": "x"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        pool.import_jsonl(tmp_path / "bad.jsonl")


def test_milvus_search_path_matches_mirror(tmp_path, embedder):
    """The in-process mirror and Milvus's own search give the same hits."""
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((200, embedder.dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    recs = [Experience(f"case {i}", f"advice {i}", env_id=("a" if i % 3 else "b")) for i in range(200)]
    queries = vecs[:5] + 0.1 * rng.standard_normal((5, embedder.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    results = {}
    for mode in ("memory", "milvus"):
        with ExperiencePool(uri=str(tmp_path / f"{mode}.db"), embedder=embedder, search_mode=mode) as p:
            p.add(recs, vectors=vecs, merge=False)
            got = p.search_vectors(queries, top_k=4, threshold=-1.0, env_id="a")
            results[mode] = [[(h.experience.id, round(h.score, 4)) for h in hs] for hs in got]
            assert p.stats()["search"] == mode
    assert results["memory"] == results["milvus"]


def _run(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=os.getcwd())


def test_persistence_across_processes(tmp_path, embedder):
    uri = str(tmp_path / "shared.db")
    with ExperiencePool(uri=uri, embedder=embedder) as p:
        p.add(EXPS)
        vec = embedder.encode(["size 9 sneakers for jogging"])[0].tolist()
    # Another process (no embedder needed: it searches with our query vector) sees every row and
    # can search at once, although the reopened collection starts released.
    res = _run(f"""
        import json, numpy as np
        from wrappers.navigation import ExperiencePool
        with ExperiencePool(uri={uri!r}, dim={embedder.dim}, search_mode="milvus") as p:
            hits = p.search_vectors(np.array([{vec}], dtype=np.float32), top_k=3, threshold=-1)[0]
            print(json.dumps([len(p), [h.experience.id for h in hits]]))
    """)
    assert res.returncode == 0, res.stderr[-2000:]
    n, ids = json.loads(res.stdout.strip().splitlines()[-1])
    assert n == 3 and ids[0] == EXPS[0].id


def test_second_process_gets_a_clear_error_while_pool_is_open(tmp_path, embedder):
    uri = str(tmp_path / "locked.db")
    with ExperiencePool(uri=uri, embedder=embedder):
        res = _run(f"""
            from wrappers.navigation import ExperiencePool
            ExperiencePool(uri={uri!r}, dim={embedder.dim})
        """)
    assert res.returncode != 0 and "cannot open the experience pool" in res.stderr
    assert "another process holds it" in res.stderr  # the cause, named
    assert "Failed to start MilvusLite server" not in res.stderr  # milvus-lite's own traceback stays quiet


def test_an_idle_lite_pool_logs_no_grpc_error(tmp_path):
    # pymilvus pings every 10 s, also between calls; after a write, the lite server answers the third idle
    # ping with a GOAWAY that gRPC logs to stderr as an error line ("too_many_pings") in a training log.
    uri = str(tmp_path / "idle.db")
    res = _run(f"""
        import time, numpy as np
        from wrappers.navigation import Experience, ExperiencePool
        with ExperiencePool(uri={uri!r}, dim=4, search_mode="milvus") as p:
            p.add([Experience("a", "b", env_id="e", source_task_id="t")], vectors=np.ones((1, 4), np.float32),
                  merge=False)
            time.sleep(40)
            print(len(p.search_vectors(np.ones((1, 4), dtype=np.float32), top_k=1)))
    """, timeout=150)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["1"]
    assert "too_many_pings" not in res.stderr and "GOAWAY" not in res.stderr


def test_kill_during_inserts_loses_nothing_acknowledged(tmp_path, embedder):
    uri = str(tmp_path / "killed.db")
    child = f"""
        import sys, numpy as np
        from wrappers.navigation import Experience, ExperiencePool
        p = ExperiencePool(uri={uri!r}, dim={embedder.dim})
        rng = np.random.default_rng(0)
        for b in range(100000):
            recs = [Experience(f"case {{b}}-{{i}}", "advice", env_id="e") for i in range(20)]
            v = rng.standard_normal((20, {embedder.dim})).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            p.add(recs, vectors=v, merge=False)
            print("ACK", b, flush=True)
    """
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(child)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=os.getcwd())
    acked = -1
    deadline = time.monotonic() + 60
    while acked < 15 and time.monotonic() < deadline:  # kill while batches are streaming in
        line = proc.stdout.readline()
        if line.startswith("ACK"):
            acked = int(line.split()[1])
    os.kill(proc.pid, signal.SIGKILL)
    rest = proc.communicate()[0]
    acked = max([acked] + [int(x.split()[1]) for x in rest.splitlines() if x.startswith("ACK")])
    assert acked >= 15 and proc.returncode == -signal.SIGKILL
    with ExperiencePool(uri=uri, embedder=embedder) as p:  # reopens cleanly: lock gone, log replayed
        ids = {e.id for e in p.all()}
        want = {Experience(f"case {b}-{i}", "advice", env_id="e").id for b in range(acked + 1) for i in range(20)}
        assert want <= ids
        assert len(ids) % 20 == 0  # a batch is all-or-nothing
        assert p.search_vectors(embedder.encode(["case 3-4"]), top_k=1, threshold=-1)[0]
        p.add([Experience("after the crash", "still writable", env_id="e")])
