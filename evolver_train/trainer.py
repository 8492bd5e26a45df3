"""``EvolverGRPOTrainer``: TRL's GRPO trainer driven by multi-turn environment rollouts.

* ``EvolverGRPOTrainer`` - ``GRPOTrainer`` with our ``rollout_func`` (grouped environment pool,
  token-exact episodes), per-token advantages (outcome + attributed step rewards + GiGPO), edited
  training prompts with their own clip, environment metrics and plugin state saved with each checkpoint.
* ``MechanismCallback`` - after each optimiser step: training episodes to each mechanism, its periodic work.
* ``EvaluationCallback`` - periodic held-out evaluation; ``TimeBudgetCallback`` - a wall-time stop;
  ``SlowRunWarningCallback`` - a warning when the step budget will take far longer than expected.
* ``task_dataset`` - the training dataset: one row per task (fixed tasks) or per slot (sampled).

The trainer never names a mechanism: it calls the ``TrainingHooks`` it is given (one per enabled
mechanism, see ``wrappers.plugin``) in order.

TRL surface (pinned to ``trl~=1.16.0``; ``tests/train/test_trl_hooks.py`` fails when any of it changes).
Public: ``rollout_func``, a reward function (the episode outcome), callbacks, ``train()``.
Private methods still overridden, and why:

* ``_generate_and_score_completions`` - TRL computes one advantage per row; ADCA and GiGPO need one per
  token. We call ``super()`` and replace ``advantages`` with a ``(B, T)`` tensor (TRL's loss accepts it).
* ``_compute_loss`` - rows trained on an edited prompt (stripped experience) get their mechanism's upper
  clip; TRL has one clip range per batch, so the call swaps ``epsilon_low``/``epsilon_high`` for
  per-row tensors and restores them. It also logs the importance ratio the loss used (``ratio/*``) and
  hands each mechanism the clip statistics of its edited rows (``TrainingHooks.clip_metrics``).
* ``_get_per_token_logps_and_entropies`` - the same log-probs on left-aligned rows, without a padding
  mask (SDPA's fast causal path, about 2x faster on CPU); checked equal to TRL's in the tests. Inside
  ``_compute_loss`` it keeps the loss's log-probs for those ratio metrics. Rows sampled under
  ``allowed_actions_only`` are scored under the policy that acted: at each restricted position the softmax
  is renormalised over the allowed tokens (``Episode.restricted``, carried per row as
  ``restricted_tokens``), for the loss, the old and the reference log-probs alike.

Old log-probs (the ratio's denominator) are TRL's: computed in ``_generate_and_score_completions`` from the
``prompt_ids`` our ``rollout_func`` returns, which are the training prompts (stripped for edited rows), so
they match the prompt the loss uses. TRL computes them only when the batch is reused (``num_iterations >
1``) or spread over several optimiser steps (``steps_per_generation > gradient_accumulation_steps``);
otherwise the ratio is exactly 1 and no clip acts. A mechanism with ``behaviour_ratio`` (stripped
experience rows, ``experience_behaviour_ratio``) makes its rows' old log-probs the sampling ones, the
policy that saw the injection: their ratio is the off-policy correction, clipped from the first pass.

Private state used: ``_metrics`` (our metrics are logged with TRL's, in the same step), ``epsilon_low`` /
``epsilon_high`` (above), ``vllm_generation.max_completion_length`` (one turn's cap per vLLM call).
Plugin state is saved by a callback (``on_save``) and restored in ``train()``, both public.
"""

from __future__ import annotations

import gc
import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ProgressCallback
from trl import GRPOTrainer
from trl.models.utils import unwrap_model_for_generation

from evolver_gym.core import Task, Trajectory, derive_seed
from wrappers.plugin import ClipStats, RowContext, TrainingHooks

from .advantages import EpisodeSignals, combine_step_advantages, gather_episodes, token_advantages
from .checkpoints import CheckpointCompletion, last_complete_checkpoint
from .config import EvolverGRPOConfig
from .env_workers import EnvWorkerConfig, make_env_pool
from .generation import VLLMGenerate, rollout_scope
from .rollout import ChatCodec, Episode, IncrementalSampler, PromptEdit, RowSpec, allowed_actions_in, play_episodes

__all__ = ["EvolverGRPOTrainer", "TrainingHooks", "MechanismCallback", "EvaluationCallback", "TimeBudgetCallback",
           "SlowRunWarningCallback",
           "ConciseProgressCallback", "task_dataset", "PLUGIN_STATE_FILE"]

PLUGIN_STATE_FILE = "evolver_state.json"


def task_dataset(tasks: Sequence[Task | dict[str, Any]] | None = None, *, slots: int = 0):
    """A ``datasets.Dataset`` whose ``prompt`` column names what each GRPO group plays.

    Fixed tasks: ``{"task": {...}}`` per task. Sampled tasks (self-questioning): ``{"slot": i}``,
    the task of a slot is drawn from the task pool when its group is rolled out.
    """
    from datasets import Dataset

    prompts = [json.dumps({"task": (t.to_dict() if isinstance(t, Task) else dict(t))}) for t in tasks or []]
    prompts += [json.dumps({"slot": i}) for i in range(slots)]
    if not prompts:
        raise ValueError("task_dataset needs tasks or slots > 0")
    return Dataset.from_dict({"prompt": prompts})


def _outcome_reward(prompts: list[Any], completions: list[Any], outcome: list[float] | None = None,
                    **kwargs: Any) -> list[float]:
    """TRL reward function: the episode outcome computed by the rollout (drives TRL's own reward logs)."""
    if outcome is None:
        raise ValueError("rows carry no 'outcome': the trainer's rollout_func did not run")
    return [float(x) for x in outcome]


_outcome_reward.__name__ = "env_outcome"


