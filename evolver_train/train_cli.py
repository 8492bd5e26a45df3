"""``evolver train``: GRPO on a text environment from a YAML recipe (basic or overall mode).

* ``main`` - parse ``--config file.yaml`` plus ``--field value`` overrides, check every setting, build
  the model, the environments and the mechanisms, train, save, and print the evaluation before and after.
* ``parse_config`` - a ``RunConfig``: ``EvolverGRPOConfig``, ``trl.ModelConfig`` and the typed config of
  each enabled mechanism, or a ``ConfigError`` naming the bad key and value (no file is written).
* ``load_model`` - a (model, tokenizer) pair from ``model_name_or_path`` (or ``tiny``).
* ``run_warm_start`` - the config's ``sft:`` block, run before RL (``evolver sft`` on the same env).
* ``save_starting_policy`` - a policy built from a config (``tiny``) saved to ``<output_dir>/start``.

With an ``sft:`` block the run is: SFT warm start -> held-out evaluation -> GRPO -> evaluation;
it writes the checkpoint, TensorBoard logs, ``learning_curves.png`` and ``evaluation.json``.

The YAML is flat: TRL's options, ours, ``trl.ModelConfig``'s and each mechanism's (prefixed
``questioning_*``, ``experience_*``, ``attribution_*``); ``evolver train --help`` lists them by section.
The old ``wrapper_kwargs: {name: {...}}`` form still loads, with a warning that shows the new keys.

Example::

    evolver train --config configs/basic.yaml --max-steps 20 --output-dir runs/basic
    evolver train --config configs/overall.yaml --model-name-or-path runs/sft
    evolver train --config configs/quickstart.yaml      # SFT warm start + overall-mode GRPO, ~40 min on 2 CPUs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from trl import ModelConfig

from evolver_gym.cli_args import check_env_kwargs, rename_flags, rename_keys, renamed_option_flags, underscore_flags

from .checkpoints import START_DIR, resolve_resume
from .config import NO_TASK_SPLIT, RENAMED_OPTIONS
from .errors import (
    SETTING_RANGES,
    ConfigError,
    OneLineErrors,
    check_env_id,
    check_local_path,
    check_ranges,
    coerce_yaml_value,
    describe_range,
    escape_help,
    read_yaml,
    unknown_key,
)
from .launch import check_distributed_launch

# questioning_import's name for the tasks the warm start synthesised
WARM_START_TASKS = "warm_start"

__all__ = ["main", "load_model", "parse_config", "run_warm_start", "RunConfig", "ModelOptions",
           "migrate_wrapper_kwargs"]

# TRL options shown by ``--help`` (every other one is listed by ``--help-all``).
_COMMON_TRL = {"output_dir", "seed", "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
               "lr_scheduler_type", "temperature", "top_p", "top_k", "epsilon", "epsilon_high", "beta", "loss_type",
               "num_iterations", "scale_rewards", "use_vllm", "vllm_mode", "save_strategy", "save_steps",
               "resume_from_checkpoint", "bf16", "disable_tqdm", "logging_dir"}

# old ``wrapper_kwargs`` key -> new option, per mechanism
_RENAMED = {
    "questioning": {"pool": "questioning_pool", "new_tasks": "questioning_new_tasks",
                    "synthesis": "questioning_synthesis", "curriculum": "questioning_curriculum"},
    "navigation": {"uri": "experience_uri", "top_k": "experience_top_k", "threshold": "experience_threshold",
                   "max_chars": "experience_max_chars", "summarizer_min_score": "experience_summarizer_min_score"},
    "attribution": {"attributor": "attributor"},
}


@dataclass
class RunConfig:
    """Everything ``evolver train`` runs from: training, model, and each enabled mechanism's settings."""

    train: Any
    model: Any
    mechanisms: dict[str, Any] = field(default_factory=dict)


