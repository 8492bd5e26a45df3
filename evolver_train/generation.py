"""Generation backends of multi-turn rollouts: one call per turn, collective where the engine is.

* ``generate_turn`` - what :func:`evolver_train.rollout.play_episodes` calls once per turn. For a
  local sampler it generates the active episodes' actions; for a *collective* backend (vLLM server
  mode, vLLM colocate with tensor parallelism) every rank calls the engine every turn with the same
  number of prompts (padded with a dummy prompt), keeps its own results by index, and all ranks
  stop on the same turn.
* ``rollout_scope`` - the span of one rollout or evaluation: a backend syncs stale weights and
  wakes a sleeping engine once at its start and puts it back to sleep once at its end.
* ``VLLMGenerate`` - TRL's ``VLLMGeneration`` as such a backend: the temperature and seed it is
  given are the ones sampled with (one seed per row and turn), and weights are synced whenever the
  policy changed since the engine last received them.

A collective backend is any callable ``generate(contexts, caps) -> (ids, logprobs)`` with
``collective = True`` and optionally ``dummy_prompt`` (token ids of a padding prompt).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from evolver_gym.core import derive_seed

__all__ = ["generate_turn", "rollout_scope", "world_lengths", "VLLMGenerate"]

Result = tuple[list[list[int]], list[list[float]]]


def world_lengths(n: int, group: Any = None) -> list[int]:
    """``n`` of every rank of ``group`` (the default process group; ``[n]`` without one)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size(group) == 1:
        return [n]
    out: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(out, int(n), group=group)
    return [int(x) for x in out]


def generate_turn(generate: Callable, contexts: list[list[int]], caps: list[int],
                  rows: Sequence[int], allowed: Sequence[Any] | None = None) -> Result | None:
    """One turn of generation for the active episodes; ``None`` when the rollout should stop.

    Local backends: ``None`` when there is nothing to generate. Collective backends: ``None`` only
    when no rank has anything to generate, so every rank leaves the turn loop together; otherwise
    every rank calls ``generate`` with as many prompts as the rank with the most, the extra ones
    being ``generate.dummy_prompt`` with a cap of one token, and keeps the first ``len(contexts)``
    results (its own, in order).

    ``allowed`` (one entry per context: token sequences it may produce, or ``None``) restricts sampling;
    only a backend with ``accepts_allowed`` (:class:`~evolver_train.rollout.IncrementalSampler`) can.
    """
    if allowed is not None and not getattr(generate, "accepts_allowed", False):
        raise ValueError(f"allowed_actions_only needs a generation backend that can restrict sampling "
                         f"(the local sampler); {type(generate).__name__} cannot")
    if getattr(generate, "collective", False):
        width = max(world_lengths(len(contexts), getattr(generate, "process_group", None)))
        if width == 0:
            return None
        pad = width - len(contexts)
        dummy = list(getattr(generate, "dummy_prompt", None) or [0])
        ids, logprobs = generate(list(contexts) + [dummy] * pad, list(caps) + [1] * pad)
        return list(ids)[: len(contexts)], list(logprobs)[: len(contexts)]
    if not contexts:
        return None
    restriction = {} if allowed is None else {"allowed": list(allowed)}
    if getattr(generate, "accepts_rows", False):  # an IncrementalSampler reuses each row's cache
        return generate(contexts, caps, list(rows), **restriction)
    return generate(contexts, caps, **restriction)


@contextmanager
def rollout_scope(generate: Callable) -> Iterator[Callable]:
    """Calls ``generate.begin()`` before and ``generate.end()`` after a rollout, where it has them."""
    begin, end = getattr(generate, "begin", None), getattr(generate, "end", None)
    if begin is not None:
        begin()
    try:
        yield generate
    finally:
        if end is not None:
            end()


def _cut(ids: Sequence[int], logprobs: Sequence[float], cap: int, eos: frozenset[int]) -> tuple[list[int], list[float]]:
    """The first ``cap`` tokens, up to and including the first EOS."""
    ids, logprobs = list(ids)[:cap], list(logprobs)[:cap]
    for k, tok in enumerate(ids):
        if tok in eos:
            return ids[: k + 1], logprobs[: k + 1]
    return ids, logprobs


