"""Evaluation of a policy the way AgentEvolver reports it: k sampled episodes per task, avg@k and best@k.

* ``evaluate_policy`` - play ``k`` independent samples of every task with the trainer's own batched
  rollout (``play_episodes`` + ``ChatCodec``) and return a JSON-ready report.
* ``RolloutSettings`` - turn cap, token budgets and system prompt of the rollouts (take them from the
  training config so a policy is evaluated in the layout it was trained in).
* ``avg_best_at_k`` - avg@k (mean over tasks of the mean over k) and best@k (mean over tasks of the max).
* ``OraclePolicy`` - the environment's oracle actions played through the same token interface; the
  ceiling of an evaluation and the scripted policy of its tests.
* ``load_checkpoint`` - a model and tokenizer from a checkpoint folder or a LoRA adapter folder.

The command line, ``evolver eval``, is in :mod:`evolver_train.eval_cli`.

The report always has ``avg@k``, ``best@k``, ``success_rate`` (= avg@k of success, with its Wilson
interval over episodes), ``score`` (mean benchmark score), ``avg_score@k``/``best_score@k``,
``by_difficulty`` (where tasks carry a difficulty) and ``per_task``. An environment adds its own
benchmark metrics through ``evaluation_report(per_task, final_infos, k)`` on its class: AppWorld adds
``appworld`` (TGC and SGC, averaged over the k samples and best of k), Avalon seats add ``arena``
(games, wins, win rate with its Wilson interval, unfinished games, win rate per side).
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from evolver_gym.core import Task, derive_seed
from evolver_gym.core.stats import evaluation_sample, wilson_interval

__all__ = [
    "evaluate_policy",
    "RolloutSettings",
    "avg_best_at_k",
    "OraclePolicy",
    "build_byte_tokenizer",
    "load_checkpoint",
]


# -- metrics -----------------------------------------------------------------------------------


def avg_best_at_k(outcomes: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """avg@k and best@k of per-task outcome lists (success 0/1 or scores).

    Example:
        >>> avg_best_at_k({"a": [1, 0, 0, 0], "b": [0, 0, 0, 0]})
        {'avg@k': 0.125, 'best@k': 0.5, 'num_tasks': 2}
    """
    rows = [list(map(float, v)) for v in outcomes.values()]
    if any(not r for r in rows):
        raise ValueError("every task needs at least one outcome")
    if not rows:
        return {"avg@k": 0.0, "best@k": 0.0, "num_tasks": 0}
    return {
        "avg@k": sum(sum(r) / len(r) for r in rows) / len(rows),
        "best@k": sum(max(r) for r in rows) / len(rows),
        "num_tasks": len(rows),
    }


# -- rollout settings and policies -------------------------------------------------------------


@dataclass
class RolloutSettings:
    """How episodes are laid out and capped; the fields mirror ``EvolverGRPOConfig``'s."""

    max_turns: int = 100
    max_episode_tokens: int = 16384
    max_turn_tokens: int = 32
    max_observation_tokens: int = 512
    system_prompt: str | None = None
    allowed_actions_only: bool = False

    @classmethod
    def from_config(cls, config: Any, base: RolloutSettings | None = None) -> RolloutSettings:
        """The fields found on ``config`` (an object or a mapping), the rest from ``base``."""
        values = asdict(base or cls())
        for f in fields(cls):
            value = config.get(f.name) if isinstance(config, Mapping) else getattr(config, f.name, None)
            if value is not None:
                values[f.name] = value
        return cls(**values)


