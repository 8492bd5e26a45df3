"""Configuration of the GRPO plugin: TRL's ``GRPOConfig`` plus environments, rollouts and advantages.

* ``EvolverGRPOConfig`` - the training run: TRL's GRPO options, the environment, rollouts, advantages
  and evaluation. Model and LoRA settings are TRL's own ``trl.ModelConfig``; each mechanism's settings
  are its own typed config (``wrappers/<mechanism>/plugin.py``), enabled by name in ``wrappers``.
* ``ConfigError`` - a bad setting: one line naming the key and the value.

The command line (``TrlParser``, YAML plus overrides, one help section per config) is
``evolver_train.train_cli.parse_config``.

Example:
    >>> cfg = EvolverGRPOConfig(output_dir="/tmp/x", env_id="evolver/WebShop-v0", max_turns=8, max_steps=10)
    >>> cfg.max_turns, cfg.max_completion_length == cfg.max_episode_tokens
    (8, True)
    >>> EvolverGRPOConfig(output_dir="/tmp/x", max_steps=0)
    Traceback (most recent call last):
    ...
    evolver_train.errors.ConfigError: max_steps must be >= 1 (GRPO steps to run), got 0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trl import GRPOConfig

from wrappers.plugin import json_mapping

from .errors import ConfigError, check_ranges

__all__ = ["EvolverGRPOConfig", "ConfigError", "NO_TASK_SPLIT", "RENAMED_OPTIONS"]

NO_TASK_SPLIT = "none"  # task_split value: no human task, the questioning pool holds every training task
# old option name -> current one: still read from recipes and flags (`evolver train`, `evolver eval`), with
# one deprecation line each
RENAMED_OPTIONS = {"valid_actions_only": "allowed_actions_only"}


def _json_field(value: Any, name: str) -> dict[str, Any]:
    """A dict from a YAML mapping or a JSON string given on the command line."""
    try:
        return json_mapping(value, name)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


@dataclass
class EvolverGRPOConfig(GRPOConfig):
    """``GRPOConfig`` for multi-turn environment training (AgentEvolver's ADCA-GRPO on TRL).

    TRL's fields keep their meaning (``num_generations`` is G, ``per_device_train_batch_size`` counts
    episodes, ``temperature`` samples actions, ``epsilon``/``epsilon_high`` clip the ratio, ``beta``
    weighs KL). The defaults below differ from TRL's where a CPU run needs it: no bf16 and no gradient
    checkpointing unless a CUDA device is present, a learning rate for LoRA, TensorBoard on.
    """

    _argument_group_name = ("training: GRPO, environment, rollouts, advantages, evaluation "
                            "(the common TRL options; --help-all lists every one)")

    # -- TRL defaults changed for multi-turn CPU-friendly runs ---------------------------------
    learning_rate: float = field(default=1e-5, metadata={
        "help": "AdamW learning rate (TRL's 1e-6 is for full fine-tuning of large models; LoRA and tiny "
                "policies need more)."})
    max_steps: int = field(default=100, metadata={"help": "GRPO optimiser steps to run (>= 1)."})
    logging_steps: float = field(default=1, metadata={"help": "Log every N optimiser steps."})
    report_to: None | str | list[str] = field(default="tensorboard", metadata={
        "help": "Logging integrations ('tensorboard', 'wandb', 'none', ...)."})
    gradient_checkpointing: bool | None = field(default=None, metadata={
        "help": "Deprecated alias of activation_checkpointing; None = on with CUDA, off on CPU."})

    # -- environment ---------------------------------------------------------------------
    env_id: str = field(default="evolver/WebShop-v0", metadata={"help": "Gymnasium id of the text environment."})
    env_kwargs: dict | str | None = field(default=None, metadata={
        "help": "Constructor kwargs of the environment (YAML mapping or JSON string), e.g. "
                "{\"num_products\": 200, \"max_steps\": 8}."})
    wrappers: list[str] = field(default_factory=list, metadata={
        "help": "Mechanisms to stack, innermost first: registered names (questioning, navigation, attribution, "
                "or one of your own). Their settings are in their own sections below. Empty = plain GRPO."})
    task_split: str = field(default="train", metadata={
        "help": "Split whose tasks are trained on; 'none' = no human task at all: with questioning in wrappers, "
                "every training task comes from its pool (questioning_pool filled by `evolver questions synthesize "
                "--seed-split none`, or questioning_initial_tasks), and synthesis explores from goal-free starts."})
    num_train_tasks: int | None = field(default=None, metadata={
        "help": "Use only the first N tasks of the training split (fixed-task mode); None = all."})
    system_prompt: str | None = field(default=None, metadata={
        "help": "System message placed before the first observation; None = no system message."})
    observation_shaping: list[str] = field(default_factory=list, metadata={
        "help": "Observation shapers the environment offers (its observation_shapers), applied right on it; "
                "WebShop: drop_repeated_instruction, top_results=K, numbered_results (clicks by position; "
                "after top_results)."})
    sft: dict | str | None = field(default=None, metadata={
        "help": "Warm start: SFTConfig fields (evolver sft). With it, `evolver train` first "
                "runs SFT on the same environment (env_id, env_kwargs, observation_shaping, system_prompt, "
                "max_observation_tokens, seed are shared) into <output_dir>/sft and trains from that checkpoint."})
    reuse_warm_start: bool = field(default=True, metadata={
        "help": "Reuse <output_dir>/sft when it ran every step of exactly this warm start (its sft_config.json "
                "records the same settings and seed, so training it again would give the same checkpoint) instead "
                "of training it again; false always retrains it (e.g. after changing the library's SFT code)."})

    # -- rollouts --------------------------------------------------------------------------
    max_turns: int = field(default=15, metadata={"help": "Most actions per episode; then it counts as truncated."})
    max_episode_tokens: int = field(default=1024, metadata={
        "help": "Token budget of one episode after the prompt (actions and observations); an episode that "
                "would exceed it ends, truncated."})
    max_turn_tokens: int = field(default=32, metadata={
        "help": "Most tokens sampled for one action; a turn that reaches it is closed with EOS (not trained)."})
    max_observation_tokens: int = field(default=512, metadata={
        "help": "Longest observation in tokens; longer ones keep their head and tail (middle cut)."})
    rollout_options: dict | str | None = field(default=None, metadata={
        "help": "Extra reset options of training rollouts, never of evaluations (YAML mapping or JSON), e.g. "
                "{\"swap_words\": true} with WebShop's swap_words shaper: training episodes in swapped words, so "
                "RL cannot earn reward from a memorised lookup. None = none."})
    allowed_actions_only: bool = field(default=False, metadata={
        "help": "Sample an action only among info['allowed_actions'] where the environment lists them (WebShop: "
                "the clicks of a page without a search bar; Avalon: every legal reply), token by token, in training "
                "rollouts and evaluations; where it lists none (free text: a search box, code) sampling is free. "
                "Needs the local sampler (not vLLM). Formerly valid_actions_only (still read, with a warning)."})
    mask_truncated_episodes: bool = field(default=False, metadata={
        "help": "Do not train on episodes cut by the turn cap or token budget (DAPO overlong filtering)."})
    outcome_key: str = field(default="score", metadata={
        "help": "Episode outcome R for the advantage: 'score' (benchmark-native final score), 'success' "
                "(0/1) or 'return' (sum of environment rewards)."})
    invalid_action_penalty: float = field(default=0.0, metadata={
        "help": "Subtracted from R for each invalid action (verl-agent uses 0.1)."})
    env_backend: str = field(default="local", metadata={
        "help": "Where rollout environments run: 'local' (this process) or 'ray' (Ray actors; see docs/scale-out.md)."})
    env_workers: int = field(default=2, metadata={
        "help": "Ray actors the environments are spread over (env_backend ray)."})
    ray_address: str | None = field(default=None, metadata={
        "help": "Ray cluster to join ('auto', 'ray://head:10001'); None = start or join a local Ray "
                "(env_backend ray)."})
    rollout_seed: int = field(default=0, metadata={
        "help": "Seed of environment resets, experience allocation and action sampling."})

    # -- advantages --------------------------------------------------------------------------
    scale_outcome: bool = field(default=True, metadata={
        "help": "Divide the group-centred outcome by the group's (population) std; False = mean-centred only."})
    attribution_equal_trajectory_weight: bool = field(default=True, metadata={
        "help": "Label z-score statistics weight each trajectory equally (else every step is pooled)."})
    gigpo_omega: float = field(default=0.0, metadata={
        "help": "GiGPO omega: weight of the anchor-state step advantage (1.0 in GiGPO); 0 = off."})
    gigpo_gamma: float = field(default=0.95, metadata={"help": "GiGPO discount of step returns."})

    max_train_minutes: float = field(default=0.0, metadata={
        "help": "Stop GRPO after this much wall time (checked after each step; 0 = run max_steps). Use a "
                "constant lr_scheduler_type with it, since the schedule is laid out over max_steps."})
    expected_train_minutes: float = field(default=0.0, metadata={
        "help": "Expected GRPO wall time on the recipe's reference machine; when the projection after a few "
                "steps exceeds twice this, a warning says so (training still runs every step). 0 = no check."})

    # -- evaluation -----------------------------------------------------------------------
    evolver_eval_split: str = field(default="dev", metadata={"help": "Split of the periodic evaluation."})
    evolver_eval_episodes: int = field(default=0, metadata={
        "help": "Episodes of the periodic evaluation (first N tasks of the split); 0 = no evaluation."})
    evolver_eval_interval: int = field(default=0, metadata={
        "help": "Evaluate every N training steps (and at the end); 0 = only at the end when episodes > 0."})
    evolver_eval_temperature: float = field(default=1.0, metadata={
        "help": "Sampling temperature of evaluation episodes (temperature 1 shows learning; greedy moves less)."})
    evolver_eval_train_episodes: int = field(default=0, metadata={
        "help": "At each periodic evaluation also play the first N training tasks (a fixed probe of goals the "
                "policy trains on), logged as eval_train_env/*: held-out success rising while this probe rises "
                "is learning that transfers; this probe alone rising is memorising. 0 = off."})
    kl_to_start_interval: int = field(default=5, metadata={
        "help": "Every N steps, estimate KL(policy || starting policy) on the step's rollouts (k3 estimator over "
                "model tokens, logged as kl_to_start): how far RL has moved the warm start. PEFT models disable "
                "the adapter for it; a full model keeps a frozen copy of its starting weights. With beta > 0 "
                "TRL logs kl to its reference model instead. 0 = off."})

    def __post_init__(self) -> None:
        self.env_kwargs = _json_field(self.env_kwargs, "env_kwargs")
        self.rollout_options = _json_field(self.rollout_options, "rollout_options")
        self.sft = _json_field(self.sft, "sft") or None
        if isinstance(self.wrappers, str):
            self.wrappers = [w for w in self.wrappers.replace(",", " ").split() if w]
        if len(set(self.wrappers)) != len(self.wrappers):
            raise ConfigError(f"wrappers lists a mechanism twice: {self.wrappers!r}")
        from wrappers.plugin import mechanism_names

        for name in self.wrappers:
            if name not in mechanism_names():
                raise ConfigError(f"wrappers has unknown mechanism {name!r}; registered: {list(mechanism_names())}")
        if self.allowed_actions_only and getattr(self, "use_vllm", False):
            raise ConfigError("allowed_actions_only needs the local sampler; it cannot restrict vLLM's sampling "
                              "(use_vllm: true)")
        if self.outcome_key not in ("score", "success", "return"):
            raise ConfigError(f"outcome_key must be 'score', 'success' or 'return', got {self.outcome_key!r}")
        for name in ("max_turns", "max_episode_tokens", "max_turn_tokens", "max_observation_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.max_steps < 1:
            raise ConfigError(f"max_steps must be >= 1 (GRPO steps to run), got {self.max_steps!r}")
        for name in ("evolver_eval_train_episodes", "kl_to_start_interval"):
            if isinstance(getattr(self, name), bool) or not isinstance(getattr(self, name), int) \
                    or getattr(self, name) < 0:
                raise ConfigError(f"{name} must be an int >= 0, got {getattr(self, name)!r}")
        if self.learning_rate < 0:
            raise ConfigError(f"learning_rate must be >= 0, got {self.learning_rate!r}")
        if self.num_train_tasks is not None and self.num_train_tasks < 1:
            raise ConfigError(f"num_train_tasks must be >= 1 or None (all), got {self.num_train_tasks!r}")
        if self.gigpo_omega < 0:
            raise ConfigError(f"gigpo_omega must be >= 0, got {self.gigpo_omega!r}")
        if not 0.0 <= self.gigpo_gamma <= 1.0:
            raise ConfigError(f"gigpo_gamma must be in [0, 1], got {self.gigpo_gamma!r}")
        if self.env_backend not in ("local", "ray"):
            raise ConfigError(f"env_backend must be 'local' or 'ray', got {self.env_backend!r}")
        if self.env_workers < 1:
            raise ConfigError(f"env_workers must be >= 1, got {self.env_workers!r}")
        if self.max_train_minutes < 0:
            raise ConfigError(f"max_train_minutes must be >= 0, got {self.max_train_minutes!r}")
        if self.expected_train_minutes < 0:
            raise ConfigError(f"expected_train_minutes must be >= 0, got {self.expected_train_minutes!r}")
        for name in ("evolver_eval_episodes", "evolver_eval_interval"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        # What the device needs: bf16 and gradient checkpointing only pay off on a GPU; on CPU bf16
        # matmuls are slow and checkpointing doubles the forward cost of a model that fits anyway.
        if not self.use_cuda_available():
            if self.bf16 is None:
                self.bf16 = False
            if self.activation_checkpointing is None and self.gradient_checkpointing is None:
                self.activation_checkpointing = False
        elif self.activation_checkpointing is None and self.gradient_checkpointing is None:
            self.activation_checkpointing = True  # TRL's GPU default
        # The episode budget is the completion length the loss normaliser (dr_grpo) refers to.
        self.max_completion_length = self.max_episode_tokens
        check_ranges(self)  # TRL's numeric settings against their documented ranges, before TRL's code reads them
        try:
            super().__post_init__()
        except ConfigError:
            raise
        except ValueError as exc:  # TRL's own checks: keep the message, on one line
            raise ConfigError(" ".join(str(exc).split())) from None

    @staticmethod
    def use_cuda_available() -> bool:
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a dependency of the train extra
            return False
        return bool(torch.cuda.is_available())