def _broadcast(obj: Any) -> Any:
    """``obj`` from rank 0 on every rank (identity in one process)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


class EvolverGRPOTrainer(GRPOTrainer):
    """GRPO on multi-turn text environments (AgentEvolver's ADCA-GRPO on TRL).

    Args:
        model: A model name/path or a ``PreTrainedModel``.
        args: ``EvolverGRPOConfig``.
        env_factory: Builds one (wrapped) environment; called once per concurrent rollout, reused.
        train_dataset: Rows of :func:`task_dataset`; built from ``tasks`` when omitted.
        tasks: Fixed training tasks (basic mode).
        hooks: One ``TrainingHooks`` per enabled mechanism, in stacking order (``build_training_environment``).
        processing_class, peft_config, callbacks, eval_dataset: as in ``GRPOTrainer``.

    Example:
        >>> trainer = EvolverGRPOTrainer(model, args=cfg, env_factory=lambda: gym.make("evolver/WebShop-v0"),
        ...                              tasks=env.unwrapped.tasks("train"))   # doctest: +SKIP
        >>> trainer.train()                                                     # doctest: +SKIP
    """

    _tag_names = ["trl", "grpo", "evolver-gym"]

    def __init__(self, model: Any, args: EvolverGRPOConfig, env_factory: Callable[[], Any], *,
                 train_dataset: Any = None, tasks: Sequence[Task | dict[str, Any]] | None = None,
                 hooks: Sequence[TrainingHooks] | TrainingHooks | None = None, processing_class: Any = None,
                 peft_config: Any = None, callbacks: list[TrainerCallback] | None = None, eval_dataset: Any = None,
                 eval_tasks: Sequence[Task | dict[str, Any]] | None = None,
                 probe_tasks: Sequence[Task | dict[str, Any]] | None = None):
        if not isinstance(args, EvolverGRPOConfig):
            raise TypeError(f"args must be an EvolverGRPOConfig, got {type(args).__name__}")
        self.hooks: list[TrainingHooks] = [hooks] if isinstance(hooks, TrainingHooks) else list(hooks or [])
        for h in self.hooks:
            if not isinstance(h, TrainingHooks):
                raise TypeError(f"hooks must be TrainingHooks, got {type(h).__name__}")
        samplers = [h for h in self.hooks if h.task_sampler is not None]
        labellers = [h for h in self.hooks if h.step_rewards is not None]
        for kind, found in (("task_sampler", samplers), ("step_rewards", labellers)):
            if len(found) > 1:
                raise ValueError(f"only one mechanism may provide {kind}, got {[h.name for h in found]}")
        self.task_sampler = samplers[0].task_sampler if samplers else None
        self.labeller = labellers[0] if labellers else None
        if train_dataset is None:
            if tasks:
                train_dataset = task_dataset(tasks)
            elif self.task_sampler is not None:
                train_dataset = task_dataset(slots=max(args.per_device_train_batch_size, 64))
            else:
                raise ValueError("give train_dataset, tasks, or a mechanism with a task_sampler hook")
        workers = EnvWorkerConfig(args.env_backend, args.env_workers, args.ray_address)
        self.env_pool = make_env_pool(env_factory, workers)
        self._episodes: list[Episode] = []
        self._pending_trajectories: list[Any] = []
        self.plugin_state: dict[str, Any] = {"rollouts": 0, "episodes": 0, "alpha": self.current_alpha(0),
                                             "totals": {}}
        self.eval_tasks = [Task.from_dict(t) if isinstance(t, dict) else t for t in (eval_tasks or [])]
        # The fixed probe of training goals (evolver_eval_train_episodes): given, or the fixed tasks.
        self.probe_tasks = [Task.from_dict(t) if isinstance(t, dict) else t for t in (probe_tasks or tasks or [])]
        self._start_model: Any = None  # frozen starting weights of a full model (kl_to_start_interval)
        own_callbacks: list[TrainerCallback] = [MechanismCallback(self)]
        if args.evolver_eval_interval and ((args.evolver_eval_episodes and self.eval_tasks)
                                           or (args.evolver_eval_train_episodes and self.probe_tasks)):
            own_callbacks.append(EvaluationCallback(self))
        if args.max_train_minutes:
            own_callbacks.append(TimeBudgetCallback(args.max_train_minutes))
        if args.expected_train_minutes:
            own_callbacks.append(SlowRunWarningCallback(args.expected_train_minutes))
        super().__init__(model=model, reward_funcs=[_outcome_reward], args=args, train_dataset=train_dataset,
                         eval_dataset=eval_dataset, processing_class=processing_class,
                         callbacks=own_callbacks + list(callbacks or []), peft_config=peft_config,
                         rollout_func=self._rollout)
        if any(isinstance(c, ProgressCallback) for c in self.callback_handler.callbacks):
            self.remove_callback(ProgressCallback)
            self.add_callback(ConciseProgressCallback(
                max_str_len=100, extra_keys=[(key, label) for h in self.hooks for key, label in h.progress.items()]))
        self.add_callback(CheckpointCompletion())  # last: marks a checkpoint complete after every on_save
        self.codec = ChatCodec(self.processing_class, system_prompt=args.system_prompt,
                               max_observation_tokens=args.max_observation_tokens,
                               eos_token_ids=self.eos_token_ids)
        edit_hooks = [h for h in self.hooks if h.plain_observation is not None]
        self.prompt_edits = [PromptEdit(h.plain_observation, h.train_on_plain_observation, h.clip_high,
                                        h.behaviour_ratio and h.train_on_plain_observation) for h in edit_hooks]
        # The mechanism whose edit trained each row (Episode.trained_edit indexes this list).
        self._edit_hooks = edit_hooks
        self._capture_logps, self._loss_logps = False, None
        # Per row, {completion position: allowed tokens} of the batch being scored (allowed_actions_only).
        self._logp_restriction: list[dict[int, list[int]]] | None = None
        clipped = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")
        if any(e.train for e in self.prompt_edits) and self.loss_type not in clipped:
            raise ValueError(f"edited training prompts (experience_mode='strip') need a clipped loss, got "
                             f"loss_type={self.loss_type!r}")

    # -- generation ------------------------------------------------------------------------
    def _generate_fn(self, temperature: float, seed: int) -> Callable:
        """``generate(contexts, caps, rows)`` on the current policy (vLLM when configured).

        A new function per rollout: its ``IncrementalSampler`` keeps the episodes' KV cache across turns.
        """
        if self.use_vllm:  # one collective engine call per turn on every rank; weights synced when stale
            return VLLMGenerate(self, temperature=temperature, seed=seed, eos_token_ids=self.eos_token_ids,
                                top_p=self.top_p if self.top_p is not None else 1.0, top_k=self.top_k or 0)
        generator = torch.Generator(device=self.accelerator.device).manual_seed(seed % 2**63)
        eos = list(self.eos_token_ids)
        pad = self.processing_class.pad_token_id

        sampler: IncrementalSampler | None = None

        def generate(contexts: list[list[int]], caps: list[int], rows: list[int] | None = None, allowed=None):
            nonlocal sampler
            with unwrap_model_for_generation(self.model_wrapped, self.accelerator,
                                             gather_deepspeed3_params=self.args.ds3_gather_for_generation) as m:
                if sampler is None or sampler.model is not m:
                    sampler = IncrementalSampler(m, eos_token_ids=eos, pad_token_id=pad, temperature=temperature,
                                                 top_k=self.top_k or 0,
                                                 top_p=self.top_p if self.top_p is not None else 1.0,
                                                 generator=generator)
                was_training = m.training
                m.eval()
                try:
                    return sampler(contexts, caps, rows, allowed)
                finally:
                    if was_training:
                        m.train()
        generate.accepts_rows = True  # type: ignore[attr-defined]  # one KV cache per rollout, kept across turns
        generate.accepts_allowed = True  # type: ignore[attr-defined]
        return generate

    def _row_specs(self, prompts: list[Any], mode: str) -> list[RowSpec]:
        """Tasks, seeds, groups and experience flags of this rank's rows."""
        args: EvolverGRPOConfig = self.args
        g = self.num_generations if mode == "train" else self.num_generations_eval
        base = self.accelerator.process_index * len(prompts)
        step = self.state.global_step
        parsed = [json.loads(p) if isinstance(p, str) else p for p in prompts]
        sampled: dict[int, dict[str, Any]] = {}
        if any("task" not in p for p in parsed):
            if self.task_sampler is None:
                raise ValueError("dataset rows are task slots but no mechanism has a task_sampler hook")
            n_groups = self.accelerator.num_processes * len(prompts) // g
            tasks = None
            if self.accelerator.is_main_process:
                tasks = self.task_sampler(n_groups, derive_seed(args.rollout_seed, "tasks", mode, step))
            sampled = dict(enumerate(_broadcast(tasks)))
        first_of_group: dict[int, Any] = {}
        for i, p in enumerate(parsed):  # advantages are normalised per group: its rows must be one task
            if first_of_group.setdefault((base + i) // g, p) != p:
                raise RuntimeError(f"rows of group {(base + i) // g} carry different prompts; the sampler must "
                                   f"repeat each prompt num_generations={g} times in a row (TRL's RepeatSampler)")
        rows = []
        for i, p in enumerate(parsed):
            group, pos = divmod(base + i, g)
            task = p["task"] if "task" in p else sampled[group]
            context = RowContext(mode=mode, step=step, group=group, index=pos, group_size=g, seed=args.rollout_seed)
            rows.append(RowSpec(task=task, seed=derive_seed(args.rollout_seed, mode, step, group) % 2**31,
                                group=group, options=self._reset_options(context)))
        return rows

    def _reset_options(self, context: RowContext) -> dict[str, Any]:
        options: dict[str, Any] = dict(self.args.rollout_options or {}) if context.mode == "train" else {}
        for h in self.hooks:
            if h.reset_options is not None:
                options.update(h.reset_options(context))
        return options

    def _play(self, rows: list[RowSpec], generate: Callable) -> list[Episode]:
        """Training episodes: every mechanism's prompt edits and step rewards applied."""
        args: EvolverGRPOConfig = self.args
        return play_episodes(
            self.env_pool.take(len(rows)), rows, generate, self.codec, max_turns=args.max_turns,
            max_episode_tokens=args.max_episode_tokens, max_turn_tokens=args.max_turn_tokens,
            allowed_actions=allowed_actions_in if args.allowed_actions_only else None,
            prompt_edits=self.prompt_edits,
            step_rewards=self.labeller.step_rewards if self.labeller is not None else None,
            finish_cut=self._finish_cut_episode if any(h.finish_cut_episode for h in self.hooks) else None,
            outcome_key=args.outcome_key, invalid_action_penalty=args.invalid_action_penalty,
            mask_truncated=args.mask_truncated_episodes)

    def _finish_cut_episode(self, trajectory: Trajectory) -> dict[str, Any]:
        """What every mechanism writes at the end of an episode, for one the trainer cut."""
        entries: dict[str, Any] = {}
        for h in self.hooks:
            if h.finish_cut_episode is not None:
                entries.update(h.finish_cut_episode(trajectory) or {})
        return entries

    def _rollout(self, prompts: list[Any], trainer: GRPOTrainer) -> dict[str, Any]:
        """TRL ``rollout_func``: play this rank's rows (G consecutive rows per task) and return tokens."""
        args: EvolverGRPOConfig = self.args
        mode = "train" if self.model.training else "eval"
        rows = self._row_specs(prompts, mode)
        seed = derive_seed(args.rollout_seed, "sample", mode, self.state.global_step, self.accelerator.process_index)
        with rollout_scope(self._generate_fn(self.temperature, seed)) as generate:
            episodes = self._play(rows, generate)
        self._episodes = episodes
        # TRL scores the old and reference log-probs of these rows before returning to us: restricted too.
        self._logp_restriction = [ep.restricted for ep in episodes]
        self.plugin_state["rollouts"] += 1
        logprobs = None
        if self.use_vllm:  # sampling log-probs only mean something for the rows trained in their own context
            logprobs = [[None if ep.stripped else lp for lp in ep.tokens.logprobs] for ep in episodes]
        return {"prompt_ids": [ep.train_prompt_ids for ep in episodes],
                "completion_ids": [ep.tokens.completion_ids for ep in episodes],
                "env_mask": [ep.tokens.env_mask for ep in episodes],
                "logprobs": logprobs,
                "outcome": [ep.outcome for ep in episodes]}

    # -- advantages ----------------------------------------------------------------------------
    def current_alpha(self, step: int | None = None) -> float:
        """The weight of the step rewards at ``step`` (the labelling mechanism's schedule; 0 without one)."""
        if self.labeller is None or self.labeller.step_reward_weight is None:
            return 0.0
        return float(self.labeller.step_reward_weight(self.state.global_step if step is None else step))

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        try:
            out = super()._generate_and_score_completions(inputs)
        finally:
            self._logp_restriction = None
        args: EvolverGRPOConfig = self.args
        mode = "train" if self.model.training else "eval"
        g = self.num_generations if mode == "train" else self.num_generations_eval
        episodes = self._episodes
        if len(episodes) != out["completion_ids"].size(0):
            raise RuntimeError(f"{len(episodes)} episodes for {out['completion_ids'].size(0)} rows")
        local = [_summary(ep) for ep in episodes]
        merged, mine = gather_episodes(local)
        # A multi-seat game's learning seats are compared with the same seat of the group's other games.
        signals = [EpisodeSignals(group=j // g if s["slot"] is None else (j // g, s["slot"]), outcome=s["outcome"],
                                  step_rewards=s["rewards"], labels=s["labels"], anchors=s["anchors"])
                   for j, s in enumerate(merged)]
        alpha = self.current_alpha() if mode == "train" else 0.0
        step_adv, stats = combine_step_advantages(
            signals, alpha=alpha, omega=args.gigpo_omega, gamma=args.gigpo_gamma, scale_outcome=args.scale_outcome,
            equal_trajectory_weight=args.attribution_equal_trajectory_weight)
        width = out["completion_ids"].size(1)
        adv = np.zeros((len(episodes), width), dtype=np.float32)
        for r, (ep, a) in enumerate(zip(episodes, step_adv[mine])):
            ids = ep.tokens.step_ids
            adv[r, : len(ids)] = token_advantages(ids, a)
        advantages = torch.tensor(adv, device=out["completion_ids"].device)
        if "tool_mask" in out:  # env tokens never carry advantage (they also never enter the loss)
            advantages = advantages * out["tool_mask"]
        out["advantages"] = advantages
        # NaN = TRL's clip; a number = the upper clip of a row trained on an edited prompt.
        out["clip_high"] = torch.tensor([float("nan") if ep.clip_high is None else float(ep.clip_high)
                                         for ep in episodes], device=advantages.device)
        out["prompt_edit"] = torch.tensor([-1 if ep.trained_edit is None else ep.trained_edit for ep in episodes],
                                          dtype=torch.long, device=advantages.device)
        out["restricted_tokens"] = [ep.restricted for ep in episodes]  # a list: TRL shuffles and splits it per row
        behaviour = [ep.trained_edit is not None and self.prompt_edits[ep.trained_edit].behaviour_ratio
                     for ep in episodes]
        if any(behaviour):
            out["old_per_token_logps"] = self._behaviour_logps(out, episodes, behaviour)
        interval = args.kl_to_start_interval
        if mode == "train" and interval and self.beta == 0.0 and self.state.global_step % interval == 0:
            self._metrics[mode]["kl_to_start"].append(self._kl_to_start(out, episodes))
        self.plugin_state["alpha"] = alpha
        self._log_episode_metrics(mode, merged, stats, alpha)
        for h in self.hooks:
            if h.episode_metrics is not None:
                for key, value in h.episode_metrics([(ep.reset_info, ep.final_info) for ep in episodes]).items():
                    self._metrics[mode][key].append(float(value))
        if mode == "train":
            self.plugin_state["episodes"] += len(merged)
            self._pending_trajectories.extend(ep.trajectory() for ep in episodes)
        return out

    def _log_episode_metrics(self, mode: str, merged: list[dict[str, Any]], stats: dict[str, float],
                             alpha: float) -> None:
        m = self._metrics[mode]
        n = max(len(merged), 1)
        steps = sum(len(s["rewards"]) for s in merged)
        m["env/success_rate"].append(sum(s["success"] for s in merged) / n)
        m["env/return_mean"].append(sum(s["return"] for s in merged) / n)
        m["env/score_mean"].append(sum(s["score"] for s in merged) / n)
        m["env/outcome_mean"].append(sum(s["outcome"] for s in merged) / n)
        m["env/episode_len"].append(steps / n)
        m["env/invalid_action_rate"].append(sum(s["invalid"] for s in merged) / max(steps, 1))
        m["env/truncated_rate"].append(sum(s["truncated"] for s in merged) / n)
        m["env/model_tokens"].append(sum(s["model_tokens"] for s in merged) / n)
        m["env/env_tokens"].append(sum(s["env_tokens"] for s in merged) / n)
        # Rows a mechanism injected into (experience) against plain rows: an injection the policy cannot
        # read shows here as invalid or cut episodes, and it would otherwise hide in the batch means.
        edited = [s for s in merged if s["edited"]]
        if edited:
            m["env/edited_share"].append(len(edited) / n)
            for name, rows in (("env_edited", edited), ("env_plain", [s for s in merged if not s["edited"]])):
                if not rows:
                    continue
                row_steps = max(sum(len(s["rewards"]) for s in rows), 1)
                m[f"{name}/success_rate"].append(sum(s["success"] for s in rows) / len(rows))
                m[f"{name}/invalid_action_rate"].append(sum(s["invalid"] for s in rows) / row_steps)
                m[f"{name}/truncated_rate"].append(sum(s["truncated"] for s in rows) / len(rows))
        for name in ("outcome", "attribution", "anchor"):
            m[f"adv/{name}_share"].append(stats[f"{name}_share"])
            m[f"adv/{name}_abs_mean"].append(stats[f"{name}_abs"])
        m["adv/alpha"].append(alpha)

    def _behaviour_logps(self, out: dict[str, Any], episodes: list[Episode], behaviour: list[bool]) -> torch.Tensor:
        """Old log-probs where the rows in ``behaviour`` take the log-probs they were sampled with.

        Those rows were sampled on the injected prompt and are trained on the plain one: their sampling
        log-probs are the behaviour policy's, so the ratio the loss clips is the off-policy correction.
        Without old log-probs from TRL (one iteration, one optimiser step per generation) every row takes
        its sampling log-probs, which the other rows' current log-probs equal (the same weights sampled).
        """
        old = out.get("old_per_token_logps")
        sampled = torch.zeros_like(out["completion_ids"], dtype=torch.float32)
        for r, ep in enumerate(episodes):
            sampled[r, : len(ep.tokens.logprobs)] = torch.tensor(ep.tokens.logprobs, dtype=torch.float32)
        if old is None:
            return sampled
        rows = torch.tensor(behaviour, device=old.device).unsqueeze(1)
        return torch.where(rows, sampled.to(old.device, old.dtype), old)

    def _keep_start_model(self) -> Any:
        """The frozen starting weights of a full model (copied the first time, when training begins);
        ``None`` for a PEFT model, whose base weights are the start."""
        model = self.accelerator.unwrap_model(self.model)
        if self._start_model is None and not hasattr(model, "disable_adapter"):
            import copy
            import types

            from trl.trainer.utils import add_fused_lm_head

            start = copy.deepcopy(model).eval().requires_grad_(False)
            # The copied forward is TRL's fused head, whose plain path calls the *original* model's forward
            # (a closure): give the copy its own class forward, then a fused head of its own.
            start.forward = types.MethodType(type(start).forward, start)
            add_fused_lm_head(start, temperature=self.temperature, cast_lm_head_to_fp32=self.args.cast_lm_head_to_fp32)
            self._start_model = start
        return self._start_model

    def _kl_to_start(self, out: dict[str, Any], episodes: list[Episode]) -> float:
        """KL(policy || starting policy) on this batch's model tokens (k3 estimator, as TRL's ``kl``).

        The policy's log-probs are the sampling ones (the weights that acted; renormalised where sampling
        was restricted); the starting policy scores the same tokens the same way.
        """
        model = self.accelerator.unwrap_model(self.model)
        device = out["completion_ids"].device
        current = torch.zeros_like(out["completion_ids"], dtype=torch.float32)
        for r, ep in enumerate(episodes):
            current[r, : len(ep.tokens.logprobs)] = torch.tensor(ep.tokens.logprobs, dtype=torch.float32)
        ids = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
        mask = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
        keep = out["completion_ids"].size(1)
        self._logp_restriction = [ep.restricted for ep in episodes]
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                if hasattr(model, "disable_adapter"):  # PEFT: the base weights are the starting policy
                    with model.disable_adapter():
                        start, _, _ = self._get_per_token_logps_and_entropies(model, ids, mask, keep)
                else:
                    start, _, _ = self._get_per_token_logps_and_entropies(self._keep_start_model(), ids, mask, keep)
        finally:
            self._logp_restriction = None
            if was_training:
                model.train()
        tokens = out["completion_mask"].float() * out.get("tool_mask", torch.ones_like(out["completion_mask"])).float()
        delta = (start.float() - current.to(device)) * tokens
        kl = (torch.exp(delta) - delta - 1.0) * tokens
        totals = self.accelerator.reduce(torch.stack([kl.sum(), tokens.sum()]), reduction="sum")
        return float(totals[0] / totals[1].clamp(min=1.0))

    # -- log-probs -----------------------------------------------------------------------------
    def _get_per_token_logps_and_entropies(self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                                           logits_to_keep: int, batch_size: int | None = None, **kwargs: Any):
        """TRL's log-probs, computed on left-aligned rows so no padding mask is needed.

        TRL left-pads prompts; a padding mask pushes SDPA off its fast causal path (about 2x slower on
        CPU). Shifting each row left by its prompt padding puts every pad at the end, where causal
        attention never lets a real token see it; positions then start at 0 as they did when sampling.
        The log-probs are read back at each row's own offset: the values are the same, only cheaper.
        """
        text_only = all(v is None for k, v in kwargs.items() if k not in ("compute_entropy", "compute_aux_loss"))
        restriction = self._logp_restriction if text_only and any(self._logp_restriction or ()) else None
        if restriction is not None and len(restriction) != input_ids.size(0):
            raise RuntimeError(f"{len(restriction)} restriction records for {input_ids.size(0)} rows")
        lead = (attention_mask.cumsum(1) == 0).sum(1)  # left padding per row
        if not text_only or attention_mask.dim() != 2 or not bool(lead.any()):
            if restriction is not None:
                logps, entropies = self._restricted_logps(model, input_ids, attention_mask, logits_to_keep,
                                                          restriction, [0] * len(restriction), batch_size,
                                                          bool(kwargs.get("compute_entropy")))
                return self._captured(logps), entropies, None
            logps, entropies, aux = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, **kwargs)
            return self._captured(logps), entropies, aux
        width = input_ids.size(1)
        cols = torch.arange(width, device=input_ids.device)
        shifted = torch.gather(input_ids, 1, (cols.unsqueeze(0) + lead.unsqueeze(1)) % width)
        extra = int(lead.max().item())
        if restriction is not None:
            logps, entropies = self._restricted_logps(model, shifted, torch.ones_like(attention_mask),
                                                      logits_to_keep + extra, restriction,
                                                      (extra - lead).tolist(), batch_size,
                                                      bool(kwargs.get("compute_entropy")))
            aux = None
        else:
            logps, entropies, aux = super()._get_per_token_logps_and_entropies(
                model, shifted, torch.ones_like(attention_mask), logits_to_keep + extra, batch_size, **kwargs)
        # Kept column k of a shifted row is original completion column k - extra + lead.
        index = (extra - lead).unsqueeze(1) + torch.arange(logits_to_keep, device=input_ids.device).unsqueeze(0)
        logps = torch.gather(logps, 1, index)
        if entropies is not None:
            entropies = torch.gather(entropies, 1, index)
        return self._captured(logps), entropies, aux

    def _restricted_logps(self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, keep: int,
                          restriction: Sequence[dict[int, list[int]]], offsets: Sequence[int],
                          batch_size: int | None, compute_entropy: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Per-token log-probs (and entropies) of the policy that acted, for rows sampled under a restriction.

        At a position in ``restriction[r]`` (completion column ``k`` sits at kept column ``offsets[r] + k``)
        the policy sampled from ``softmax(logits / T)`` renormalised over the allowed tokens, so that is the
        distribution scored there; elsewhere it is the plain ``log_softmax(logits / T)``, as TRL computes.
        The logits of the kept columns are materialised (TRL's fused head returns log-probs only), in row
        chunks of about 2**26 values.
        """
        temperature = max(float(self.temperature), 1e-6)
        vocab = int(model.get_output_embeddings().weight.size(0)) if hasattr(model, "get_output_embeddings") \
            else 32_000
        chunk = max(1, min(batch_size or input_ids.size(0), 2**26 // max((keep + 1) * vocab, 1)))
        all_logps, all_entropies = [], []
        for start in range(0, input_ids.size(0), chunk):
            end = min(start + chunk, input_ids.size(0))
            with self.accelerator.autocast():
                out = model(input_ids=input_ids[start:end], attention_mask=attention_mask[start:end],
                            logits_to_keep=keep + 1, use_cache=False)
            logits = out.logits[:, :-1].float() / temperature
            targets = input_ids[start:end, -keep:]
            norm = torch.logsumexp(logits, -1)
            logps = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - norm
            entropies = norm - (torch.softmax(logits, -1) * logits).sum(-1) if compute_entropy else None
            rows, cols, sets = [], [], []
            for r in range(start, end):
                for k, tokens in (restriction[r] or {}).items():
                    c = int(offsets[r]) + int(k)
                    if 0 <= c < keep:
                        rows.append(r - start)
                        cols.append(c)
                        sets.append(tokens)
            if rows:
                width = max(len(t) for t in sets)
                index = torch.zeros((len(sets), width), dtype=torch.long, device=logits.device)
                valid = torch.zeros((len(sets), width), dtype=torch.bool, device=logits.device)
                for j, tokens in enumerate(sets):
                    index[j, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
                    valid[j, : len(tokens)] = True
                r_idx = torch.tensor(rows, device=logits.device)
                c_idx = torch.tensor(cols, device=logits.device)
                at = logits[r_idx, c_idx]  # (positions, vocab)
                allowed = at.gather(1, index).masked_fill(~valid, float("-inf"))
                allowed_norm = torch.logsumexp(allowed, -1)
                chosen = at.gather(1, targets[r_idx, c_idx].unsqueeze(1)).squeeze(1)
                logps = logps.index_put((r_idx, c_idx), chosen - allowed_norm)
                if entropies is not None:
                    p = torch.softmax(allowed, -1)
                    restricted_entropy = allowed_norm - (p * allowed.masked_fill(~valid, 0.0)).sum(-1)
                    entropies = entropies.index_put((r_idx, c_idx), restricted_entropy)
            all_logps.append(logps)
            if entropies is not None:
                all_entropies.append(entropies)
        return torch.cat(all_logps), (torch.cat(all_entropies) if compute_entropy else None)

    def _captured(self, logps: torch.Tensor) -> torch.Tensor:
        """Keeps the loss's own log-probs (only inside ``_compute_loss``) for the ratio metrics."""
        if self._capture_logps:
            self._loss_logps = logps.detach()
        return logps

    # -- loss ----------------------------------------------------------------------------------
    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """TRL's loss; rows trained on an edited prompt get their mechanism's upper clip.

        Also logs the importance ratio the loss saw (``ratio/mean``, ``ratio/max_deviation``) and gives
        each mechanism the clip statistics of the rows it edited (``TrainingHooks.clip_metrics``).
        """
        clip = inputs.get("clip_high")
        self._capture_logps, self._loss_logps = True, None
        self._logp_restriction = inputs.get("restricted_tokens")
        try:
            if clip is None or not bool((~torch.isnan(clip)).any()):
                loss = super()._compute_loss(model, inputs)
            else:
                low, high = self.epsilon_low, self.epsilon_high
                # TRL clamps with ``1 - epsilon_low`` / ``1 + epsilon_high``: per-row tensors broadcast over tokens.
                self.epsilon_high = torch.where(torch.isnan(clip), torch.tensor(float(high), device=clip.device),
                                                clip).view(-1, 1)
                self.epsilon_low = torch.full_like(self.epsilon_high, float(low))
                try:
                    loss = super()._compute_loss(model, inputs)
                finally:
                    self.epsilon_low, self.epsilon_high = low, high
        finally:
            self._capture_logps, self._logp_restriction = False, None
        logps, self._loss_logps = self._loss_logps, None
        if logps is not None:
            self._log_ratio_metrics(inputs, logps)
        return loss

    def _log_ratio_metrics(self, inputs: dict[str, Any], logps: torch.Tensor) -> None:
        """The importance ratio of this loss computation, and the clip of each mechanism's edited rows.

        The ratio is exactly 1 when TRL has no old log-probs (``num_iterations = 1`` and one optimiser
        step per generation): the clip can only act once the batch is reused or split over steps.
        """
        mode = "train" if self.model.training else "eval"
        mask = inputs["completion_mask"].to(logps.dtype)
        if "tool_mask" in inputs:  # TRL's loss mask: model tokens only
            mask = mask * inputs["tool_mask"]
        old = inputs.get("old_per_token_logps")
        log_ratio = logps - old if old is not None else torch.zeros_like(logps)
        if self.importance_sampling_level == "sequence":  # TRL's sequence-level weight, one per row
            log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1).expand_as(mask)
        ratio = torch.exp(log_ratio)
        deviation = (ratio - 1).abs() * mask
        totals = self.accelerator.reduce(torch.stack([(ratio * mask).sum(), mask.sum()]), reduction="sum")
        self._metrics[mode]["ratio/mean"].append((totals[0] / totals[1].clamp(min=1.0)).item())
        self._metrics[mode]["ratio/max_deviation"].append(
            self.accelerator.gather(deviation.max().reshape(1)).max().item())
        edited = inputs.get("prompt_edit")
        if edited is None:
            return
        advantages = inputs["advantages"]
        advantages = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
        clip = torch.nan_to_num(inputs["clip_high"], nan=float(self.epsilon_high)).view(-1, 1)
        for index, hook in enumerate(self._edit_hooks):
            if hook.clip_metrics is None or not hook.train_on_plain_observation:
                continue
            rows = edited == index
            m = mask * rows.unsqueeze(1).to(mask.dtype)
            low = ((ratio < 1 - self.epsilon_low) & (advantages < 0)).to(m.dtype) * m
            high = ((ratio > 1 + clip) & (advantages > 0)).to(m.dtype) * m
            counts = self.accelerator.reduce(torch.stack([rows.sum().to(m.dtype), m.sum(), low.sum(), high.sum(),
                                                          (ratio * m).sum()]), reduction="sum")
            worst = self.accelerator.gather((deviation * m).max().reshape(1)).max().item()
            if counts[0].item() == 0:
                continue
            stats = ClipStats(rows=int(counts[0].item()), tokens=int(counts[1].item()), low=int(counts[2].item()),
                              high=int(counts[3].item()), ratio_sum=float(counts[4].item()),
                              max_ratio_deviation=float(worst))
            for key, value in (hook.clip_metrics(stats) or {}).items():
                self._metrics[mode][key].append(float(value))

    # -- evaluation ----------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate_episodes(self, tasks: Sequence[Task | dict[str, Any]], *, temperature: float | None = None,
                          seed: int = 0, details: bool = False) -> dict[str, Any]:
        """Play each task once with the current policy on the evaluation engine of ``evolver eval``.

        The mechanisms' ``reset_options`` in ``eval`` mode apply (no experience); the sampler is the
        training one. Returns success rate, mean score, episode length and invalid-action rate; with
        ``details`` also the success rate's 95% Wilson interval and the evaluation ``sample`` (which
        episodes were played, with a fingerprint).
        """
        from .evaluation import evaluate_policy

        args: EvolverGRPOConfig = self.args
        temp = args.evolver_eval_temperature if temperature is None else temperature
        tasks = [Task.from_dict(t) if isinstance(t, dict) else t for t in tasks]
        options = self._reset_options(RowContext(mode="eval", step=self.state.global_step, group=0, index=0,
                                                 group_size=1, seed=args.rollout_seed))
        report = evaluate_policy(
            None, self.processing_class, args.env_id, tasks=tasks, k=1, temperature=temp, rollout=args,
            env_factory=self.env_pool.factory, reset_options=options,
            reset_seeds=[derive_seed(args.rollout_seed, "eval", seed, i) % 2**31 for i in range(len(tasks))],
            sampler=lambda start: self._generate_fn(temp, derive_seed(args.rollout_seed, "eval-sample", seed, start)),
            batch_size=max(args.per_device_train_batch_size, 64),  # wider batches amortise each decoding step
            eos_token_ids=self.eos_token_ids, progress=details)  # details: evolver train's before/after RL
        result = {key: report[key] for key in ("success_rate", "score", "episode_len", "invalid_action_rate")}
        if details:
            result.update(success_rate_ci95=report["success_rate_ci95"], sample=report["sample"])
        return result

    # -- checkpoints ---------------------------------------------------------------------------
    def plugin_state_dict(self) -> dict[str, Any]:
        """Counters, schedules and the state of every stateful mechanism part."""
        state = {"plugin": dict(self.plugin_state), "global_step": self.state.global_step,
                 "rollout_seed": self.args.rollout_seed, "hooks": {}}
        for h in self.hooks:
            for name, obj in h.stateful.items():
                state["hooks"][name] = obj.state_dict()
        return state

    def load_plugin_state_dict(self, state: dict[str, Any]) -> None:
        self.plugin_state.update(state.get("plugin", {}))
        saved = state.get("hooks", {})
        for h in self.hooks:
            for name, obj in h.stateful.items():
                if name in saved:
                    obj.load_state_dict(saved[name])

    def save_plugin_state(self, folder: str) -> None:
        """Write the plugin state into a checkpoint folder (atomically: a kill never leaves half a file)."""
        tmp = os.path.join(folder, PLUGIN_STATE_FILE + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.plugin_state_dict(), fh, default=str)
        os.replace(tmp, os.path.join(folder, PLUGIN_STATE_FILE))

    def train(self, resume_from_checkpoint: str | bool | None = None, *args: Any, **kwargs: Any):
        """``Trainer.train``; on resume, the plugin state saved with the checkpoint is restored first."""
        if self.args.kl_to_start_interval and self.beta == 0.0:
            self._keep_start_model()
        checkpoint = resume_from_checkpoint
        if checkpoint is True:  # the newest checkpoint whose save finished (a killed save is skipped)
            checkpoint = last_complete_checkpoint(self.args.output_dir)
        if isinstance(checkpoint, str) and checkpoint:
            path = os.path.join(checkpoint, PLUGIN_STATE_FILE)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    self.load_plugin_state_dict(json.load(fh))
        return super().train(checkpoint, *args, **kwargs)

    def end_distributed(self) -> None:
        """Close a multi-process run: wait for every rank, free the DDP wrapper, destroy the process group.

        Call it once, after the last use of the trainer's model; in a single-process run it only ends
        the accelerator's trackers. The DDP wrapper holds the gloo process group and its worker
        threads: left to interpreter exit, their teardown can abort the process (SIGABRT, "terminate
        called without an active exception") after a run that succeeded, so they are released here
        while Python is alive.
        """
        acc = self.accelerator
        if acc.num_processes > 1:
            acc.wait_for_everyone()
            acc.free_memory()  # drops the accelerator's references to the wrapped model and optimizer
            self.model_wrapped = self.model
            gc.collect()
        acc.end_training()


def _summary(ep: Episode) -> dict[str, Any]:
    """The picklable per-episode record gathered across ranks."""
    return {"outcome": ep.outcome, "rewards": [s.reward for s in ep.steps], "labels": ep.labels,
            "anchors": ep.anchors, "success": bool(ep.success), "score": ep.score, "return": ep.env_return,
            "invalid": ep.invalid_actions, "truncated": bool(ep.truncated and not ep.terminated),
            "edited": bool(ep.edited), "slot": ep.seat_slot,
            "model_tokens": int(sum(ep.tokens.env_mask)),
            "env_tokens": int(len(ep.tokens.env_mask) - sum(ep.tokens.env_mask))}


class MechanismCallback(TrainerCallback):
    """After each optimiser step: the step's training episodes to every mechanism, then its periodic work.

    What the hooks return is logged with the step's metrics and added up in ``plugin_state["totals"]``;
    the plugin state goes into every checkpoint (``on_save``).
    """

    def __init__(self, trainer: EvolverGRPOTrainer):
        self.trainer = trainer

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        t = self.trainer
        pending, t._pending_trajectories = t._pending_trajectories, []
        for h in t.hooks:
            results: dict[str, float] = {}
            if h.on_episodes is not None and pending:
                results.update(h.on_episodes(pending) or {})
            if h.on_step_end is not None:
                results.update(h.on_step_end(state.global_step) or {})
            for key, value in results.items():
                t.plugin_state["totals"][key] = t.plugin_state["totals"].get(key, 0.0) + float(value)
                t._metrics["train"][key].append(float(value))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if args.should_save:
            folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
            if os.path.isdir(folder):
                self.trainer.save_plugin_state(folder)


class ConciseProgressCallback(ProgressCallback):
    """TRL's progress bar, with one short line per log instead of the full metrics dict.

    Every metric still goes to TensorBoard; the console shows what a person watches a run for.
    """

    KEYS = (("env/success_rate", "success", "{:.2f}"), ("env/score_mean", "score", "{:.2f}"),
            ("env/episode_len", "steps", "{:.1f}"), ("env/invalid_action_rate", "invalid", "{:.2f}"))
    # TRL's "loss" with one iteration is minus the token-weighted mean advantage, not a measure of progress.
    TAIL = (("frac_reward_zero_std", "zero-var groups", "{:.2f}"), ("kl_to_start", "kl", "{:.4f}"),
            ("clip_ratio/region_mean", "clip", "{:.3f}"), ("adv/alpha", "alpha", "{:.3f}"),
            ("eval_train_env/success_rate", "probe train", "{:.2f}"), ("eval_env/success_rate", "probe held-out",
                                                                        "{:.2f}"),
            ("loss", "surrogate loss", "{:.4f}"), ("step_time", "s/step", "{:.1f}"))

    def __init__(self, max_str_len: int = 100, extra_keys: Sequence[tuple[str, str]] = ()):
        """``extra_keys``: (metric key, label) pairs shown after the environment's (the mechanisms' own)."""
        super().__init__(max_str_len=max_str_len)
        self.keys = self.KEYS + tuple((key, label, "{:.2f}") for key, label in extra_keys) + self.TAIL

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not (state.is_world_process_zero and self.training_bar is not None and logs):
            return
        parts = []
        for key, name, fmt in self.keys:
            if key in logs:
                try:
                    parts.append(f"{name} {fmt.format(float(logs[key]))}")
                except (TypeError, ValueError):
                    continue
        if parts:
            self.training_bar.write(f"step {state.global_step}: " + " | ".join(parts))


class TimeBudgetCallback(TrainerCallback):
    """Stops training once ``minutes`` of wall time have passed since ``train()`` began."""

    def __init__(self, minutes: float):
        if minutes <= 0:
            raise ValueError(f"minutes must be > 0, got {minutes!r}")
        self.seconds, self.started = 60.0 * minutes, None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.started = time.monotonic()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.started is not None and time.monotonic() - self.started >= self.seconds:
            control.should_training_stop = True
            if state.global_step < state.max_steps:  # a result cut short by a slow machine must say so
                warnings.warn(f"max_train_minutes={self.seconds / 60:g} stopped training at step {state.global_step} "
                              f"of {state.max_steps}: the run depends on this machine's speed; raise the budget or "
                              f"set it to 0 to run every step", RuntimeWarning, stacklevel=2)


class SlowRunWarningCallback(TrainerCallback):
    """Warns once when the projected GRPO wall time exceeds ``factor`` times ``expected_minutes``.

    Training is budgeted in steps, so a slow or loaded machine gives the same result later; this says so
    early instead of leaving the user to guess. The projection starts after ``warmup_steps`` steps.
    """

    def __init__(self, expected_minutes: float, factor: float = 2.0, warmup_steps: int = 3):
        if expected_minutes <= 0:
            raise ValueError(f"expected_minutes must be > 0, got {expected_minutes!r}")
        if factor <= 1:
            raise ValueError(f"factor must be > 1, got {factor!r}")
        self.expected_minutes, self.factor, self.warmup_steps = expected_minutes, factor, warmup_steps
        self.started: float | None = None
        self.first_step, self.warned = 0, False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.started, self.first_step = time.monotonic(), state.global_step

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        done = state.global_step - self.first_step
        if self.warned or self.started is None or done < self.warmup_steps:
            return
        per_step = (time.monotonic() - self.started) / done
        projected = per_step * (state.max_steps - self.first_step) / 60.0
        if projected > self.factor * self.expected_minutes:
            self.warned = True
            warnings.warn(f"GRPO is running slower than expected: {per_step:.1f} s a step projects "
                          f"{projected:.1f} minutes for {state.max_steps} steps (expected about "
                          f"{self.expected_minutes:g}); every step still runs, so the result does not change, "
                          f"only the wait (is the machine loaded?)", RuntimeWarning, stacklevel=2)


class EvaluationCallback(TrainerCallback):
    """Plays the evaluation tasks every ``evolver_eval_interval`` steps; logs ``eval_env/*``."""

    def __init__(self, trainer: EvolverGRPOTrainer):
        self.trainer = trainer
        self.history: list[dict[str, float]] = []

    def _run(self, state: Any) -> dict[str, float]:
        t = self.trainer
        logs: dict[str, float] = {}
        record: dict[str, Any] = {"step": state.global_step}
        if t.args.evolver_eval_episodes and t.eval_tasks:
            result = t.evaluate_episodes(t.eval_tasks[: t.args.evolver_eval_episodes])
            record.update(result)
            logs.update({f"eval_env/{k}": v for k, v in result.items()})
        if t.args.evolver_eval_train_episodes and t.probe_tasks:
            result = t.evaluate_episodes(t.probe_tasks[: t.args.evolver_eval_train_episodes], seed=2)
            record.update({f"train_{k}": v for k, v in result.items()})
            logs.update({f"eval_train_env/{k}": v for k, v in result.items()})
        self.history.append(record)
        return logs

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        interval = self.trainer.args.evolver_eval_interval
        if interval and state.global_step % interval == 0 and state.global_step < state.max_steps:
            # Logged with the step's own metrics (calling ``log`` here would flush them early).
            for key, value in self._run(state).items():
                self.trainer._metrics["train"][key].append(value)