def build_byte_tokenizer():
    """A byte-level tokenizer (256 byte tokens, no merges) with the policy chat template.

    Any text round-trips exactly, so scripted policies can speak through the token interface.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from .policy import CHAT_TEMPLATE, SPECIAL_TOKENS

    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<bos>",
        eos_token="<eos>",
        additional_special_tokens=SPECIAL_TOKENS[4:],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


class OraclePolicy:
    """Plays each task's reference actions through the rollout's token interface.

    The policy reads its context like a model would: it finds the task whose instruction appears
    (last) in the conversation and counts the turns already taken (EOS tokens). Use it with
    ``evaluate_policy(None, oracle.tokenizer, env_id, generate=oracle.generate, rollout=oracle.rollout)``.

    Args:
        tasks: The tasks it may be asked to solve.
        plans: ``task -> actions``; usually the unwrapped env's ``oracle``.
    """

    def __init__(self, tasks: Sequence[Task], plans: Callable[[Task], Sequence[str]]):
        self.tokenizer = build_byte_tokenizer()
        self.eos = int(self.tokenizer.eos_token_id)
        self.plans = {t.instruction: list(plans(t)) for t in tasks}
        # Observations and actions must not be cut: the oracle finds the task by its instruction.
        self.rollout = RolloutSettings(
            max_turns=1000, max_episode_tokens=10**8, max_turn_tokens=10**6, max_observation_tokens=10**7
        )

    def _plan(self, context: list[int]) -> list[str]:
        first = context.index(self.eos) if self.eos in context else len(context)
        text = self.tokenizer.decode(context[:first], skip_special_tokens=True)
        found = [(text.rfind(ins), len(ins), ins) for ins in self.plans if ins and ins in text]
        return self.plans[max(found)[2]] if found else []

    def generate(
        self, contexts: list[list[int]], caps: list[int]
    ) -> tuple[list[list[int]], list[list[float]]]:
        ids, logprobs = [], []
        for context, cap in zip(contexts, caps, strict=True):
            plan, turn = self._plan(context), context.count(self.eos)
            action = plan[turn] if turn < len(plan) else ""
            out = (self.tokenizer(action, add_special_tokens=False)["input_ids"] + [self.eos])[: max(cap, 1)]
            ids.append(out)
            logprobs.append([0.0] * len(out))
        return ids, logprobs


def load_checkpoint(path: str | Path, *, device: str | None = None):
    """``(model, tokenizer)`` from a checkpoint folder, a LoRA adapter folder (merged) or a hub name."""
    from .policy import build_policy

    model, tokenizer = build_policy(str(path), device=device)
    return model.eval(), tokenizer


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """The tokenizer's EOS and every EOS id of the model's generation config."""
    eos = {int(tokenizer.eos_token_id)}
    extra = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    return eos | {int(e) for e in (extra if isinstance(extra, (list, tuple)) else [extra]) if e is not None}


def _model_sampler(model: Any, tokenizer: Any, *, temperature: float, top_p: float, seed: int) -> Callable:
    """``start -> generate``: the training sampler (KV cache kept across turns), one per batch of episodes."""
    import torch

    from .rollout import IncrementalSampler

    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(derive_seed(seed, "eval-sample") % 2**63)
    eos = _eos_ids(model, tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def new_sampler(start: int) -> Callable:
        return IncrementalSampler(model, eos_token_ids=sorted(eos), pad_token_id=int(pad), temperature=temperature,
                                  top_p=top_p, generator=generator)

    return new_sampler


# -- evaluation --------------------------------------------------------------------------------


def _make_env_factory(
    env_id: str,
    env_kwargs: dict[str, Any],
    experience: bool,
    experience_uri: str | None,
    experience_top_k: int | None,
    experience_threshold: float | None,
    observation_shaping: Sequence[str] = (),
):
    import evolver_gym  # noqa: F401 - registers the environment ids

    from .envs import make_base_env
    from .errors import check_env_id

    check_env_id(env_id, "env_id")  # imports the packages that register environment ids
    pool = None
    if experience:
        if not experience_uri:
            raise ValueError("experience on needs an experience pool uri (--experience-uri)")
        local = "://" not in experience_uri
        if local and not os.path.exists(experience_uri):
            raise ValueError(f"experience pool {experience_uri!r} does not exist")
        from wrappers.navigation import ExperiencePool, PoolConfig

        pool = ExperiencePool(PoolConfig(uri=experience_uri))

    def factory():
        # Shapers first, as in training: experience is injected into the shaped observation.
        env = make_base_env(env_id, env_kwargs, list(observation_shaping))  # multi-seat envs too
        if pool is not None:
            from wrappers.navigation import ExperienceContext

            env = ExperienceContext(
                env,
                pool,
                top_k=experience_top_k,
                threshold=experience_threshold,
                enabled=True,
                continual=False,
                count_uses=False,
            )
        return env

    return factory, pool


def _difficulty_key(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.1f}"
    return str(int(value)) if isinstance(value, (int, float)) else str(value)


def evaluate_policy(
    model: Any,
    tokenizer: Any,
    env_id: str,
    *,
    split: str = "dev",
    k: int = 8,
    temperature: float = 1.0,
    top_p: float = 1.0,
    num_tasks: int | None = None,
    tasks: Sequence[Task | dict[str, Any]] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    experience: bool = False,
    experience_uri: str | None = None,
    experience_top_k: int | None = None,
    experience_threshold: float | None = None,
    observation_shaping: Sequence[str] = (),
    rollout: RolloutSettings | Any = None,
    seed: int = 0,
    batch_size: int = 64,
    generate: Callable | None = None,
    sampler: Callable[[int], Callable] | None = None,
    env_factory: Callable[[], Any] | None = None,
    reset_options: dict[str, Any] | None = None,
    reset_seeds: Sequence[int] | None = None,
    eos_token_ids: Sequence[int] = (),
    progress: bool = False,
) -> dict[str, Any]:
    """Play ``k`` sampled episodes of each task and report avg@k, best@k, success, score and breakdowns.

    Args:
        model: A causal LM (left in the train/eval mode it came in); ``None`` when ``generate`` is given.
        tokenizer: Its tokenizer (with a chat template and EOS).
        env_id: Gymnasium id (``evolver/WebShop-v0``, ``evolver/AppWorld-v0``, ``evolver/AvalonSeat-v0``).
        split: Split whose tasks are played (first ``num_tasks`` of them) unless ``tasks`` is given.
        k: Independent samples per task (temperature > 0 when k > 1); on a multi-seat environment, k games
            per task, one episode per learning seat (``success_rate`` then counts seats; the env's own
            ``evaluation_report`` counts games per side and seats per role).
        experience: Inject retrieved experience from the pool at ``experience_uri`` into every episode.
        observation_shaping: Shapers of ``evolver_train.observation`` the policy was trained with.
        rollout: ``RolloutSettings`` or any object/mapping with its fields (e.g. the training config).
        generate: ``generate(contexts, caps) -> (ids, logprobs)`` replacing sampling from ``model``.
        sampler: ``batch start -> generate``, a fresh sampler per batch (the trainer passes its own).
        eos_token_ids: Ids that end a turn besides the tokenizer's EOS (default: the model's generation config).
        env_factory: Environments to play in (default: ``env_id`` with the shapers and experience above).
        reset_options: Extra ``reset`` options of every episode (what the mechanisms ask for in evaluation).
        reset_seeds: One reset seed per task (default: derived from ``seed`` and the task id).

    Example:
        >>> report = evaluate_policy(model, tok, "evolver/WebShop-v0", k=8, num_tasks=100)  # doctest: +SKIP
        >>> report["avg@k"] <= report["best@k"]                                           # doctest: +SKIP
        True
    """
    from .generation import rollout_scope
    from .rollout import ChatCodec, EnvPool, RowSpec, allowed_actions_in, play_episodes

    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    if k > 1 and temperature <= 0:
        raise ValueError(f"k={k} independent samples need temperature > 0, got {temperature!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
    if num_tasks is not None and num_tasks < 1:
        raise ValueError(f"num_tasks must be >= 1 or None, got {num_tasks!r}")
    if model is None and generate is None and sampler is None:
        raise ValueError("give a model, a generate function or a sampler")
    settings = rollout if isinstance(rollout, RolloutSettings) else RolloutSettings.from_config(rollout or {})
    env_kwargs = dict(env_kwargs or {})
    if env_factory is not None:
        factory, exp_pool = env_factory, None
    else:
        factory, exp_pool = _make_env_factory(
            env_id,
            env_kwargs,
            experience,
            experience_uri,
            experience_top_k,
            experience_threshold,
            observation_shaping,
        )
    pool = EnvPool(factory)
    started = time.monotonic()
    was_training = bool(getattr(model, "training", False))
    try:
        unwrapped = pool.take(1)[0].unwrapped
        breakdown = getattr(unwrapped, "evaluation_report", None)
        # A multi-seat game is one row per learning seat (evolver_train.seat_rollout): S rows per sample.
        from .seat_rollout import is_multi_seat

        seats = unwrapped.num_learning_seats if is_multi_seat(unwrapped) else 1
        batch_size = max(batch_size // seats, 1) * seats
        if tasks is None:
            tasks = unwrapped.tasks(split)
        tasks = [Task.from_dict(t) if isinstance(t, dict) else t for t in tasks][:num_tasks]
        if not tasks:
            raise ValueError(f"no tasks to evaluate (env {env_id!r}, split {split!r})")
        codec = ChatCodec(
            tokenizer,
            system_prompt=settings.system_prompt,
            max_observation_tokens=settings.max_observation_tokens,
            eos_token_ids=[*eos_token_ids, *(_eos_ids(model, tokenizer) if model is not None else ())],
        )
        if generate is None and sampler is None:
            model.eval()
            sampler = _model_sampler(model, tokenizer, temperature=temperature, top_p=top_p, seed=seed)
        if reset_seeds is not None and len(reset_seeds) != len(tasks):
            raise ValueError(f"{len(tasks)} tasks need as many reset_seeds, got {len(reset_seeds)}")
        rows = [
            RowSpec(
                task=t,
                seed=(int(reset_seeds[i]) if reset_seeds is not None
                      else derive_seed(seed, "eval-reset", t.task_id) % 2**31),
                group=i,
                experience=True if experience else None,
                options=dict(reset_options or {}),
            )
            for i, t in enumerate(tasks)
            for _ in range(k * seats)
        ]
        episodes = []
        if progress:  # before the first batch, which may take minutes: what runs, and how it will report
            print(f"eval: {len(rows)} episodes ({len(tasks)} {split} tasks x k={k}) in batches of "
                  f"{min(batch_size, len(rows))}, a line after each batch", file=sys.stderr, flush=True)
        for start in range(0, len(rows), batch_size):
            part = rows[start : start + batch_size]
            # The scope lets a backend sync stale weights and wake a sleeping engine once per batch.
            with rollout_scope(generate if generate is not None else sampler(start)) as batch_generate:
                episodes += play_episodes(
                    pool.take(len(part)),
                    part,
                    batch_generate,
                    codec,
                    max_turns=settings.max_turns,
                    max_episode_tokens=settings.max_episode_tokens,
                    max_turn_tokens=settings.max_turn_tokens,
                    allowed_actions=allowed_actions_in if settings.allowed_actions_only else None,
                    outcome_key="score",
                )
            if progress:
                done = sum(e.success for e in episodes)
                elapsed = time.monotonic() - started
                eta = elapsed / len(episodes) * (len(rows) - len(episodes))
                print(
                    f"eval: {len(episodes)}/{len(rows)} episodes, {done} successful "
                    f"({elapsed:.0f}s, ETA {eta:.0f}s)",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        pool.close()
        if exp_pool is not None and hasattr(exp_pool, "close"):
            exp_pool.close()
        if model is not None and was_training:
            model.train()
    report = _report(tasks, episodes, k, breakdown)
    report.update(
        env_id=env_id,
        split=split,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        env_kwargs=env_kwargs,
        observation_shaping=list(observation_shaping),
        rollout=asdict(settings),
        wall_s=round(time.monotonic() - started, 2),
    )
    # Which episodes were played: two figures are comparable only when their fingerprints are equal.
    report["sample"] = evaluation_sample(
        [r.task.task_id for r in rows], [r.seed for r in rows], env_id=env_id, split=split,
        split_scheme=getattr(unwrapped, "split_scheme", None), k=k, temperature=temperature, sampling_seed=seed)
    report["experience"] = {
        "enabled": bool(experience),
        "uri": experience_uri if experience else None,
        "usage_rate": sum(_experience_used(e) for e in episodes) / len(episodes),
    }
    return report


def _experience_used(episode: Any) -> bool:
    from wrappers.navigation.wrapper import ExperiencePayload

    payload = ExperiencePayload.from_info(episode.reset_info)
    return bool(payload and payload.used)


def _report(tasks: list[Task], episodes: list[Any], k: int, breakdown: Callable | None = None) -> dict[str, Any]:
    by_task: dict[int, list[Any]] = defaultdict(list)
    for ep in episodes:
        by_task[ep.spec.group].append(ep)
    per_task = [
        {
            "task_id": t.task_id,
            "difficulty": t.difficulty,
            "successes": [int(e.success) for e in by_task[i]],
            "scores": [e.score for e in by_task[i]],
        }
        for i, t in enumerate(tasks)
    ]
    success = avg_best_at_k({str(i): p["successes"] for i, p in enumerate(per_task)})
    score = avg_best_at_k({str(i): p["scores"] for i, p in enumerate(per_task)})
    n, wins = len(episodes), sum(int(e.success) for e in episodes)
    steps = sum(len(e.steps) for e in episodes)
    report: dict[str, Any] = {
        "k": k,
        "num_tasks": len(tasks),
        "num_episodes": n,
        "avg@k": success["avg@k"],
        "best@k": success["best@k"],
        "success_rate": wins / n,
        "success_rate_ci95": list(wilson_interval(wins, n)),
        "score": sum(e.score for e in episodes) / n,
        "avg_score@k": score["avg@k"],
        "best_score@k": score["best@k"],
        "episode_len": steps / n,
        "invalid_action_rate": sum(e.invalid_actions for e in episodes) / max(steps, 1),
        "truncated_rate": sum(bool(e.truncated and not e.terminated) for e in episodes) / n,
    }
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in per_task:
        key = _difficulty_key(p["difficulty"])
        if key is not None:
            groups[key].append(p)
    report["by_difficulty"] = {
        key: {
            **{m: v for m, v in avg_best_at_k({p["task_id"]: p["successes"] for p in ps}).items()},
            "score": sum(sum(p["scores"]) for p in ps) / sum(len(p["scores"]) for p in ps),
        }
        for key, ps in sorted(groups.items(), key=lambda kv: kv[0])
    }
    report["per_task"] = per_task
    if breakdown is not None:  # the environment's own benchmark metrics (AppWorld TGC/SGC, arena win rate)
        report.update(breakdown(per_task, [e.final_info for e in episodes], k))
    return report