def migrate_wrapper_kwargs(old: Any) -> dict[str, Any]:
    """The flat options that replace an old ``wrapper_kwargs: {mechanism: {...}}`` block.

    Example:
        >>> migrate_wrapper_kwargs({"navigation": {"top_k": 1}, "attribution": {"attributor": "oracle"}})
        {'experience_top_k': 1, 'attributor': 'oracle'}
    """
    if isinstance(old, str):
        try:
            old = json.loads(old) if old else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"wrapper_kwargs must be a JSON object, got {old!r}: {exc}") from None
    if not isinstance(old, dict):
        raise ConfigError(f"wrapper_kwargs must be a mapping of mechanism -> settings, got {old!r}")
    new: dict[str, Any] = {}
    for name, settings in old.items():
        if name not in _RENAMED:
            raise ConfigError(f"wrapper_kwargs has unknown mechanism {name!r}; choose from {list(_RENAMED)}")
        for key, value in dict(settings or {}).items():
            if key in _RENAMED[name]:
                new[_RENAMED[name][key]] = value
            elif name == "attribution":
                new.setdefault("attributor_kwargs", {})[key] = value
            else:
                raise ConfigError(f"wrapper_kwargs.{name}.{key} has no equivalent option; the {name} options are "
                                  f"{sorted(_RENAMED[name].values())}")
    return new


def _warn_migrated(new: dict[str, Any], where: str) -> None:
    lines = "\n".join(f"  {k}: {json.dumps(v)}" for k, v in new.items())
    warnings.warn(f"{where}: 'wrapper_kwargs' is deprecated and will be removed in 0.3; write instead:\n{lines}",
                  FutureWarning, stacklevel=3)


class ModelOptions(ModelConfig):
    """TRL's ``ModelConfig``, with its own section in ``evolver train --help``."""

    _argument_group_name = "model and LoRA (trl.ModelConfig; model_name_or_path 'tiny' builds a small policy)"


# TRL's argument parser rewrites the config dataclasses' field types in place while it builds (Optional[X]
# becomes X), and building a TrainingArguments resets and re-creates accelerate's process-wide PartialState;
# two threads doing either at once can read a half-rewritten field or a reset state and fail.
_PARSER_BUILD_LOCK = threading.Lock()


def _own_options(mechanisms: list[Any]) -> set[str]:
    """Options this project defines (not TRL's, even where ours sets another default): dashed spelling only."""
    from trl import GRPOConfig

    from .config import EvolverGRPOConfig

    ours = set(EvolverGRPOConfig.__annotations__) - {f.name for f in fields(GRPOConfig)}
    return ours | {f.name for m in mechanisms for f in fields(m.config_class)}


def _parser(show_all: bool):
    from trl import TrlParser

    from wrappers.plugin import get_mechanism, mechanism_names

    from .config import EvolverGRPOConfig

    class Parser(OneLineErrors, TrlParser):
        pass

    mechanisms = [get_mechanism(name) for name in mechanism_names()]
    with _PARSER_BUILD_LOCK:
        parser = Parser((EvolverGRPOConfig, ModelOptions, *[m.config_class for m in mechanisms]),
                        prog="evolver train",
                        description="GRPO on a multi-turn text environment (AgentEvolver's modes on TRL).")
    parser.add_argument("--help-all", action="help", help="show every option, TRL's included, and exit")
    for action in parser._actions:
        if len(action.option_strings) == 2:  # the dashed spelling first in --help: --env-id, --output-dir
            action.option_strings = sorted(action.option_strings, key=lambda flag: "_" in flag)
        if action.dest in SETTING_RANGES and action.help not in (None, argparse.SUPPRESS):
            action.help = f"{action.help} (range: {escape_help(describe_range(action.dest))})"
    if not show_all:
        own = set(EvolverGRPOConfig.__annotations__)
        trl_only = {f.name for f in fields(EvolverGRPOConfig)} - own - _COMMON_TRL
        for action in parser._actions:
            if action.dest in trl_only:
                action.help = argparse.SUPPRESS
    return parser, mechanisms


