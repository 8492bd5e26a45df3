"""Multi-turn rollouts over a grouped environment pool, with token-exact trajectories.

* ``ChatCodec`` - renders the first observation as a prompt and each later observation as a
  chat-template delta appended after the model's EOS; never re-tokenises what the model sampled.
* ``sample_tokens`` - batched ancestral sampling with a KV cache, returning the sampling log-probs.
* ``IncrementalSampler`` - the same sampling, keeping each episode's KV cache across turns.
* ``RowSpec`` - one rollout to play: its task, reset seed, group and whether it gets experience.
* ``PromptEdit`` - a mechanism's edit of the training prompt (navigation: strip the experience span).
* ``Episode`` - one played episode: the ``TokenRecord``, steps, outcome, reset and final ``info``.
* ``EnvPool`` - environment instances made on demand by a factory and reused across batches.
* ``play_episodes`` - play many episodes at once; each turn, one generation call over every active
  episode, then every environment steps.

The token record of an episode is ``prompt_ids`` (system + first observation + assistant header),
then for each turn the sampled ids (``env_mask`` 1, ``step_id`` = turn, sampling log-prob) ending
with EOS, then the observation delta (``env_mask`` 0, ``step_id`` -1). A turn cut by the per-turn cap
gets an EOS appended as an environment token, so every completion ends with EOS.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from evolver_gym.core import Step, Task, TokenRecord, Trajectory

from .generation import generate_turn

__all__ = ["ChatCodec", "sample_tokens", "IncrementalSampler", "RowSpec", "PromptEdit", "Episode", "EnvPool",
           "play_episodes", "close_episode", "allowed_actions_in", "allowed_next_tokens", "restriction_record",
           "GenerateFn"]

# generate(contexts, max_new_tokens) -> (sampled ids per row, sampling log-probs per row)
GenerateFn = Callable[[list[list[int]], list[int]], tuple[list[list[int]], list[list[float]]]]

_SENTINEL_USER = "\x01u"
_SENTINEL_ASSISTANT = "\x01a"


class ChatCodec:
    """Token ids of prompts and observation deltas under a tokenizer's chat template.

    Args:
        tokenizer: A Hugging Face tokenizer with a chat template and an EOS token.
        system_prompt: Optional system message before the first observation.
        max_observation_tokens: Observations longer than this keep their head and tail.
        eos_token_ids: Every id that ends a sampled turn (the model's ``generation_config.eos_token_id``);
            the tokenizer's EOS is always one of them.
    """

    def __init__(self, tokenizer: Any, *, system_prompt: str | None = None, max_observation_tokens: int = 512,
                 eos_token_ids: Sequence[int] = ()):
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("the tokenizer has no chat_template; set one (evolver_train.policy.CHAT_TEMPLATE)")
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token; completions must end with EOS")
        self.tokenizer = tokenizer
        self.system_prompt = system_prompt
        self.max_observation_tokens = int(max_observation_tokens)
        self.eos_token_id = int(tokenizer.eos_token_id)
        self.eos_token_ids = frozenset([self.eos_token_id, *(int(e) for e in eos_token_ids)])
        self._before, self._after = self._delta_frame()

    def _render(self, messages: list[dict[str, str]], generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)

    def _head(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []

    def _delta_frame(self) -> tuple[str, str]:
        """The template text around an observation that follows an assistant turn.

        Rendered once with sentinels: conversation A ends with an assistant turn, B adds a user turn
        and the generation prompt. The delta starts right after the EOS that closed the assistant
        turn (the model sampled that EOS; what the template writes after it is environment text).
        """
        base = self._head() + [{"role": "user", "content": _SENTINEL_USER},
                               {"role": "assistant", "content": _SENTINEL_ASSISTANT}]
        a = self._render(base, False)
        b = self._render(base + [{"role": "user", "content": _SENTINEL_USER + "2"}], True)
        if not b.startswith(a):
            raise ValueError("the chat template does not extend a conversation by appending text; "
                             "multi-turn rollouts need a prefix-preserving template")
        eos = self.tokenizer.eos_token
        end_of_action = a.find(eos, a.rfind(_SENTINEL_ASSISTANT))
        if end_of_action < 0:
            raise ValueError(f"the chat template does not close an assistant turn with the EOS token {eos!r}")
        tail = a[end_of_action + len(eos):] + b[len(a):]
        before, _, after = tail.partition(_SENTINEL_USER + "2")
        return before, after

    def clip_observation(self, text: str) -> str:
        """``text`` with its middle cut out when it is longer than ``max_observation_tokens``."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) <= self.max_observation_tokens:
            return text
        head = self.max_observation_tokens * 2 // 3
        tail = self.max_observation_tokens - head - 1
        return (self.tokenizer.decode(ids[:head]) + " ... "
                + (self.tokenizer.decode(ids[-tail:]) if tail > 0 else ""))

    def prompt_ids(self, observation: str) -> list[int]:
        """System message, the first observation as the user turn, and the assistant header."""
        messages = self._head() + [{"role": "user", "content": self.clip_observation(observation)}]
        text = self._render(messages, True)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def observation_ids(self, observation: str) -> list[int]:
        """The ids to append after the model's EOS: the observation as a user turn + assistant header."""
        text = self._before + self.clip_observation(observation) + self._after
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def action_ids(self, action: str) -> list[int]:
        """The ids of ``action`` as a turn (the action's tokens, then EOS), as demonstrations encode it."""
        return list(self.tokenizer(action, add_special_tokens=False)["input_ids"]) + [self.eos_token_id]

    def decode_action(self, ids: Sequence[int]) -> str:
        """The action text of a turn's sampled ids (EOS and special tokens dropped)."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=True).strip()


def _cache_keyword(model: Any) -> str:
    """``cache`` for transformers >= 5.2x models, ``past_key_values`` for older model code."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _pick(logits: torch.Tensor, temperature: float, top_k: int, top_p: float,
          generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(sampled token, its log-prob under ``log_softmax(logits / temperature)``) per row."""
    logits = logits.float()
    logp = torch.log_softmax(logits / max(temperature, 1e-6), dim=-1)
    if temperature <= 0:
        token = logits.argmax(-1)
    else:
        scores = logp  # log_softmax(logits / T): the same distribution as logits / T
        if top_k and top_k > 0:
            kth = torch.topk(scores, min(top_k, scores.size(-1))).values[:, -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if top_p < 1.0:
            sorted_scores, order = torch.sort(scores, descending=True)
            probs = torch.softmax(sorted_scores, -1)
            drop = probs.cumsum(-1) - probs > top_p
            scores = scores.scatter(1, order, sorted_scores.masked_fill(drop, float("-inf")))
        # Exponential race (Gumbel-max): argmax(p / E), E ~ Exp(1), samples from p; much cheaper on CPU
        # than torch.multinomial and as reproducible under a seeded generator.
        race = torch.empty_like(scores).exponential_(generator=generator)
        token = (scores - race.log()).argmax(-1)
    return token, logp.gather(1, token.unsqueeze(1)).squeeze(1)


class IncrementalSampler:
    """A ``generate`` function that keeps every row's KV cache from one turn to the next.

    Called as ``sampler(contexts, caps, rows)`` by :func:`play_episodes`: ``rows[j]`` names the
    episode of ``contexts[j]``. A row's context only ever grows (its sampled ids, then the next
    observation delta), so each turn feeds just the tokens the cache has not seen - the last sampled
    token and the observation - instead of re-reading the whole conversation. The batch keeps one
    cache row per episode; finished episodes stay in it as masked columns, and positions come from
    each row's own token count so the holes shift nothing. Sampling log-probs are those of
    :func:`sample_tokens` (``log_softmax(logits / temperature)``).

    Any call that does not extend the previous one (a new row, a context that is not longer than
    what was fed) starts a fresh cache, so the sampler is always correct, only faster when reused.
    """

    accepts_rows = True
    accepts_allowed = True  # restricts rows to given token sequences (allowed_actions_only)

    def __init__(self, model: Any, *, eos_token_ids: Sequence[int], pad_token_id: int, temperature: float = 1.0,
                 top_k: int = 0, top_p: float = 1.0, generator: torch.Generator | None = None):
        self.model, self.pad = model, int(pad_token_id)
        self.eos_list = [int(e) for e in eos_token_ids]
        self.temperature, self.top_k, self.top_p, self.generator = temperature, top_k, top_p, generator
        self.cache_kw = _cache_keyword(model)
        self.device = next(model.parameters()).device
        self.reset()

    def reset(self) -> None:
        self.cache: Any = None
        self.mask: torch.Tensor | None = None
        self.slot: dict[int, int] = {}
        self.fed: list[int] = []

    def _compact(self) -> None:
        """Drop the masked columns (pads, finished rows' steps) from the cache between turns.

        Each row's real columns are gathered, in order, into a right-aligned dense block as wide as the
        longest row; attention and the per-token cache append then cost the real context, not the
        holes that batching different-length observations leaves.
        """
        if self.cache is None or self.mask is None:
            return
        keep = self.mask.bool()
        counts = keep.sum(1)
        width = int(counts.max().item())
        if width == self.mask.size(1):
            return
        n = self.mask.size(0)
        index = torch.zeros((n, width), dtype=torch.long, device=self.mask.device)
        mask = torch.zeros((n, width), dtype=self.mask.dtype, device=self.mask.device)
        for s in range(n):
            cols = torch.nonzero(keep[s]).flatten()
            index[s, width - cols.numel():] = cols
            mask[s, width - cols.numel():] = 1
        layers = getattr(self.cache, "layers", None)
        if layers is None or not all(hasattr(layer, "keys") and hasattr(layer, "values") for layer in layers):
            return  # a cache type we do not know how to re-pack: keep it as it is
        for layer in layers:
            if layer.keys is None or layer.keys.dim() != 4:
                return
        for layer in layers:
            gather = index[:, None, :, None].expand(-1, layer.keys.size(1), -1, layer.keys.size(3))
            layer.keys = torch.gather(layer.keys, 2, gather)
            layer.values = torch.gather(layer.values, 2, gather)
        self.mask = mask

    def _forward(self, ids: torch.Tensor, new_mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        self.mask = new_mask if self.mask is None else torch.cat([self.mask, new_mask], dim=1)
        out = self.model(input_ids=ids, attention_mask=self.mask, position_ids=positions, use_cache=True,
                         logits_to_keep=1, **{self.cache_kw: self.cache})
        self.cache = out.cache if self.cache_kw == "cache" else out.past_key_values
        return out.logits[:, -1, :]

    @torch.inference_mode()
    def __call__(self, contexts: list[list[int]], max_new_tokens: Sequence[int],
                 rows: Sequence[int] | None = None,
                 allowed: Sequence[Sequence[Sequence[int]] | None] | None = None,
                 ) -> tuple[list[list[int]], list[list[float]]]:
        """Sample each context's continuation; ``allowed[j]``, when given and not ``None``, lists the
        token sequences (each ending with an EOS) that row ``j`` may produce, and sampling is restricted
        to them token by token (:func:`allowed_next_tokens`). A restricted token's log-prob is that of the
        distribution it was drawn from: ``log_softmax(logits / temperature)`` renormalised over the
        allowed tokens (what the trainer recomputes from ``Episode.restricted``); ``top_k``/``top_p``
        filtering, by contrast, is not part of the reported log-prob."""
        if len(contexts) != len(max_new_tokens):
            raise ValueError(f"{len(contexts)} contexts but {len(max_new_tokens)} token caps")
        if allowed is not None and len(allowed) != len(contexts):
            raise ValueError(f"{len(contexts)} contexts but {len(allowed)} allowed-sequence lists")
        if not contexts:
            return [], []
        rows = list(range(len(contexts))) if rows is None else [int(r) for r in rows]
        if any(r not in self.slot or len(c) <= self.fed[self.slot[r]] for r, c in zip(rows, contexts)):
            self.reset()
            self.slot = {r: k for k, r in enumerate(rows)}
            self.fed = [0] * len(rows)
        n, device = len(self.fed), self.device
        slots = [self.slot[r] for r in rows]
        self._compact()
        new = [c[self.fed[s]:] for s, c in zip(slots, contexts)]
        width = max(len(x) for x in new)
        ids = torch.full((n, width), self.pad, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        positions = torch.zeros((n, width), dtype=torch.long)
        for s, x in zip(slots, new):
            ids[s, width - len(x):] = torch.tensor(x, dtype=torch.long)
            mask[s, width - len(x):] = 1
            positions[s, width - len(x):] = torch.arange(self.fed[s], self.fed[s] + len(x))
            self.fed[s] += len(x)
        next_pos = torch.tensor(self.fed, dtype=torch.long, device=device)
        caps = torch.zeros(n, dtype=torch.long, device=device)
        caps[torch.tensor(slots, device=device)] = torch.tensor(list(max_new_tokens), dtype=torch.long, device=device)
        done = caps <= 0
        eos = torch.tensor(self.eos_list, device=device)
        out_ids: list[list[int]] = [[] for _ in range(n)]
        out_lp: list[list[float]] = [[] for _ in range(n)]
        restricted = {} if allowed is None else {s: a for s, a in zip(slots, allowed) if a is not None}
        logits = self._forward(ids.to(device), mask.to(device), positions.to(device))
        for t in range(int(caps.max().item())):
            if restricted:  # sample among the allowed tokens: the log-prob is the restricted distribution's
                logits = _restrict(logits, restricted, out_ids)
            token, token_lp = _pick(logits, self.temperature, self.top_k, self.top_p, self.generator)
            token = torch.where(done, torch.full_like(token, self.pad), token)
            live = (~done).tolist()
            tok_list, lp_list = token.tolist(), token_lp.tolist()
            for s in range(n):
                if live[s]:
                    out_ids[s].append(tok_list[s])
                    out_lp[s].append(lp_list[s])
            done = done | torch.isin(token, eos) | (t + 1 >= caps)
            if bool(done.all()):
                break
            # Feed the tokens of rows still sampling; finished rows get a masked pad column.
            feed = ~done
            logits = self._forward(token.unsqueeze(1), feed.long().unsqueeze(1), next_pos.unsqueeze(1))
            next_pos = next_pos + feed.long()
            for s in torch.nonzero(feed).flatten().tolist():
                self.fed[s] += 1
        return [out_ids[s] for s in slots], [out_lp[s] for s in slots]


def allowed_next_tokens(sequences: Sequence[Sequence[int]], prefix: Sequence[int]) -> set[int]:
    """The tokens that continue ``prefix`` along one of ``sequences`` (empty once none does)."""
    n = len(prefix)
    return {int(seq[n]) for seq in sequences if len(seq) > n and list(seq[:n]) == list(prefix)}


def _restrict(logits: torch.Tensor, restricted: dict[int, Sequence[Sequence[int]]],
              out_ids: list[list[int]]) -> torch.Tensor:
    """``logits`` (as float) with every token a restricted row may not sample next set to ``-inf``.

    A row whose prefix left every sequence (it cannot: only allowed tokens are sampled) keeps its logits.
    """
    mask = torch.zeros_like(logits, dtype=torch.bool)
    for s, sequences in restricted.items():
        tokens = allowed_next_tokens(sequences, out_ids[s])
        if tokens:
            mask[s] = True
            mask[s, list(tokens)] = False
    return logits.float().masked_fill(mask, float("-inf"))


def restriction_record(sequences: Sequence[Sequence[int]], ids: Sequence[int], offset: int) -> dict[int, list[int]]:
    """``{offset + t: allowed tokens}`` for each position ``t`` of ``ids`` sampled under ``sequences``.

    The same sets :class:`IncrementalSampler` restricted to (its prefix is the turn's own ids so far);
    positions where no sequence continues the prefix were sampled freely and are left out.
    """
    record = {}
    for t in range(len(ids)):
        tokens = allowed_next_tokens(sequences, ids[:t])
        if tokens:
            record[offset + t] = sorted(tokens)
    return record


def sample_tokens(model: Any, contexts: list[list[int]], max_new_tokens: Sequence[int], *, eos_token_ids: Sequence[int],
                  pad_token_id: int, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                  generator: torch.Generator | None = None) -> tuple[list[list[int]], list[list[float]]]:
    """Sample a continuation of every context until EOS or its own token cap.

    Contexts are left-padded into one batch; positions come from the attention mask so padding
    does not shift them. The returned log-probs are ``log_softmax(logits / temperature)`` of the
    sampled tokens (what the trainer recomputes), whatever ``top_k``/``top_p`` filtering sampled.
    Stateless: for multi-turn rollouts :class:`IncrementalSampler` reuses the cache across turns.
    """
    sampler = IncrementalSampler(model, eos_token_ids=eos_token_ids, pad_token_id=pad_token_id,
                                 temperature=temperature, top_k=top_k, top_p=top_p, generator=generator)
    return sampler(contexts, max_new_tokens)


@dataclass
class RowSpec:
    """One rollout to play.

    Args:
        task: The task (a ``Task`` or its dict) passed as ``options["task"]``.
        seed: Reset seed; the rows of one group share it, so they start from the same state.
        group: GRPO group index of the row.
        experience: Shorthand for ``options["experience"]`` (the navigation wrapper's switch); ``None`` = not set.
        options: More ``reset`` options (what the mechanisms' ``reset_options`` hooks asked for).
    """

    task: Task | dict[str, Any]
    seed: int
    group: int = 0
    experience: bool | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def reset_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"task": self.task, **self.options}
        if self.experience is not None:
            options["experience"] = bool(self.experience)
        return options


@dataclass
class PromptEdit:
    """A mechanism's injection, undone: ``edit(first observation, reset info)`` returns the observation
    without it (``None``: unchanged). Episodes are recorded with the plain observation; with ``train``
    the row is also trained on it, with ``clip_high`` as its upper ratio clip, and with ``behaviour_ratio``
    against the log-probs it was sampled with (``TrainingHooks.behaviour_ratio``)."""

    edit: Callable[[str, dict[str, Any]], str | None]
    train: bool = False
    clip_high: float | None = None
    behaviour_ratio: bool = False


@dataclass
class Episode:
    """One played episode and everything the trainer reads from it.

    ``reset_info`` and ``final_info`` carry every mechanism's payload (read them with the payload
    classes' ``from_info``); ``labels`` are the step rewards a mechanism read from ``final_info``;
    ``clip_high`` is set when a mechanism trained this row on an edited prompt, and ``trained_edit``
    is then the index of that mechanism's edit in ``prompt_edits``. ``ended_by`` says what ended it:
    ``"env"`` (the environment terminated or truncated it), ``"turn_cap"`` (``max_turns``) or
    ``"token_budget"`` (``max_episode_tokens``); the environment never saw the last two end.
    ``edited`` is set when a mechanism's injection was in the first observation the policy acted on
    (whether or not the row is trained without it). ``restricted`` maps a completion position sampled
    under ``allowed_actions`` to the tokens it was restricted to: the trainer renormalises the policy
    over them there, so the loss is the acting policy's. ``seat_slot`` is set for a learning seat of a
    multi-seat game (its position among the game's learning seats, ``evolver_train.seat_rollout``):
    advantages are then normalised per seat slot within the GRPO group.
    """

    spec: RowSpec
    tokens: TokenRecord
    train_prompt_ids: list[int]
    steps: list[Step] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)
    labels: list[float] | None = None
    outcome: float = 0.0
    success: bool = False
    score: float = 0.0
    env_return: float = 0.0
    invalid_actions: int = 0
    terminated: bool = False
    truncated: bool = False
    ended_by: str = "env"
    final_observation: str = ""
    stripped: bool = False
    edited: bool = False
    clip_high: float | None = None
    trained_edit: int | None = None
    reset_info: dict[str, Any] = field(default_factory=dict)
    final_info: dict[str, Any] = field(default_factory=dict)
    restricted: dict[int, list[int]] = field(default_factory=dict)
    seat_slot: int | None = None

    def trajectory(self) -> Trajectory:
        """The episode as a ``Trajectory`` record (for experience summarisation and logs)."""
        task = Task.from_dict(self.spec.task) if not isinstance(self.spec.task, Task) else self.spec.task
        return Trajectory(task=task, steps=list(self.steps), success=self.success, score=self.score,
                          terminated=self.terminated, truncated=self.truncated, tokens=self.tokens,
                          metadata={"reset_info": self.reset_info, "ended_by": self.ended_by,
                                    "final_observation": self.final_observation})


class EnvPool:
    """Environment instances made by ``factory`` on demand and reused across batches."""

    def __init__(self, factory: Callable[[], Any]):
        self.factory = factory
        self.envs: list[Any] = []

    def take(self, n: int) -> list[Any]:
        while len(self.envs) < n:
            self.envs.append(self.factory())
        return self.envs[:n]

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs.clear()


def _anchor(observation: str) -> str:
    return hashlib.blake2b(observation.encode("utf-8", "replace"), digest_size=12).hexdigest()


def _outcome(info: dict[str, Any], rewards: list[float], key: str) -> float:
    if key == "return":
        return float(sum(rewards))
    if key == "success":
        return float(bool(info.get("success", False)))
    return float(info.get("score", 0.0))


def _reset_all(envs: Any, calls: list[tuple[int, dict[str, Any]]]) -> list[tuple[Any, dict[str, Any]]]:
    # A batch of remote environments (evolver_train.env_workers) resets them all in one round trip.
    if hasattr(envs, "reset_many"):
        return envs.reset_many(calls)
    return [envs[i].reset(**kwargs) for i, kwargs in calls]


def _step_all(envs: Any, calls: list[tuple[int, str]]) -> list[tuple[Any, ...]]:
    if hasattr(envs, "step_many"):
        return envs.step_many(calls)
    return [envs[i].step(action) for i, action in calls]


def allowed_actions_in(info: dict[str, Any]) -> list[str] | None:
    """The actions the environment accepts next, from ``info["allowed_actions"]`` (every environment's
    contract, docs/DESIGN.md): the complete action strings it lists, or ``None`` (any text) where it lists
    none: the key absent or ``None`` (free text: a search box, code, function calls) or an empty list (an
    episode or seat with no turn left, nothing to restrict).

    Raises ``TypeError`` when the environment wrote something other than a list of strings there.

    Example:
        >>> allowed_actions_in({"allowed_actions": ["VOTE: approve", "VOTE: reject"]})
        ['VOTE: approve', 'VOTE: reject']
        >>> allowed_actions_in({"allowed_actions": None}) is None, allowed_actions_in({}) is None
        (True, True)
    """
    actions = info.get("allowed_actions") if isinstance(info, dict) else None
    if actions is None:
        return None
    if not isinstance(actions, (list, tuple)) or not all(isinstance(a, str) for a in actions):
        raise TypeError(f"info['allowed_actions'] must be a list of action strings or None, got {actions!r:.200}")
    return list(actions) or None


def _listed_action_ids(codec: ChatCodec, action: str) -> list[int]:
    """The ids sampling is restricted to for a listed action; refused when the tokenizer cannot spell it
    (an unknown word would be sampled as ``<unk>`` and decoded as another action)."""
    ids = codec.action_ids(action)
    unk = getattr(codec.tokenizer, "unk_token_id", None)
    if unk is not None and unk in ids:
        raise ValueError(f"the environment allows {action!r}, which the tokenizer cannot spell (<unk>); build "
                         "the tokenizer with the environment's action texts (build_policy's extra_texts)")
    return ids


def play_episodes(envs: Sequence[Any], rows: Sequence[RowSpec], generate: GenerateFn, codec: ChatCodec, *,
                  max_turns: int, max_episode_tokens: int, max_turn_tokens: int,
                  allowed_actions: Callable[[dict[str, Any]], Sequence[str] | None] | None = None,
                  prompt_edits: Sequence[PromptEdit] = (),
                  step_rewards: Callable[[dict[str, Any]], list[float] | None] | None = None,
                  finish_cut: Callable[[Trajectory], dict[str, Any]] | None = None,
                  outcome_key: str = "score", invalid_action_penalty: float = 0.0,
                  mask_truncated: bool = False) -> list[Episode]:
    """Play one episode per row, ``envs[i]`` for ``rows[i]``, generating turn by turn in one batch.

    Args:
        generate: ``generate(contexts, caps) -> (ids, logprobs)`` for a batch of token contexts, called
            through :func:`evolver_train.generation.generate_turn` (collective backends: every turn, on
            every rank, in lockstep).
        allowed_actions: ``info -> actions`` the next turn may produce (``None``: any), read from the
            info the last observation came with; sampling is restricted to them token by token
            (``allowed_actions_in``: the environment's ``info["allowed_actions"]``). Needs a sampler with
            ``accepts_allowed``.
        prompt_edits: Mechanisms' injections undone (navigation: the experience span); steps and
            anchors record the plain observation, and an edit with ``train`` makes it the training
            prompt (the sampling context keeps the observation as it was).
        step_rewards: ``final info -> rewards per step`` (a mechanism's step labels) or ``None``.
        finish_cut: ``trajectory -> info entries`` for an episode cut by the turn cap or the token
            budget, merged into its final info before ``step_rewards`` reads it (the environment never
            ended it, so no layer wrote what it writes at the end of an episode).
        mask_truncated: Zero the env mask of episodes cut by the turn cap or the token budget.

    A multi-seat environment (several seats played by the policy in one game) is played by
    :func:`evolver_train.seat_rollout.play_seat_episodes`, one row per learning seat and game.
    """
    from .seat_rollout import is_multi_seat, play_seat_episodes

    # Environments in Ray actors (reset_many/step_many) are not reachable one by one; they play single-seat.
    if envs and not hasattr(envs, "step_many") and is_multi_seat(envs[0]):
        if prompt_edits:
            raise ValueError("a multi-seat environment takes no prompt edits (experience injection)")
        return play_seat_episodes(envs, rows, generate, codec, max_turns=max_turns,
                                  max_episode_tokens=max_episode_tokens, max_turn_tokens=max_turn_tokens,
                                  allowed_actions=allowed_actions, step_rewards=step_rewards, finish_episode=finish_cut,
                                  outcome_key=outcome_key, invalid_action_penalty=invalid_action_penalty,
                                  mask_truncated=mask_truncated)
    if len(envs) < len(rows):
        raise ValueError(f"{len(rows)} rows need as many environments, got {len(envs)}")
    episodes: list[Episode] = []
    contexts: list[list[int]] = []
    observations: list[str] = []
    rewards: list[list[float]] = []
    resets = [(i, {"seed": int(row.seed), "options": row.reset_options()}) for i, row in enumerate(rows)]
    for row, (obs, info) in zip(rows, _reset_all(envs, resets)):
        obs = str(obs)
        plain_obs, train_obs, clip_high, trained_edit = obs, obs, None, None
        for e, edit in enumerate(prompt_edits):
            edited = edit.edit(plain_obs, info)
            if edited is not None and edited != plain_obs:
                plain_obs = edited
                if edit.train:
                    train_obs, clip_high, trained_edit = edited, edit.clip_high, e
        sampling_prompt = codec.prompt_ids(obs)
        stripped = train_obs != obs
        ep = Episode(spec=row, tokens=TokenRecord(prompt_ids=sampling_prompt),
                     train_prompt_ids=codec.prompt_ids(train_obs) if stripped else sampling_prompt,
                     stripped=stripped, edited=plain_obs != obs, clip_high=clip_high if stripped else None,
                     trained_edit=trained_edit if stripped else None, reset_info=info, final_info=info)
        if isinstance(info.get("task"), dict):
            ep.spec = RowSpec(task=info["task"], seed=row.seed, group=row.group, experience=row.experience,
                              options=dict(row.options))
        episodes.append(ep)
        contexts.append(list(sampling_prompt))
        observations.append(plain_obs)
        rewards.append([])

    active = list(range(len(rows)))
    for turn in range(max_turns):
        caps: list[int] = []
        runnable: list[int] = []
        for i in active:
            room = max_episode_tokens - len(episodes[i].tokens.completion_ids) - 1  # keep room for an EOS
            if room < 1:
                episodes[i].truncated, episodes[i].ended_by = True, "token_budget"
                continue
            runnable.append(i)
            caps.append(min(max_turn_tokens, room))
        active = runnable
        allowed = None
        if allowed_actions is not None:
            allowed = []
            for i in active:
                actions = allowed_actions(episodes[i].final_info)  # the info of the last observation
                allowed.append(None if actions is None else [_listed_action_ids(codec, a) for a in actions])
        result = generate_turn(generate, [contexts[i] for i in active], caps, active, allowed)
        if result is None:  # nothing left to generate (on any rank, for a collective backend)
            break
        sampled, logprobs = result
        still_active: list[int] = []
        actions: list[tuple[int, str]] = []
        for j, (i, ids, lps) in enumerate(zip(active, sampled, logprobs)):
            ep = episodes[i]
            ids, lps = list(ids), list(lps)
            if allowed is not None and allowed[j] is not None:
                ep.restricted.update(restriction_record(allowed[j], ids, len(ep.tokens.completion_ids)))
            ep.tokens.extend(ids, model=True, step=turn, logprobs=lps)
            contexts[i].extend(ids)
            if not ids or ids[-1] not in codec.eos_token_ids:  # any EOS the sampler stops on ends the turn
                # The per-turn cap cut the action: close the turn with an EOS the model did not sample.
                ep.tokens.extend([codec.eos_token_id], model=False, step=-1)
                contexts[i].append(codec.eos_token_id)
            actions.append((i, codec.decode_action([t for t in ids if t not in codec.eos_token_ids])))
        for (i, action), (obs, reward, terminated, truncated, info) in zip(actions, _step_all(envs, actions)):
            ep = episodes[i]
            obs = str(obs)
            ep.steps.append(Step(observation=observations[i], action=action, reward=float(reward), info=info))
            ep.anchors.append(_anchor(observations[i]))
            rewards[i].append(float(reward))
            if not info.get("action_valid", True):
                ep.invalid_actions += 1
            ep.final_info, ep.final_observation = info, obs
            if terminated or truncated:
                ep.terminated, ep.truncated = bool(terminated), bool(truncated)
                continue
            delta = codec.observation_ids(obs)
            if len(ep.tokens.completion_ids) + len(delta) + 2 > max_episode_tokens:
                ep.truncated, ep.ended_by = True, "token_budget"  # no room for the next observation and an action
                continue
            ep.tokens.extend(delta, model=False, step=-1)
            contexts[i].extend(delta)
            observations[i] = obs
            still_active.append(i)
        active = still_active
    for i in active:  # reached max_turns
        episodes[i].truncated, episodes[i].ended_by = True, "turn_cap"

    for ep, rs in zip(episodes, rewards):
        close_episode(ep, rs, finish=finish_cut if ep.ended_by != "env" else None, step_rewards=step_rewards,
                      outcome_key=outcome_key, invalid_action_penalty=invalid_action_penalty,
                      mask_truncated=mask_truncated)
    return episodes


def close_episode(ep: Episode, rewards: Sequence[float], *, finish: Callable[[Trajectory], dict[str, Any]] | None,
                  step_rewards: Callable[[dict[str, Any]], list[float] | None] | None, outcome_key: str,
                  invalid_action_penalty: float, mask_truncated: bool) -> None:
    """Set a played episode's outcome, what ``finish`` writes for it (the mechanisms' end-of-episode
    entries, for an episode no environment layer finished) and its step labels."""
    # The outcome first: an attributor reads it from the trajectory (the outcome's sign on unjudged steps).
    ep.success = bool(ep.final_info.get("success", False))
    ep.score = float(ep.final_info.get("score", 0.0))
    if finish is not None and ep.steps:
        ep.final_info = {**ep.final_info, **finish(ep.trajectory())}
    info = ep.final_info
    ep.env_return = float(sum(rewards))
    ep.outcome = _outcome(info, rewards, outcome_key) - invalid_action_penalty * ep.invalid_actions
    if step_rewards is not None:
        ep.labels = step_rewards(info)
    if mask_truncated and ep.truncated and not ep.terminated:
        ep.tokens.env_mask = [0] * len(ep.tokens.env_mask)
