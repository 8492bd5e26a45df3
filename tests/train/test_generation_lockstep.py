"""Multi-process rollouts call a collective generation backend in lockstep.

Two processes (gloo) play the guessing game with different episode lengths per rank. The backend
stands in for vLLM (which needs a GPU) and enforces the contract of a collective call: every rank
calls it the same number of times with the same number of prompts, or every rank gets an error
(instead of a deadlock). Completions must come back to the row that asked for them.
"""

from __future__ import annotations

import os
import socket
from types import SimpleNamespace

import torch.distributed as dist
import torch.multiprocessing as mp

from evolver_train.generation import VLLMGenerate, rollout_scope
from evolver_train.rollout import ChatCodec, RowSpec, play_episodes

from .fixtures import GuessEnv, vocabulary_texts

TARGETS = [(2, 0), (5, 7)]  # rank 0's tasks, rank 1's tasks (hidden numbers)


def _tokenizer():
    from evolver_train.policy import build_word_tokenizer

    return build_word_tokenizer(vocabulary_texts())


def _policy(tok, context, cap, seed=0):
    """A deterministic 'model': the guess depends on the whole context, so a completion handed to the
    wrong row is seen in the result."""
    digit = (sum(context) + seed) % 10
    ids = (tok(f"guess[{digit}]", add_special_tokens=False)["input_ids"] + [tok.eos_token_id])[: max(cap, 1)]
    return ids, [-1.0] * len(ids)


class ContractViolation(RuntimeError):
    pass


def _check_same(kind, count, n):
    world = dist.get_world_size()
    seen = [None] * world
    dist.all_gather_object(seen, (kind, count, n))
    if any(s != seen[0] for s in seen):
        raise ContractViolation(f"ranks disagree on the collective call: {seen}")
    return seen


class ServerModeGenerate:
    """vLLM server mode's contract: gather every rank's prompts, generate them all, slice by rank."""

    collective = True

    def __init__(self, tok):
        self.tok, self.calls = tok, 0
        self.dummy_prompt = [tok.pad_token_id]

    def __call__(self, contexts, caps):
        self.calls += 1
        _check_same("generate", self.calls, len(contexts))
        everyone = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, (contexts, caps))
        flat = [(c, cap) for cs, ks in everyone for c, cap in zip(cs, ks)]
        out = [_policy(self.tok, c, cap) for c, cap in flat]
        mine = out[dist.get_rank() * len(contexts): (dist.get_rank() + 1) * len(contexts)]
        return [o[0] for o in mine], [o[1] for o in mine]

    def finish(self):
        _check_same("finish", self.calls, 0)


class _Params:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class TensorParallelLLM:
    """vLLM colocate with tensor parallelism: every TP rank must call generate with the same rows."""

    def __init__(self, tok):
        self.tok, self.calls = tok, 0

    def generate(self, prompts, sampling_params, use_tqdm=False):
        self.calls += 1
        signature = [(p["prompt_token_ids"], sp.seed, sp.max_tokens, sp.temperature) for p, sp in
                     zip(prompts, sampling_params)]
        seen = [None] * dist.get_world_size()
        dist.all_gather_object(seen, signature)
        if any(s != seen[0] for s in seen):
            raise ContractViolation("TP ranks generated different rows")
        outs = []
        for p, sp in zip(prompts, sampling_params):
            ids, lps = _policy(self.tok, p["prompt_token_ids"], sp.max_tokens, sp.seed)
            steps = [{t: SimpleNamespace(logprob=lp)} for t, lp in zip(ids, lps)]
            outs.append(SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, logprobs=steps)]))
        return outs


def _rows(rank):
    tasks = GuessEnv().tasks()
    return [RowSpec(task=tasks[t].to_dict(), seed=3, group=j) for j, t in enumerate(TARGETS[rank])]


def _play(generate, rows, tok):
    return play_episodes([GuessEnv(max_steps=6) for _ in rows], rows, generate, ChatCodec(tok),
                         max_turns=6, max_episode_tokens=400, max_turn_tokens=8)


def _worker(rank, world, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        tok = _tokenizer()
        server = ServerModeGenerate(tok)
        try:
            episodes = _play(server, _rows(rank), tok)
            server.finish()
            out.put(("server", rank, [(ep.tokens.completion_ids, [s.action for s in ep.steps]) for ep in episodes]))
        except ContractViolation as exc:
            out.put(("server", rank, f"violation: {exc}"))
        engine = SimpleNamespace(mode="colocate", tensor_parallel_size=world, tp_group=None,
                                 llm=TensorParallelLLM(tok), generation_kwargs={}, enable_sleep_mode=False,
                                 sync_weights=lambda: None)
        trainer = SimpleNamespace(vllm_generation=engine, state=SimpleNamespace(global_step=0), _last_loaded_step=0)
        tp = VLLMGenerate(trainer, temperature=0.7, seed=100 + rank, eos_token_ids=[tok.eos_token_id],
                          sampling_params_cls=_Params)
        try:
            with rollout_scope(tp) as generate:
                episodes = _play(generate, _rows(rank), tok)
            _check_same("finish", engine.llm.calls, 0)
            out.put(("tp", rank, [(ep.tokens.completion_ids, [s.action for s in ep.steps]) for ep in episodes]))
        except ContractViolation as exc:
            out.put(("tp", rank, f"violation: {exc}"))
    finally:
        dist.destroy_process_group()


def _reference(rank, seed=None):
    """The same rows played in one process with the same policy called directly."""
    from evolver_gym.core import derive_seed

    tok = _tokenizer()
    turn = {"t": 0}

    def generate(contexts, caps):
        if seed is None:
            outs = [_policy(tok, c, cap) for c, cap in zip(contexts, caps)]
        else:  # VLLMGenerate's per-row seeds: derive_seed(seed, turn, row), padded rows included
            outs = [_policy(tok, c, cap, derive_seed(seed, turn["t"], j) % 2**31) for j, (c, cap) in
                    enumerate(zip(contexts, caps))]
        turn["t"] += 1
        return [o[0] for o in outs], [o[1] for o in outs]

    return [(ep.tokens.completion_ids, [s.action for s in ep.steps]) for ep in _play(generate, _rows(rank), tok)]


def test_collective_generation_runs_in_lockstep_and_maps_results_back():
    refs = {r: _reference(r) for r in (0, 1)}
    turns = {r: max(len(actions) for _, actions in refs[r]) for r in (0, 1)}
    assert turns[0] != turns[1]  # the ranks' episodes end on different turns: the case that deadlocked
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, 2, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    results = {}
    for _ in range(4):
        kind, rank, value = queue.get(timeout=300)  # spawn + imports: slow on a loaded machine
        results[(kind, rank)] = value
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    for rank in (0, 1):
        assert results[("server", rank)] == refs[rank], results[("server", rank)]
    # TP colocate: each rank keeps its own rows; with the per-row seeds a rank's rows play as they would
    # alone, except that padded turns do not exist alone, which the seeds (per row index) make irrelevant.
    for rank in (0, 1):
        assert results[("tp", rank)] == _reference(rank, seed=100 + rank), results[("tp", rank)]