def parse_config(argv: list[str]) -> RunConfig:
    """A ``RunConfig`` from ``argv`` (YAML defaults from ``--config``, command-line overrides).

    Every setting is checked here, before anything runs or is written: unknown options, wrong types,
    out-of-range values, an unregistered ``env_id``, paths that do not exist and mechanism settings
    of a mechanism that is not enabled raise ``ConfigError`` naming the key and the value.
    """
    parser, mechanisms = _parser(show_all="--help-all" in argv)
    # Our own options take the dashed spelling (--env-id); the old --env_id still works, with a warning, and
    # so does a renamed option's old name (--valid-actions-only). TRL's and transformers' options keep both
    # spellings (--output_dir, --output-dir) without one.
    argv = rename_flags(argv, {**underscore_flags(_own_options(mechanisms)), **renamed_option_flags(RENAMED_OPTIONS)},
                        "evolver train")
    actions = {a.dest: a for a in parser._actions}
    takes_lists = {f.name for dc in parser.dataclass_types for f in fields(dc) if "list" in str(f.type)}
    owner = {f.name: m.name for m in mechanisms for f in fields(m.config_class)}
    given: set[str] = {tok[2:].split("=", 1)[0].replace("-", "_") for tok in argv if tok.startswith("--")}
    if "--wrapper_kwargs" in argv:  # the old form on the command line
        i = argv.index("--wrapper_kwargs")
        if i + 1 >= len(argv):
            raise ConfigError("--wrapper_kwargs needs a JSON value")
        new = migrate_wrapper_kwargs(argv[i + 1])
        _warn_migrated(new, "--wrapper_kwargs")
        del argv[i:i + 2]
        for key, value in new.items():
            argv += [f"--{key.replace('_', '-')}", value if isinstance(value, str) else json.dumps(value)]
        given |= set(new)
    if "--config" in argv:
        i = argv.index("--config")
        if i + 1 >= len(argv):
            raise ConfigError("--config needs a YAML file")
        path = argv[i + 1]
        del argv[i:i + 2]
        values = read_yaml(path)
        try:
            rename_keys(values, RENAMED_OPTIONS, path)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if "wrapper_kwargs" in values:
            new = migrate_wrapper_kwargs(values.pop("wrapper_kwargs"))
            _warn_migrated(new, path)
            values.update(new)
        for key, value in list(values.items()):
            if key == "env":  # TRL's environment-variable block
                continue
            if key not in actions or key in ("help", "help_all"):
                raise unknown_key(key, [k for k in actions if k not in ("help", "help_all")], path)
            if not (isinstance(value, list) and key in takes_lists and actions[key].nargs not in ("+", "*")):
                values[key] = coerce_yaml_value(actions[key], key, value, path)
        for key, value in values.pop("env", {}).items():
            os.environ[str(key)] = str(value)
        given |= set(values)
        parser.set_defaults_with_config(**values)
    try:
        with _PARSER_BUILD_LOCK:
            train, model, *mech_configs = parser.parse_args_into_dataclasses(args=argv)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        raise ConfigError(" ".join(str(exc).split())) from None
    except Exception as exc:  # noqa: BLE001 - a check TRL runs that fails another way: still one line
        settings = ", ".join(sorted(given - {"config"}))
        raise ConfigError(f"TRL cannot use these settings ({type(exc).__name__}: {' '.join(str(exc).split())}); "
                          f"settings given: {settings or 'none'}") from None
    enabled = set(train.wrappers)
    for key in sorted(given):
        if key in owner and owner[key] not in enabled:
            raise ConfigError(f"{key} is a setting of mechanism {owner[key]!r}, which is not enabled "
                              f"(wrappers: {train.wrappers})")
    chosen = {m.name: c for m, c in zip(mechanisms, mech_configs)}
    run = RunConfig(train=train, model=model, mechanisms={name: chosen[name] for name in train.wrappers})
    _check_run(run)
    return run


