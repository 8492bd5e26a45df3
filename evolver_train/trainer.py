"""``EvolverGRPOTrainer``: TRL's GRPO trainer driven by multi-turn environment rollouts.

* ``EvolverGRPOTrainer`` - ``GRPOTrainer`` with our ``rollout_func`` (grouped environment pool,
  token-exact episodes), per-token advantages (outcome + ADCA + GiGPO), experience stripping with a
  boosted clip, environment metrics and plugin state saved with each checkpoint.
* ``TrainingHooks`` - the services the mechanisms expose to the trainer (task sampler, synthesis
  cycle, experience sink, stateful parts).
* ``SelfQuestioningCallback``, ``ExperienceCallback``, ``EvaluationCallback`` - the periodic work;
  ``TimeBudgetCallback`` stops training after a wall-time budget.
* ``task_dataset`` - the training dataset: one row per task (fixed tasks) or per slot (sampled).

TRL hooks used (pinned to ``trl~=1.16.0``, checked by ``tests/train/test_trl_hooks.py``):
``rollout_func``, ``_generate_and_score_completions`` (advantages replaced with a ``(B, T)`` tensor),
``_compute_loss`` (per-row clip range for stripped experience rows), ``_save_checkpoint`` and
``_load_optimizer_and_scheduler`` (plugin state).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ProgressCallback
from trl import GRPOTrainer
from trl.models.utils import unwrap_model_for_generation

from evolver_gym.core import Task, derive_seed, make_rng

from .advantages import EpisodeSignals, combine_step_advantages, cosine_alpha, gather_episodes, token_advantages
from .config import EvolverGRPOConfig
from .generation import VLLMGenerate, rollout_scope
from .rollout import ChatCodec, EnvPool, Episode, IncrementalSampler, RowSpec, play_episodes

__all__ = ["EvolverGRPOTrainer", "TrainingHooks", "SelfQuestioningCallback", "ExperienceCallback",
           "EvaluationCallback", "TimeBudgetCallback", "ConciseProgressCallback", "task_dataset", "PLUGIN_STATE_FILE"]

PLUGIN_STATE_FILE = "evolver_state.json"


@dataclass
class TrainingHooks:
    """What the mechanism wrappers offer the trainer; every member is optional.

    Args:
        task_sampler: ``(n, seed) -> list[task dict]`` drawing tasks for ``n`` groups (self-questioning
            pool); used for dataset rows that are slots rather than fixed tasks.
        questioning_cycle: ``(step) -> {"generated": int, "accepted": int}``; one synthesis cycle.
        experience_sink: ``(trajectories) -> int``; turns training episodes into experience, returns
            how many records were added.
        stateful: name -> object with ``state_dict()`` / ``load_state_dict(state)``, saved with checkpoints.
    """

    task_sampler: Callable[[int, int], list[dict[str, Any]]] | None = None
    questioning_cycle: Callable[[int], dict[str, int]] | None = None
    experience_sink: Callable[[list[Any]], int] | None = None
    stateful: dict[str, Any] = field(default_factory=dict)


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
        hooks: ``TrainingHooks`` of the mechanisms (overall mode).
        processing_class, peft_config, callbacks, eval_dataset: as in ``GRPOTrainer``.

    Example:
        >>> trainer = EvolverGRPOTrainer(model, args=cfg, env_factory=lambda: gym.make("evolver/WebShop-v0"),
        ...                              tasks=env.unwrapped.tasks("train"))   # doctest: +SKIP
        >>> trainer.train()                                                     # doctest: +SKIP
    """

    _tag_names = ["trl", "grpo", "evolver-gym"]

    def __init__(self, model: Any, args: EvolverGRPOConfig, env_factory: Callable[[], Any], *,
                 train_dataset: Any = None, tasks: Sequence[Task | dict[str, Any]] | None = None,
                 hooks: TrainingHooks | None = None, processing_class: Any = None, peft_config: Any = None,
                 callbacks: list[TrainerCallback] | None = None, eval_dataset: Any = None,
                 eval_tasks: Sequence[Task | dict[str, Any]] | None = None):
        if not isinstance(args, EvolverGRPOConfig):
            raise TypeError(f"args must be an EvolverGRPOConfig, got {type(args).__name__}")
        self.hooks = hooks or TrainingHooks()
        if train_dataset is None:
            if tasks:
                train_dataset = task_dataset(tasks)
            elif self.hooks.task_sampler is not None:
                train_dataset = task_dataset(slots=max(args.per_device_train_batch_size, 64))
            else:
                raise ValueError("give train_dataset, tasks, or hooks.task_sampler")
        self.env_pool = EnvPool(env_factory)
        self._episodes: list[Episode] = []
        self._pending_trajectories: list[Any] = []
        self.plugin_state: dict[str, Any] = {"rollouts": 0, "episodes": 0, "questioning_cycles": 0,
                                             "tasks_generated": 0, "tasks_accepted": 0, "experiences_added": 0,
                                             "alpha": args.attribution_alpha}
        self.eval_tasks = [Task.from_dict(t) if isinstance(t, dict) else t for t in (eval_tasks or [])]
        own_callbacks: list[TrainerCallback] = [ExperienceCallback(self)]
        if args.questioning_interval and self.hooks.questioning_cycle is not None:
            own_callbacks.append(SelfQuestioningCallback(self, args.questioning_interval))
        if args.evolver_eval_episodes and args.evolver_eval_interval and self.eval_tasks:
            own_callbacks.append(EvaluationCallback(self))
        if args.max_train_minutes:
            own_callbacks.append(TimeBudgetCallback(args.max_train_minutes))
        super().__init__(model=model, reward_funcs=[_outcome_reward], args=args, train_dataset=train_dataset,
                         eval_dataset=eval_dataset, processing_class=processing_class,
                         callbacks=own_callbacks + list(callbacks or []), peft_config=peft_config,
                         rollout_func=self._rollout)
        if any(isinstance(c, ProgressCallback) for c in self.callback_handler.callbacks):
            self.remove_callback(ProgressCallback)
            self.add_callback(ConciseProgressCallback(max_str_len=100))
        self.codec = ChatCodec(self.processing_class, system_prompt=args.system_prompt,
                               max_observation_tokens=args.max_observation_tokens, eos_token_ids=self.eos_token_ids)
        if args.experience_mode == "strip" and args.experience_share > 0 and self.loss_type not in (
                "grpo", "bnpo", "dr_grpo", "dapo", "luspo"):
            raise ValueError(f"experience_mode='strip' needs a clipped loss, got loss_type={self.loss_type!r}")

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

        def generate(contexts: list[list[int]], caps: list[int], rows: list[int] | None = None):
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
                    return sampler(contexts, caps, rows)
                finally:
                    if was_training:
                        m.train()
        generate.accepts_rows = True  # type: ignore[attr-defined]  # one KV cache per rollout, kept across turns
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
            if self.hooks.task_sampler is None:
                raise ValueError("dataset rows are task slots but no task_sampler hook was given")
            n_groups = self.accelerator.num_processes * len(prompts) // g
            tasks = None
            if self.accelerator.is_main_process:
                tasks = self.hooks.task_sampler(n_groups, derive_seed(args.rollout_seed, "tasks", mode, step))
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
            experience = None
            if args.experience_share > 0 and mode == "train":
                n_exp = int(args.experience_share * g)
                chosen = make_rng(args.rollout_seed, "experience", step, group).permutation(g)[:n_exp]
                experience = bool(pos in set(chosen.tolist()))
            elif "navigation" in args.wrappers:
                experience = False  # evaluation measures the internalised policy (AgentEvolver woexp)
            rows.append(RowSpec(task=task, seed=derive_seed(args.rollout_seed, mode, step, group) % 2**31,
                                group=group, experience=experience))
        return rows

    def _rollout(self, prompts: list[Any], trainer: GRPOTrainer) -> dict[str, Any]:
        """TRL ``rollout_func``: play this rank's rows (G consecutive rows per task) and return tokens."""
        args: EvolverGRPOConfig = self.args
        mode = "train" if self.model.training else "eval"
        rows = self._row_specs(prompts, mode)
        seed = derive_seed(args.rollout_seed, "sample", mode, self.state.global_step, self.accelerator.process_index)
        with rollout_scope(self._generate_fn(self.temperature, seed)) as generate:
            episodes = play_episodes(
                self.env_pool.take(len(rows)), rows, generate, self.codec,
                max_turns=args.max_turns, max_episode_tokens=args.max_episode_tokens,
                max_turn_tokens=args.max_turn_tokens, strip_experience=args.experience_mode == "strip",
                outcome_key=args.outcome_key, invalid_action_penalty=args.invalid_action_penalty,
                mask_truncated=args.mask_truncated_episodes)
        self._episodes = episodes
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
    def current_alpha(self) -> float:
        a: EvolverGRPOConfig = self.args
        return cosine_alpha(self.state.global_step, alpha=a.attribution_alpha, alpha_min=a.attribution_alpha_min,
                            decay_steps=a.attribution_decay_steps, cutoff_step=a.attribution_cutoff_step)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        out = super()._generate_and_score_completions(inputs)
        args: EvolverGRPOConfig = self.args
        mode = "train" if self.model.training else "eval"
        g = self.num_generations if mode == "train" else self.num_generations_eval
        episodes = self._episodes
        if len(episodes) != out["completion_ids"].size(0):
            raise RuntimeError(f"{len(episodes)} episodes for {out['completion_ids'].size(0)} rows")
        local = [_summary(ep) for ep in episodes]
        merged, mine = gather_episodes(local)
        signals = [EpisodeSignals(group=j // g, outcome=s["outcome"], step_rewards=s["rewards"],
                                  labels=s["labels"], anchors=s["anchors"]) for j, s in enumerate(merged)]
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
        out["experience_mask"] = torch.tensor([float(ep.stripped) for ep in episodes], device=advantages.device)
        self.plugin_state["alpha"] = alpha
        self._log_episode_metrics(mode, merged, stats, alpha)
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
        for name in ("outcome", "attribution", "anchor"):
            m[f"adv/{name}_share"].append(stats[f"{name}_share"])
            m[f"adv/{name}_abs_mean"].append(stats[f"{name}_abs"])
        m["adv/alpha"].append(alpha)
        labelled = [s for s in merged if s["labels"]]
        m["attr/labelled_rate"].append(len(labelled) / n)
        if labelled:
            def good_rate(group: list[dict[str, Any]]) -> float:
                labs = [x for s in group for x in s["labels"]]
                return sum(x > 0 for x in labs) / max(len(labs), 1)
            m["attr/good_rate"].append(good_rate(labelled))
            ok = [s for s in labelled if s["success"]]
            bad = [s for s in labelled if not s["success"]]
            if ok:
                m["attr/good_rate_success"].append(good_rate(ok))
            if bad:
                m["attr/good_rate_failure"].append(good_rate(bad))
        m["exp/usage_rate"].append(sum(s["experience_used"] for s in merged) / n)
        m["exp/stripped_rate"].append(sum(s["stripped"] for s in merged) / n)
        m["tasks/synthetic_rate"].append(sum(s["synthetic"] for s in merged) / n)

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
        lead = (attention_mask.cumsum(1) == 0).sum(1)  # left padding per row
        if not text_only or attention_mask.dim() != 2 or not bool(lead.any()):
            return super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep,
                                                              batch_size, **kwargs)
        width = input_ids.size(1)
        cols = torch.arange(width, device=input_ids.device)
        shifted = torch.gather(input_ids, 1, (cols.unsqueeze(0) + lead.unsqueeze(1)) % width)
        extra = int(lead.max().item())
        logps, entropies, aux = super()._get_per_token_logps_and_entropies(
            model, shifted, torch.ones_like(attention_mask), logits_to_keep + extra, batch_size, **kwargs)
        # Kept column k of a shifted row is original completion column k - extra + lead.
        index = (extra - lead).unsqueeze(1) + torch.arange(logits_to_keep, device=input_ids.device).unsqueeze(0)
        logps = torch.gather(logps, 1, index)
        if entropies is not None:
            entropies = torch.gather(entropies, 1, index)
        return logps, entropies, aux

    # -- loss ----------------------------------------------------------------------------------
    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """TRL's loss; stripped experience rows get ``experience_clip_high`` as their upper clip."""
        exp = inputs.get("experience_mask")
        if exp is None or not bool(exp.any()):
            return super()._compute_loss(model, inputs)
        low, high = self.epsilon_low, self.epsilon_high
        rows = exp.view(-1, 1).bool()
        # TRL clamps with ``1 - epsilon_low`` / ``1 + epsilon_high``: per-row tensors broadcast over tokens.
        self.epsilon_high = torch.where(rows, torch.tensor(float(self.args.experience_clip_high)),
                                        torch.tensor(float(high))).to(exp.device)
        self.epsilon_low = torch.full_like(self.epsilon_high, float(low))
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self.epsilon_low, self.epsilon_high = low, high

    # -- evaluation ----------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate_episodes(self, tasks: Sequence[Task | dict[str, Any]], *, temperature: float | None = None,
                          seed: int = 0) -> dict[str, float]:
        """Play each task once with the current policy (no experience); success rate and mean score."""
        args: EvolverGRPOConfig = self.args
        temp = args.evolver_eval_temperature if temperature is None else temperature
        exp_flag = False if "navigation" in args.wrappers else None
        rows = [RowSpec(task=t, seed=derive_seed(args.rollout_seed, "eval", seed, i) % 2**31, group=i,
                        experience=exp_flag) for i, t in enumerate(tasks)]
        episodes: list[Episode] = []
        batch = max(args.per_device_train_batch_size, 64)  # wider batches amortise each decoding step
        for start in range(0, len(rows), batch):
            part = rows[start:start + batch]
            # The scope syncs the engine's weights when the policy changed (evaluation after an update).
            with rollout_scope(self._generate_fn(temp, derive_seed(args.rollout_seed, "eval-sample", seed,
                                                                   start))) as generate:
                episodes += play_episodes(
                    self.env_pool.take(len(part)), part, generate, self.codec,
                    max_turns=args.max_turns, max_episode_tokens=args.max_episode_tokens,
                    max_turn_tokens=args.max_turn_tokens, outcome_key=args.outcome_key)
        n = max(len(episodes), 1)
        return {"success_rate": sum(ep.success for ep in episodes) / n,
                "score": sum(ep.score for ep in episodes) / n,
                "episode_len": sum(len(ep.steps) for ep in episodes) / n,
                "invalid_action_rate": sum(ep.invalid_actions for ep in episodes)
                / max(sum(len(ep.steps) for ep in episodes), 1)}

    # -- checkpoints ---------------------------------------------------------------------------
    def plugin_state_dict(self) -> dict[str, Any]:
        """Counters, schedules and the state of every stateful mechanism part."""
        state = {"plugin": dict(self.plugin_state), "global_step": self.state.global_step,
                 "rollout_seed": self.args.rollout_seed, "hooks": {}}
        for name, obj in self.hooks.stateful.items():
            state["hooks"][name] = obj.state_dict()
        return state

    def load_plugin_state_dict(self, state: dict[str, Any]) -> None:
        self.plugin_state.update(state.get("plugin", {}))
        for name, obj in self.hooks.stateful.items():
            if name in state.get("hooks", {}):
                obj.load_state_dict(state["hooks"][name])

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            folder = os.path.join(self._get_output_dir(trial=trial), f"checkpoint-{self.state.global_step}")
            tmp = os.path.join(folder, PLUGIN_STATE_FILE + ".tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self.plugin_state_dict(), fh, default=str)
            os.replace(tmp, os.path.join(folder, PLUGIN_STATE_FILE))  # atomic: a kill never leaves half a file

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            path = os.path.join(checkpoint, PLUGIN_STATE_FILE)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    self.load_plugin_state_dict(json.load(fh))


def _summary(ep: Episode) -> dict[str, Any]:
    """The picklable per-episode record gathered across ranks."""
    q = ep.questioning or {}
    return {"outcome": ep.outcome, "rewards": [s.reward for s in ep.steps], "labels": ep.labels,
            "anchors": ep.anchors, "success": bool(ep.success), "score": ep.score, "return": ep.env_return,
            "invalid": ep.invalid_actions, "truncated": bool(ep.truncated and not ep.terminated),
            "model_tokens": int(sum(ep.tokens.env_mask)),
            "env_tokens": int(len(ep.tokens.env_mask) - sum(ep.tokens.env_mask)),
            "experience_used": ep.experience_used, "stripped": ep.stripped,
            "synthetic": q.get("origin") == "synthetic"}


class ExperienceCallback(TrainerCallback):
    """After each optimiser step, hands the step's training episodes to the experience sink."""

    def __init__(self, trainer: EvolverGRPOTrainer):
        self.trainer = trainer

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        t = self.trainer
        pending, t._pending_trajectories = t._pending_trajectories, []
        if t.hooks.experience_sink is not None and pending:
            added = int(t.hooks.experience_sink(pending) or 0)
            t.plugin_state["experiences_added"] += added
            t._metrics["train"]["exp/added"].append(float(added))


class SelfQuestioningCallback(TrainerCallback):
    """Runs one self-questioning synthesis cycle every ``interval`` optimiser steps."""

    def __init__(self, trainer: EvolverGRPOTrainer, interval: int):
        if interval < 1:
            raise ValueError(f"interval must be >= 1, got {interval!r}")
        self.trainer, self.interval = trainer, interval

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step % self.interval:
            return
        t = self.trainer
        result = t.hooks.questioning_cycle(state.global_step) or {}
        t.plugin_state["questioning_cycles"] += 1
        for key in ("generated", "accepted"):
            t.plugin_state[f"tasks_{key}"] += int(result.get(key, 0))
            t._metrics["train"][f"tasks/{key}"].append(float(result.get(key, 0)))


class ConciseProgressCallback(ProgressCallback):
    """TRL's progress bar, with one short line per log instead of the full metrics dict.

    Every metric still goes to TensorBoard; the console shows what a person watches a run for.
    """

    KEYS = (("env/success_rate", "success", "{:.2f}"), ("env/score_mean", "score", "{:.2f}"),
            ("env/episode_len", "steps", "{:.1f}"), ("env/invalid_action_rate", "invalid", "{:.2f}"),
            ("exp/usage_rate", "exp", "{:.2f}"), ("adv/alpha", "alpha", "{:.3f}"), ("loss", "loss", "{:.4f}"),
            ("step_time", "s/step", "{:.1f}"))

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not (state.is_world_process_zero and self.training_bar is not None and logs):
            return
        parts = []
        for key, name, fmt in self.KEYS:
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


class EvaluationCallback(TrainerCallback):
    """Plays the evaluation tasks every ``evolver_eval_interval`` steps; logs ``eval_env/*``."""

    def __init__(self, trainer: EvolverGRPOTrainer):
        self.trainer = trainer
        self.history: list[dict[str, float]] = []

    def _run(self, state: Any) -> dict[str, float]:
        t = self.trainer
        result = t.evaluate_episodes(t.eval_tasks[: t.args.evolver_eval_episodes])
        self.history.append({**result, "step": state.global_step})
        return {f"eval_env/{k}": v for k, v in result.items()}

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        interval = self.trainer.args.evolver_eval_interval
        if interval and state.global_step % interval == 0 and state.global_step < state.max_steps:
            # Logged with the step's own metrics (calling ``log`` here would flush them early).
            for key, value in self._run(state).items():
                self.trainer._metrics["train"][key].append(value)