class VLLMGenerate:
    """Per-turn generation with the trainer's vLLM engine (TRL ``VLLMGeneration``), as a collective.

    Args:
        trainer: The GRPO trainer; reads ``vllm_generation``, ``state.global_step`` and
            ``_last_loaded_step`` (TRL's tag of the step whose weights the engine holds).
        temperature, top_p, top_k: Sampling settings of this rollout (evaluation passes its own).
        seed: Base seed of this rollout on this rank; row ``j`` of turn ``t`` samples with
            ``derive_seed(seed, t, j)`` (colocate mode; server mode samples with the server's RNG).
        eos_token_ids: Ids that end a turn.
        sampling_params_cls: vLLM's ``SamplingParams`` (imported from vLLM when omitted).

    Colocate mode calls ``llm.generate`` with one ``SamplingParams`` per row, so G rows with the same
    prompt get G different seeds; with tensor parallelism the rows of the TP group are gathered and
    every member generates them all, as TRL does. Server mode goes through TRL's client (gather on
    every rank, generate on the main process, broadcast, slice by rank): equal prompt counts on every
    rank are what make that slice right, and :func:`generate_turn` guarantees them.

    With sleep mode, the engine is woken (and its weights re-pushed) once per rollout in ``begin`` and
    put to sleep once in ``end``, not around every turn.
    """

    collective = True

    def __init__(self, trainer: Any, *, temperature: float, seed: int, eos_token_ids: Sequence[int],
                 top_p: float = 1.0, top_k: int = 0, sampling_params_cls: Any = None):
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        self.trainer, self.vg = trainer, trainer.vllm_generation
        self.temperature, self.top_p, self.top_k, self.seed = float(temperature), float(top_p), int(top_k), int(seed)
        self.eos = frozenset(int(e) for e in eos_token_ids)
        self.dummy_prompt = [min(self.eos)] if self.eos else [0]
        self.process_group = None
        self.turn = 0
        self._params_cls = sampling_params_cls
        self._sleeping_during_rollout = False

    # -- rollout scope ----------------------------------------------------------------------
    def _colocate_sleep(self) -> bool:
        return self.vg.mode == "colocate" and bool(getattr(self.vg, "enable_sleep_mode", False))

    def begin(self) -> None:
        """Sync stale weights (the policy changed since the last push) and wake a sleeping engine once."""
        t, vg = self.trainer, self.vg
        sleeping = self._colocate_sleep() and bool(getattr(vg, "_llm_weights_sleeping", False))
        if sleeping or t.state.global_step != getattr(t, "_last_loaded_step", None):
            vg.sync_weights()  # wakes the weights first when they sleep
            t._last_loaded_step = t.state.global_step
        if self._colocate_sleep():
            vg.llm.wake_up(tags=["kv_cache"])
            self._sleeping_during_rollout = True
        self.turn = 0

    def end(self) -> None:
        if self._sleeping_during_rollout:
            self.vg.llm.sleep(level=2)
            self.vg._llm_weights_sleeping = True
            self._sleeping_during_rollout = False

    # -- one turn ---------------------------------------------------------------------------
    def __call__(self, contexts: list[list[int]], caps: list[int]) -> Result:
        if len(contexts) != len(caps):
            raise ValueError(f"{len(contexts)} contexts but {len(caps)} token caps")
        turn, self.turn = self.turn, self.turn + 1
        if self.vg.mode == "colocate":
            ids, logprobs = self._colocate(contexts, caps, turn)
        else:
            ids, logprobs = self._server(contexts, caps)
        out = [_cut(i, lp, cap, self.eos) for i, lp, cap in zip(ids, logprobs, caps)]
        return [o[0] for o in out], [o[1] for o in out]

    def _colocate(self, contexts: list[list[int]], caps: list[int], turn: int) -> Result:
        rows = [(list(c), int(cap), derive_seed(self.seed, turn, j) % 2**31) for j, (c, cap) in
                enumerate(zip(contexts, caps))]
        tp = int(getattr(self.vg, "tensor_parallel_size", 1) or 1)
        mine = slice(0, len(rows))
        if tp > 1:  # every member of the TP group generates the group's rows, with the same seeds
            import torch.distributed as dist

            group = self.vg.tp_group
            gathered: list[Any] = [None] * tp
            dist.all_gather_object(gathered, rows, group=group)
            rank = dist.get_rank(group=group)
            mine = slice(rank * len(rows), (rank + 1) * len(rows))  # equal lengths: generate_turn pads
            rows = [r for part in gathered for r in part]
        params_cls = self._params_cls
        if params_cls is None:
            from vllm import SamplingParams as params_cls
        # The user's generation_kwargs win, as in TRL, except what this call owns: temperature, seed and cap.
        extra = {k: v for k, v in (getattr(self.vg, "generation_kwargs", None) or {}).items()
                 if k not in ("seed", "max_tokens", "n", "temperature")}
        base = {"temperature": self.temperature, "top_p": self.top_p, "top_k": self.top_k, "logprobs": 0,
                "stop_token_ids": sorted(self.eos), **extra}
        params = [params_cls(n=1, max_tokens=max(cap, 1), seed=seed, **base) for _, cap, seed in rows]
        outputs = self.vg.llm.generate([{"prompt_token_ids": c} for c, _, _ in rows], sampling_params=params,
                                       use_tqdm=False)
        ids, logprobs = [], []
        for output in outputs[mine]:
            sample = output.outputs[0]
            ids.append(list(sample.token_ids))
            logprobs.append([float(step[tok].logprob) for step, tok in zip(sample.logprobs, sample.token_ids)])
        return ids, logprobs

    def _server(self, contexts: list[list[int]], caps: list[int]) -> Result:
        vg = self.vg
        saved = (vg.temperature, vg.top_p, vg.top_k, vg.max_completion_length)
        vg.temperature, vg.top_p, vg.top_k = self.temperature, self.top_p, self.top_k
        # The main process generates every rank's prompts with one length limit: the largest cap of all ranks.
        vg.max_completion_length = max(world_lengths(max(caps) if caps else 1))
        try:
            _, ids, logprobs, _ = vg.generate(prompts=contexts, images=None, num_generations=1)
        finally:
            vg.temperature, vg.top_p, vg.top_k, vg.max_completion_length = saved
        return [list(x) for x in ids], [[lp[0] for lp in row] for row in logprobs]
