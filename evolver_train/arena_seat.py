"""An Avalon seat played by a local text policy the way ``evolver train`` plays it (``checkpoint:<path>``).

The arena depends only on ``evolver_gym.core``; it finds this seat through the ``evolver_gym.arena_seats``
entry point ``checkpoint`` (``checkpoint_seat``), so tournaments, evaluation and training name a model folder
as an opponent without the arena importing the trainer.

* ``LocalPolicy`` - a model folder in memory with the codec it trained with: the model, ``ChatCodec`` under
  its tokenizer's chat template with the run's system prompt and observation clip (what the checkpoint
  recorded; a run's ``start`` policy takes its run's), and the cap of a free reply. :meth:`LocalPolicy.load`
  loads a folder once per process: an ``evolver train`` output or ``checkpoint-N`` folder, its ``start``
  policy, a LoRA adapter folder, or any chat model folder (e.g. SmolLM2-135M-Instruct).
* ``checkpoint_seat`` - the entry point: a ``PolicySeat`` of the folder at ``path``.
* ``PolicySeat`` - one seat of that policy: one chat per game, fed the multi-seat environment's
  observations (the rules and its night knowledge at its first turn, then what is new since its last
  turn: :class:`~arena.avalon.observation.SeatStream`, which every host gives a player with
  ``conversation = True``), each reply sampled by the training sampler
  (:class:`evolver_train.rollout.IncrementalSampler`, its KV cache kept for the whole game) among the
  seat's legal replies only (``allowed_actions``), so it never plays an illegal move.

The distribution is the one ``allowed_actions_only`` training samples from: at each token the policy's
softmax renormalised over the tokens that continue an allowed reply. Randomness comes from a generator
seeded by the game seed and the seat, so the same tournament seed replays the same games.

Example (a trained run against four rule bots)::

    from arena.avalon import AvalonConfig
    from arena.avalon.bots import RuleBot
    from arena.avalon.play import play_game

    seat = PolicySeat(LocalPolicy.load("runs/avalon"), name="avalon-run")
    result = play_game([seat, *(RuleBot() for _ in range(4))], config=AvalonConfig(5), seed=0)
    result["fallback_actions"][0], seat.stats["unmatched"]  # (0, 0)
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from arena.avalon.engine import SeatView
from arena.avalon.observation import view_allowed_texts
from evolver_gym.core.seeding import derive_seed

__all__ = ["LocalPolicy", "PolicySeat", "checkpoint_seat"]

# The files in which evolver_train.eval_cli._checkpoint_defaults finds a run's settings (importing it costs
# TRL, so a plain model folder does not).
_RECORDS = ("sft_config.json", "training_args.bin")


class LocalPolicy:
    """A text policy in memory, with the codec and reply cap of its training.

    Args:
        model: A causal LM (put in eval mode).
        codec: :class:`evolver_train.rollout.ChatCodec` of the model's tokenizer, as the run trained with it
            (system prompt, ``max_observation_tokens``, the model's EOS ids).
        max_turn_tokens: Longest free reply (discussion speech), as in training; a listed reply is never cut.
        name: Where it came from (the folder), for messages.

    Example:
        >>> import torch
        >>> from evolver_train.evaluation import build_byte_tokenizer
        >>> from evolver_train.policy import TinyPolicyConfig, build_tiny_policy
        >>> from evolver_train.rollout import ChatCodec
        >>> tok = build_byte_tokenizer()
        >>> model = build_tiny_policy(tok, TinyPolicyConfig(hidden_size=16, num_hidden_layers=1,
        ...                           num_attention_heads=2, intermediate_size=32))
        >>> LocalPolicy(model, ChatCodec(tok, max_observation_tokens=4000), max_turn_tokens=12).max_turn_tokens
        12
    """

    def __init__(self, model: Any, codec: Any, *, max_turn_tokens: int = 32, name: str = ""):
        if not callable(model) or not hasattr(model, "parameters"):
            raise TypeError(f"model must be a torch causal LM, got {type(model).__name__}")
        if not hasattr(codec, "prompt_ids") or not hasattr(codec, "observation_ids"):
            raise TypeError(f"codec must be an evolver_train.rollout.ChatCodec, got {type(codec).__name__}")
        if not isinstance(max_turn_tokens, int) or isinstance(max_turn_tokens, bool) or max_turn_tokens < 1:
            raise ValueError(f"max_turn_tokens must be a positive int, got {max_turn_tokens!r}")
        self.model, self.codec, self.max_turn_tokens, self.name = model.eval(), codec, max_turn_tokens, name
        tok = codec.tokenizer
        self.eos_token_ids = sorted(codec.eos_token_ids)
        self.pad_token_id = int(tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
        self.max_positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        self.device = next(model.parameters()).device
        self._action_ids: dict[str, list[int]] = {}

    def action_ids(self, action: str) -> list[int]:
        """The token ids of a listed reply as training restricts to them (``ChatCodec.action_ids``), memoised:
        the same replies (votes, teams) come back every game."""
        ids = self._action_ids.get(action)
        if ids is None:
            ids = self._action_ids[action] = self.codec.action_ids(action)
        return ids

    @staticmethod
    def load(path: str | Path) -> LocalPolicy:
        """The policy of a model folder, loaded once per process (every seat of it shares the weights)."""
        folder = Path(path)
        if not folder.is_dir():
            raise ValueError(f"{str(path)!r} is not a model folder")
        return _load(str(folder.resolve()))


def _recorded_settings(folder: Path) -> dict[str, Any]:
    """The rollout settings ``folder`` was trained with, where it records them (else ``{}``)."""
    if not any((folder / name).exists() for name in _RECORDS):
        return {}
    from .eval_cli import _checkpoint_defaults

    return _checkpoint_defaults(folder)


@lru_cache(maxsize=8)
def _load(path: str) -> LocalPolicy:
    from .checkpoints import START_DIR
    from .evaluation import RolloutSettings, _eos_ids, load_checkpoint
    from .rollout import ChatCodec

    folder = Path(path)
    record = _recorded_settings(folder)
    if not record and folder.name == START_DIR:  # a run's starting policy: the run's settings
        record = _recorded_settings(folder.parent)
    settings = RolloutSettings.from_config(record)
    model, tokenizer = load_checkpoint(path)
    codec = ChatCodec(tokenizer, system_prompt=settings.system_prompt,
                      max_observation_tokens=settings.max_observation_tokens, eos_token_ids=_eos_ids(model, tokenizer))
    return LocalPolicy(model, codec, max_turn_tokens=settings.max_turn_tokens, name=path)


class PolicySeat:
    """A seat played by a :class:`LocalPolicy` as in training: one chat per game, legal replies only.

    Each turn the host's observation (what is new since the seat's last turn) joins the chat, as a user
    turn after the seat's last reply, and the reply is sampled from the policy among the seat's legal
    replies (:func:`~arena.avalon.observation.view_allowed_texts`); a proposal, vote, quest card or target is
    played by its action code, so no reply is ever refused. In discussion, where any text is speech, the
    reply is sampled freely (at most ``max_turn_tokens``). A reply with a single choice (a good seat's
    quest card) is played without asking the model: its probability is 1 under the restriction.

    Args:
        policy: The policy (:meth:`LocalPolicy.load`).
        name: Label in tournaments.
        greedy: Take the most probable token at each step (among the allowed ones), as ``evolver eval
            --temperature 0`` does, instead of sampling.

    Counters (``stats``, summed by tournaments): ``turns``, ``free_replies`` (discussion), ``sampled_tokens``,
    ``restarts`` (the chat outgrew the model's positions and restarted from the rules, night knowledge and the
    new observation), ``unmatched`` (a restricted reply that is none of the legal ones: never expected; the
    text is then played as is) and ``ambiguous`` (legal replies the tokenizer spells alike, one drawn among
    them). ``choices`` holds every reply and its log-probability under the distribution it was drawn from.

    Example:
        >>> seat = PolicySeat(LocalPolicy.load(folder), name="run-200", greedy=True)  # doctest: +SKIP
    """

    needs_text = True
    conversation = True  # hosts give what is new since its last turn (arena.avalon.observation.SeatStream)

    def __init__(self, policy: LocalPolicy, name: str = "policy", *, greedy: bool = False):
        if not isinstance(policy, LocalPolicy):
            raise TypeError(f"policy must be a LocalPolicy (LocalPolicy.load(folder)), got {type(policy).__name__}")
        if not isinstance(greedy, bool):
            raise ValueError(f"greedy must be True or False, got {greedy!r}")
        self.policy, self.name, self.greedy = policy, name, greedy
        self.stats = {"turns": 0, "free_replies": 0, "sampled_tokens": 0, "restarts": 0, "unmatched": 0,
                      "ambiguous": 0}
        self.choices: list[tuple[str, float]] = []
        self.reset(0, 0)

    def reset(self, seat: int, seed: int) -> None:
        """A new game: an empty chat, a fresh KV cache and a generator seeded by ``seed`` and ``seat``."""
        import torch

        from .rollout import IncrementalSampler

        p = self.policy
        self.generator = torch.Generator(device=p.device).manual_seed(derive_seed("policy-seat", seed, seat) % 2**63)
        self.sampler = IncrementalSampler(p.model, eos_token_ids=p.eos_token_ids, pad_token_id=p.pad_token_id,
                                          temperature=0.0 if self.greedy else 1.0, generator=self.generator)
        self.context: list[int] = []  # the chat's token ids: prompt, replies, observations
        self._first = ""

    def act(self, view: SeatView, text: str | None = None) -> int | str:
        """The seat's reply to ``text`` (its new observation): a legal action code, or speech in discussion."""
        import torch

        if text is None:
            raise ValueError(f"{self.name}: a policy seat reads the observation its host gives (needs_text)")
        codec = self.policy.codec
        allowed = view_allowed_texts(view)
        if allowed == []:
            raise ValueError(f"{self.name}: Player {view.seat} has nothing to do in phase {view.phase!r}")
        sequences = None if allowed is None else [self.policy.action_ids(a) for a in allowed]
        cap = self.policy.max_turn_tokens if sequences is None else max(len(s) for s in sequences)
        self._listen(text, cap)
        # Tokens every legal reply starts with ("VOTE:") have probability 1 under the restriction: they join
        # the context unsampled, so one forward reads the observation and them (a reply with a single choice,
        # a good seat's quest card, needs none).
        forced = _common_prefix(sequences) if sequences is not None else []
        self.context += forced
        if sequences is not None and len(sequences) == 1:
            ids, logprob = list(sequences[0][len(forced):]), 0.0
        else:
            rest = None if sequences is None else [[s[len(forced):] for s in sequences]]
            out, logprobs = self.sampler([self.context], [cap - len(forced)], [0], rest)
            ids, logprob = list(out[0]), float(sum(logprobs[0]))
            self.stats["sampled_tokens"] += len(ids)
        self.context += ids
        ids = forced + ids
        if not ids or ids[-1] not in codec.eos_token_ids:  # cut by the cap: closed as training closes it
            self.context.append(codec.eos_token_id)
        self.stats["turns"] += 1
        reply = codec.decode_action([t for t in ids if t not in codec.eos_token_ids])
        self.choices.append((reply, logprob))
        if sequences is None:
            self.stats["free_replies"] += 1
            return reply
        matches = [i for i, s in enumerate(sequences) if s == ids]
        if not matches:
            self.stats["unmatched"] += 1
            return reply
        if len(matches) > 1:  # the restriction cannot tell them apart: one of them, drawn
            self.stats["ambiguous"] += 1
            matches = [matches[int(torch.randint(len(matches), (1,), generator=self.generator,
                                                 device=self.generator.device))]]
        return int(view.legal[matches[0]])

    def _listen(self, text: str, cap: int) -> None:
        """``text`` joins the chat: the prompt at the first turn, else a user turn after the last reply."""
        codec, limit = self.policy.codec, self.policy.max_positions
        if not self.context:
            self._first, self.context = text, codec.prompt_ids(text)
            return
        self.context += codec.observation_ids(text)
        if limit and len(self.context) + cap > limit:  # the model has no positions left: a new chat
            self.stats["restarts"] += 1
            self.sampler.reset()
            self.context = codec.prompt_ids(f"{self._first}\n\n{text}")


def _common_prefix(sequences: list[list[int]]) -> list[int]:
    """The longest token prefix of every sequence, short of the whole of any (the last token is kept to sample)."""
    first, n = sequences[0], min(len(s) for s in sequences) - 1
    k = 0
    while k < n and all(s[k] == first[k] for s in sequences):
        k += 1
    return list(first[:k])


def checkpoint_seat(path: str, name: str, *, greedy: bool = False) -> PolicySeat:
    """The ``checkpoint:<path>`` opponent (entry point ``evolver_gym.arena_seats:checkpoint``): a seat of the
    model folder at ``path``, loaded once per process."""
    return PolicySeat(LocalPolicy.load(path), name=name, greedy=greedy)