def _check_run(run: RunConfig) -> None:
    """What the dataclasses cannot check alone: the environment exists, paths exist, the warm start parses."""
    train, model = run.train, run.model
    check_env_id(train.env_id)
    try:
        check_env_kwargs(train.env_id, train.env_kwargs)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    check_ranges(model, ("lora_r", "lora_alpha", "lora_dropout"))
    if not model.model_name_or_path:
        raise ConfigError("model_name_or_path is required (a local folder, a hub name, or 'tiny')")
    if model.model_name_or_path != "tiny":
        check_local_path(model.model_name_or_path, "model_name_or_path", hub_names=True)
    # true/True: the last complete checkpoint of output_dir; a folder: it must hold a complete checkpoint
    resolve_resume(train.resume_from_checkpoint, train.output_dir, report=lambda line: None)
    if train.task_split == NO_TASK_SPLIT:
        _check_no_task_split(run)
    if train.sft:
        warm_start_config(run)
    _check_questioning_import(run)
    if model.use_peft:
        from trl import get_peft_config

        try:
            get_peft_config(model)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"LoRA settings: {' '.join(str(exc).split())}") from None


def _check_questioning_import(run: RunConfig) -> None:
    """``questioning_import``: a tasks file that exists, or ``warm_start`` with a warm start that synthesises."""
    questioning = run.mechanisms.get("questioning")
    source = getattr(questioning, "questioning_import", None)
    if source is None:
        return
    if source == WARM_START_TASKS:
        if not (run.train.sft or {}).get("synthesize_tasks"):
            raise ConfigError(f"questioning_import {WARM_START_TASKS!r} needs a warm start that synthesises tasks "
                              f"(sft.synthesize_tasks), got sft={run.train.sft or None!r}")
        return
    check_local_path(source, "questioning_import")


def _check_no_task_split(run: RunConfig) -> None:
    """``task_split: none`` trains on the questioning pool alone: the pool must have tasks to start from."""
    from .envs import check_task_source

    check_task_source(run.train.task_split, run.train.wrappers)
    questioning = run.mechanisms["questioning"]
    if not questioning.questioning_initial_tasks:
        if not questioning.questioning_pool:
            raise ConfigError(f"task_split {NO_TASK_SPLIT!r} needs tasks before the first step: set questioning_pool "
                              f"to the pool.sqlite of `evolver questions synthesize --seed-split none`, or "
                              f"questioning_initial_tasks")
        check_local_path(questioning.questioning_pool, "questioning_pool")


