"""Configuration of the GRPO plugin: TRL's ``GRPOConfig`` plus environments, rollouts and the mechanisms.

* ``EvolverGRPOConfig`` - every knob of a training run; YAML and command line through ``TrlParser``.

The command line parser (``TrlParser``, YAML plus overrides) is ``evolver_train.train_cli.parse_config``.

Example:
    >>> cfg = EvolverGRPOConfig(output_dir="/tmp/x", env_id="evolver/WebShop-v0", max_turns=8)
    >>> cfg.max_turns, cfg.max_completion_length == cfg.max_episode_tokens
    (8, True)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trl import GRPOConfig

__all__ = ["EvolverGRPOConfig", "WRAPPER_NAMES"]

# Wrapper names accepted in ``wrappers`` (applied in the order given, innermost first).
WRAPPER_NAMES = ("questioning", "navigation", "attribution")


def _json_field(value: Any, name: str) -> dict[str, Any]:
    """A dict from a YAML mapping or a JSON string given on the command line."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name} must be a JSON object, got {value!r}: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a mapping, got {value!r}")
    return dict(value)


@dataclass
class EvolverGRPOConfig(GRPOConfig):
    """``GRPOConfig`` for multi-turn environment training (AgentEvolver's ADCA-GRPO on TRL).

    TRL's fields keep their meaning (``num_generations`` is G, ``per_device_train_batch_size`` counts
    episodes, ``temperature`` samples actions, ``epsilon``/``epsilon_high`` clip the ratio, ``beta``
    weighs KL). The defaults below differ from TRL's where a CPU run needs it: no bf16 and no gradient
    checkpointing unless a CUDA device is present, a learning rate for LoRA, TensorBoard on.
    """

    # -- TRL defaults changed for multi-turn CPU-friendly runs ---------------------------------
    learning_rate: float = field(default=1e-5, metadata={
        "help": "AdamW learning rate (TRL's 1e-6 is for full fine-tuning of large models; LoRA and tiny "
                "policies need more)."})
    logging_steps: float = field(default=1, metadata={"help": "Log every N optimiser steps."})
    report_to: None | str | list[str] = field(default="tensorboard", metadata={
        "help": "Logging integrations ('tensorboard', 'wandb', 'none', ...)."})
    gradient_checkpointing: bool | None = field(default=None, metadata={
        "help": "Deprecated alias of activation_checkpointing; None = on with CUDA, off on CPU."})

    # -- model ---------------------------------------------------------------------------
    model_name_or_path: str | None = field(default=None, metadata={
        "help": "Hugging Face causal LM name or local folder (a checkpoint of `evolver sft`/`train`), or "
                "'tiny' to build a small Llama-style policy and a word-level tokenizer from the environment."})
    use_peft: bool = field(default=True, metadata={"help": "Train a LoRA adapter (peft) instead of all weights."})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling alpha."})
    lora_dropout: float = field(default=0.0, metadata={"help": "LoRA dropout."})
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        metadata={"help": "Module names that get a LoRA adapter ('all-linear' for every linear layer)."})

    # -- environment ---------------------------------------------------------------------
    env_id: str = field(default="evolver/WebShop-v0", metadata={"help": "Gymnasium id of the text environment."})
    env_kwargs: dict | str | None = field(default=None, metadata={
        "help": "Constructor kwargs of the environment (YAML mapping or JSON string), e.g. "
                "{\"num_products\": 200, \"max_steps\": 8}."})
    wrappers: list[str] = field(default_factory=list, metadata={
        "help": f"Mechanism wrappers to stack, innermost first, from {WRAPPER_NAMES}. Empty = plain GRPO."})
    wrapper_kwargs: dict | str | None = field(default=None, metadata={
        "help": "Per-wrapper constructor kwargs: {\"attribution\": {...}, \"navigation\": {...}, ...}."})
    task_split: str = field(default="train", metadata={"help": "Split whose tasks are trained on."})
    num_train_tasks: int | None = field(default=None, metadata={
        "help": "Use only the first N tasks of the training split (fixed-task mode); None = all."})
    system_prompt: str | None = field(default=None, metadata={
        "help": "System message placed before the first observation; None = no system message."})
    observation_shaping: list[str] = field(default_factory=list, metadata={
        "help": "Observation shapers of evolver_train.observation applied right on the environment "
                "(e.g. drop_repeated_instruction: the instruction is not repeated on every page)."})
    sft: dict | str | None = field(default=None, metadata={
        "help": "Warm start: SFTConfig fields (evolver sft). With model_name_or_path 'tiny', `evolver train` first "
                "runs SFT on the same environment (env_id, env_kwargs, observation_shaping, system_prompt, "
                "max_observation_tokens, seed are shared) into <output_dir>/sft and trains from that checkpoint."})

    # -- rollouts --------------------------------------------------------------------------
    max_turns: int = field(default=15, metadata={"help": "Most actions per episode; then it counts as truncated."})
    max_episode_tokens: int = field(default=1024, metadata={
        "help": "Token budget of one episode after the prompt (actions and observations); an episode that "
                "would exceed it ends, truncated."})
    max_turn_tokens: int = field(default=32, metadata={
        "help": "Most tokens sampled for one action; a turn that reaches it is closed with EOS (not trained)."})
    max_observation_tokens: int = field(default=512, metadata={
        "help": "Longest observation in tokens; longer ones keep their head and tail (middle cut)."})
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
    attribution_alpha: float = field(default=0.0, metadata={
        "help": "ADCA alpha: weight of the suffix-summed, group-z-scored step labels (AgentEvolver 0.1-0.2). "
                "0 turns attribution advantages off."})
    attribution_alpha_min: float = field(default=0.0, metadata={"help": "Floor of the cosine alpha decay."})
    attribution_decay_steps: int | None = field(default=None, metadata={
        "help": "Steps of the cosine decay from attribution_alpha to attribution_alpha_min; None = constant."})
    attribution_cutoff_step: int | None = field(default=None, metadata={
        "help": "Training step from which attribution advantages are off (AgentEvolver prm_steps)."})
    attribution_equal_trajectory_weight: bool = field(default=True, metadata={
        "help": "Label z-score statistics weight each trajectory equally (else every step is pooled)."})
    gigpo_omega: float = field(default=0.0, metadata={
        "help": "GiGPO omega: weight of the anchor-state step advantage (1.0 in GiGPO); 0 = off."})
    gigpo_gamma: float = field(default=0.95, metadata={"help": "GiGPO discount of step returns."})

    # -- experience (self-navigating) --------------------------------------------------------
    experience_share: float = field(default=0.0, metadata={
        "help": "eta: share of each group's rollouts that get retrieved experience (AgentEvolver 0.5)."})
    experience_mode: str = field(default="strip", metadata={
        "help": "'keep': train on the context the action was sampled in; 'strip': remove the injected "
                "experience span from the training prompt and use experience_clip_high for those rows."})
    experience_clip_high: float = field(default=0.6, metadata={
        "help": "Upper clip of the ratio for stripped experience rows when A > 0 (AgentEvolver 0.6)."})

    # -- self-questioning ------------------------------------------------------------------
    questioning_interval: int = field(default=0, metadata={
        "help": "Run a self-questioning synthesis cycle every K training steps; 0 = never."})

    max_train_minutes: float = field(default=0.0, metadata={
        "help": "Stop GRPO after this much wall time (checked after each step; 0 = run max_steps). Use a "
                "constant lr_scheduler_type with it, since the schedule is laid out over max_steps."})

    # -- evaluation -----------------------------------------------------------------------
    evolver_eval_split: str = field(default="dev", metadata={"help": "Split of the periodic evaluation."})
    evolver_eval_episodes: int = field(default=0, metadata={
        "help": "Episodes of the periodic evaluation (first N tasks of the split); 0 = no evaluation."})
    evolver_eval_interval: int = field(default=0, metadata={
        "help": "Evaluate every N training steps (and at the end); 0 = only at the end when episodes > 0."})
    evolver_eval_temperature: float = field(default=1.0, metadata={
        "help": "Sampling temperature of evaluation episodes (temperature 1 shows learning; greedy moves less)."})

    def __post_init__(self) -> None:
        self.env_kwargs = _json_field(self.env_kwargs, "env_kwargs")
        self.wrapper_kwargs = _json_field(self.wrapper_kwargs, "wrapper_kwargs")
        self.sft = _json_field(self.sft, "sft") or None
        for name in self.wrappers:
            if name not in WRAPPER_NAMES:
                raise ValueError(f"unknown wrapper {name!r}; choose from {WRAPPER_NAMES}")
        for name in self.wrapper_kwargs:
            if name not in WRAPPER_NAMES:
                raise ValueError(f"wrapper_kwargs has unknown wrapper {name!r}; choose from {WRAPPER_NAMES}")
        if self.experience_mode not in ("keep", "strip"):
            raise ValueError(f"experience_mode must be 'keep' or 'strip', got {self.experience_mode!r}")
        if self.outcome_key not in ("score", "success", "return"):
            raise ValueError(f"outcome_key must be 'score', 'success' or 'return', got {self.outcome_key!r}")
        if not 0.0 <= self.experience_share <= 1.0:
            raise ValueError(f"experience_share must be in [0, 1], got {self.experience_share!r}")
        for name in ("max_turns", "max_episode_tokens", "max_turn_tokens", "max_observation_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.attribution_alpha < 0 or self.gigpo_omega < 0:
            raise ValueError(f"attribution_alpha and gigpo_omega must be >= 0, got "
                             f"{self.attribution_alpha!r}, {self.gigpo_omega!r}")
        if self.env_backend not in ("local", "ray"):
            raise ValueError(f"env_backend must be 'local' or 'ray', got {self.env_backend!r}")
        if self.env_workers < 1:
            raise ValueError(f"env_workers must be >= 1, got {self.env_workers!r}")
        if self.max_train_minutes < 0:
            raise ValueError(f"max_train_minutes must be >= 0, got {self.max_train_minutes!r}")
        if self.questioning_interval < 0:
            raise ValueError(f"questioning_interval must be >= 0, got {self.questioning_interval!r}")
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
        super().__post_init__()

    @staticmethod
    def use_cuda_available() -> bool:
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a dependency of the train extra
            return False
        return bool(torch.cuda.is_available())