def warm_start_config(run: RunConfig):
    """The warm start's ``SFTConfig``: the ``sft`` block plus what it shares with training."""
    from .sft import SFTConfig

    config = run.train
    shared = {"env_id": config.env_id, "env_kwargs": dict(config.env_kwargs), "split": config.task_split,
              "model_name_or_path": run.model.model_name_or_path, "system_prompt": config.system_prompt,
              "max_observation_tokens": config.max_observation_tokens,
              "observation_shaping": list(config.observation_shaping), "seed": config.seed,
              "output_dir": os.path.join(config.output_dir, "sft")}
    navigation = run.mechanisms.get("navigation")
    if navigation is not None:  # experience blocks in demonstrations as long as those injected at RL time
        shared["experience_max_chars"] = int(navigation.experience_max_chars)
    known = {f.name for f in fields(SFTConfig)}
    for key in config.sft:
        if key not in known:
            raise unknown_key(key, sorted(known), "sft")
    if config.task_split == NO_TASK_SPLIT and not (config.sft.get("tasks_file") or config.sft.get("synthesize_tasks")):
        raise ConfigError(f"sft: task_split {NO_TASK_SPLIT!r} has no human task to demonstrate: set sft.tasks_file "
                          f"(e.g. the tasks.jsonl of `evolver questions synthesize --seed-split none`) or "
                          f"sft.synthesize_tasks")
    try:
        return SFTConfig(**{**shared, **dict(config.sft)})
    except ConfigError as exc:
        raise ConfigError(f"sft: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"sft: {' '.join(str(exc).split())}") from None


def run_warm_start(run: RunConfig) -> str:
    """Run the config's ``sft`` block (``evolver sft``) into ``<output_dir>/sft``; returns the checkpoint.

    A finished warm start of the same settings already there is reused (``reuse_warm_start``), so a second
    call, or a run resumed after a kill in its GRPO stage, does not train it again.

    The SFT run shares the environment and the codec settings with training, so the warm-started
    policy sees the same token layout at RL time.
    """
    from .sft import finished_sft_mismatch, train_sft

    config = warm_start_config(run)
    if run.train.reuse_warm_start:
        reason = finished_sft_mismatch(config.output_dir, config)
        if reason is None:
            print(f"warm start: reusing {config.output_dir}, which ran every step with these settings "
                  f"(reuse_warm_start: false trains it again)", flush=True)
            return config.output_dir
        if Path(config.output_dir, "sft_config.json").exists():
            print(f"warm start: training again, as {reason}", flush=True)
    return str(train_sft(config))


def load_model(run: RunConfig, env: Any = None, tasks: list[Any] | None = None):
    """``(model, tokenizer)``: a checkpoint folder, adapter folder or hub name, or ``tiny`` built for ``env``."""
    from .policy import TinyPolicyConfig, build_policy

    # A tiny policy's positions cover the longest context a rollout can build (first observation plus the
    # episode budget), so a recipe with a long budget does not run it past the lengths it was made for.
    longest = run.train.max_observation_tokens + run.train.max_episode_tokens
    size = TinyPolicyConfig(max_position_embeddings=max(TinyPolicyConfig.max_position_embeddings, longest))
    return build_policy(run.model.model_name_or_path, env=env, tasks=tasks or [],
                        extra_texts=[run.train.system_prompt or ""], size=size, seed=run.train.seed)


def save_starting_policy(model: Any, tokenizer: Any, output_dir: str) -> str:
    """Save a policy built from a config (``tiny``) to ``<output_dir>/start`` before RL changes it, so that
    ``evolver eval --checkpoint <output_dir>/start`` measures the starting point the same way as the result
    (a warm start already lives in ``<output_dir>/sft``). A resumed run finds it there and keeps it."""
    folder = os.path.join(output_dir, START_DIR)
    if not os.path.exists(os.path.join(folder, "config.json")):
        staging = folder + ".tmp"
        shutil.rmtree(staging, ignore_errors=True)
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(staging, folder)  # a kill mid-save leaves no half-written starting point
    return folder


def _describe_env(config: Any) -> str:
    kwargs = ", ".join(f"{k}={v}" for k, v in sorted(config.env_kwargs.items()))
    return f"{config.env_id}({kwargs})" if kwargs else config.env_id


def _ci(result: dict[str, Any]) -> str:
    low, high = result["success_rate_ci95"]
    return f"[95% CI {low:.3f}-{high:.3f}]"


def _report(config: Any, n_eval: int, before: dict[str, float], after: dict[str, float], seconds: float) -> str:
    def pts(key: str) -> str:
        return f"{100 * (after[key] - before[key]):+.1f} points"
    return "\n".join([
        "",
        f"== evolver train: held-out evaluation on {config.env_id}, before and after RL ==",
        f"   {n_eval} goals of the {config.evolver_eval_split} split "
        f"(split scheme {config.env_kwargs.get('split_scheme', 'goal')}: docs/splits.md gives its overlap with "
        f"train), one episode each, sampled at temperature {config.evolver_eval_temperature}, no experience "
        f"in the prompt; the same episodes before and after (sample {after['sample']['fingerprint']})",
        *([f"   environment as configured (reduced for a small CPU run): {_describe_env(config)}"
           + (f", observation shaping {list(config.observation_shaping)}" if config.observation_shaping else "")]
          if config.env_kwargs or config.observation_shaping else []),
        f"   success rate: before RL {before['success_rate']:.3f} {_ci(before)}  ->  after RL "
        f"{after['success_rate']:.3f} {_ci(after)}  ({pts('success_rate')})",
        f"   score:        before RL {before['score']:.3f}  ->  after RL {after['score']:.3f}  ({pts('score')})",
        f"   wall time {seconds / 60:.1f} min; checkpoint, TensorBoard logs (runs/) and learning_curves.png in "
        f"{config.output_dir}",
        ""])


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    try:
        run = parse_config(argv)
        check_distributed_launch()  # a multi-process launch that is not distributed fails here, loudly
    except ConfigError as exc:
        print(f"evolver train: {exc}", file=sys.stderr)
        return 2
    config = run.train

    from trl import get_peft_config

    from .curves import plot_learning_curves
    from .envs import build_training_environment
    from .trainer import EvolverGRPOTrainer

    if config.sft:
        print(f"== warm start: supervised fine-tuning on oracle demonstrations ({_describe_env(config)}) ==",
              flush=True)
        run.model.model_name_or_path = run_warm_start(run)
    questioning = run.mechanisms.get("questioning")
    if questioning is not None and questioning.questioning_import == WARM_START_TASKS:
        questioning.questioning_import = str(warm_start_config(run).synthesized_tasks_file)
    built = build_training_environment(config, run.mechanisms)
    probe = built.base_env_factory() if run.model.model_name_or_path == "tiny" else None
    model, tokenizer = load_model(run, probe, built.train_tasks)
    if probe is not None:
        probe.close()
        save_starting_policy(model, tokenizer, config.output_dir)
    trainer = EvolverGRPOTrainer(
        model, config, built.env_factory, tasks=None if built.samples_tasks else built.train_tasks,
        hooks=built.hooks, processing_class=tokenizer, peft_config=get_peft_config(run.model),
        eval_tasks=built.eval_tasks, probe_tasks=built.train_tasks)
    eval_tasks = built.eval_tasks[: config.evolver_eval_episodes] if config.evolver_eval_episodes else []
    before = None
    if eval_tasks:
        print(f"== evaluation before RL: {len(eval_tasks)} {config.evolver_eval_split} goals ==", flush=True)
        before = trainer.evaluate_episodes(eval_tasks, seed=1, details=True)
        print(f"before RL: {json.dumps({k: v for k, v in before.items() if k != 'sample'})}", flush=True)
    print(f"== GRPO: {config.max_steps} steps, {config.per_device_train_batch_size // config.num_generations} tasks x "
          f"G={config.num_generations}, mechanisms: {', '.join(config.wrappers) or 'none (plain GRPO)'} ==", flush=True)
    trainer.train(resume_from_checkpoint=resolve_resume(config.resume_from_checkpoint, config.output_dir))
    trainer.save_model(config.output_dir)
    tokenizer.save_pretrained(config.output_dir)
    after = None
    if eval_tasks:
        print(f"== evaluation after RL: {len(eval_tasks)} {config.evolver_eval_split} goals ==", flush=True)
        after = trainer.evaluate_episodes(eval_tasks, seed=1, details=True)
        print(f"after RL: {json.dumps({k: v for k, v in after.items() if k != 'sample'})}", flush=True)
    history = [dict(row) for row in trainer.state.log_history]
    curves = plot_learning_curves(history, os.path.join(config.output_dir, "learning_curves.png"),
                                  before=before, after=after, title=f"{_describe_env(config)}, "
                                  f"mechanisms: {', '.join(config.wrappers) or 'none'}",
                                  warm_start=None if config.sft else False)  # None: <output_dir>/sft
    seconds = time.monotonic() - started
    with open(os.path.join(config.output_dir, "evaluation.json"), "w", encoding="utf-8") as fh:
        json.dump({"before": before, "after": after, "eval_split": config.evolver_eval_split,
                   "eval_goals": len(eval_tasks), "env_id": config.env_id, "env_kwargs": config.env_kwargs,
                   "seed": config.seed, "wall_seconds": seconds, "curves": str(curves),
                   "plugin": trainer.plugin_state}, fh, indent=2, default=str)
    if before is not None and after is not None:
        print(_report(config, len(eval_tasks), before, after, seconds), flush=True)
    trainer.end_distributed()  # under `accelerate launch`: release gloo before the interpreter exits
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
