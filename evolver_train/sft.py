"""Supervised warm start: teach a policy the environment's action format from oracle demonstrations.

* ``SFTConfig`` - what to train, on what, for how long; YAML and command line from one parser.
* ``read_tasks_file`` - the tasks of a JSONL file (``tasks_file``: synthesised tasks instead of a split).
* ``synthesize_tasks`` - self-questioning before the warm start: tasks proposed from exploring the
  environment (``synthesize_tasks``), written to ``<output_dir>/questions``.
* ``demonstrated_tasks`` - the split's tasks, the file's or the synthesised ones, or both (``with_split``).
* ``collect_demonstrations`` - play the environment's oracle (a share of it deliberately imperfect, as a
  research option).
* ``add_experience_context`` - prepend an experience block, as ``ExperienceContext`` injects it, to a
  share of the demonstrations.
* ``encode_demonstration`` - the token ids of one demonstration exactly as a rollout lays them out.
* ``train_sft`` - build (or load) the policy, train it on the demonstrations, save a checkpoint.
* ``main`` - ``evolver sft --config configs/sft.yaml`` or flags.

Progress: every ``log_every`` steps a line with the loss, the throughput and the ETA; TensorBoard scalars
(``sft/loss``, ``sft/loss_ema``, ``sft/learning_rate``, ``sft/tokens_per_second``) in ``<output_dir>/runs``
(``report_to: none`` turns them off); every ``save_steps`` steps a resume checkpoint in
``<output_dir>/checkpoints/step-N`` (model, optimiser, schedule, random states), from which a killed run of the
same settings continues (``resume``) to the same weights as an uninterrupted one.

The demonstrations are laid out with the rollout's own ``ChatCodec`` (prompt, then each action and
its EOS, then the next observation as a chat-template delta), so the warm-started policy sees at
RL time exactly the token layout it was trained on. Loss is on action tokens only.

Demonstrations are clean by default. ``imperfect_share`` is a research option for studying recovery
from bad demonstrations: that share follows the environment's ``flawed_plan`` (WebShop: buy a
different product from the results, skip an option, or stop after the search, the way a half-trained
agent would). It is not part of a baseline: RL then mostly removes the failures put in on purpose.

A policy trained from scratch has never read an experience block; in overall mode
(``ExperienceContext``) its first prompt would then start with text it cannot place, and it answers
with invalid actions. ``experience_share`` puts the block, written by the offline summarizer from
another demonstration, in front of that share of the demonstrations, so the warm start knows the
format before RL starts.

A small policy trained on a few thousand demonstrations learns the train products' ids by heart: on
products it never trained on it then clicks ids that are not on the page. ``relabel_ids`` (a regular
expression, e.g. WebShop's ``b0([a-z0-9]{8})``) gives every id it matches a fresh random value each
time a demonstration is put in a batch, the same value throughout that demonstration (page and
action alike), so the only way to produce the right id is to copy it from the page. ``relabel_words``
does the same for the words of the instruction that name the product and its options: they get other
words of the environment's vocabulary, in the instruction, the pages and the actions, so the search
and the option clicks must be copied too (``evolver_train.relabel``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from evolver_gym.cli_args import check_env_kwargs, rename_flags, underscore_flags
from evolver_gym.core import Step, Task, Trajectory, make_rng, read_tasks

from .errors import (
    ConfigError,
    OneLineErrors,
    check_env_id,
    check_local_path,
    coerce_yaml_value,
    escape_help,
    read_yaml,
    unknown_key,
)
from .relabel import IdRelabeller, WordRelabeller

__all__ = ["SFTConfig", "read_tasks_file", "synthesize_tasks", "demonstrated_tasks", "collect_demonstrations",
           "add_experience_context", "IdRelabeller", "WordRelabeller", "encode_demonstration", "action_token_loss",
           "train_sft", "finished_sft_mismatch", "main"]


@dataclass
class SFTConfig:
    """Options of a supervised warm start. Every field is also a command-line flag."""

    output_dir: str = field(default="outputs/sft", metadata={
        "help": "Where the checkpoint (model + tokenizer) is written."})
    env_id: str = field(default="evolver/WebShop-v0", metadata={"help": "Gymnasium id of the environment."})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "Environment constructor kwargs (JSON on the command line)."})
    split: str = field(default="train", metadata={"help": "Split whose tasks are demonstrated."})
    tasks_file: str = field(default="", metadata={
        "help": "JSONL of tasks to demonstrate instead of the split's, e.g. the tasks.jsonl that `evolver questions "
                "synthesize --seed-split none` writes: a warm start with no human task at all. Empty = the split."})
    synthesize_tasks: int = field(default=0, metadata={
        "help": "Self-questioning before the warm start: explore the environment and synthesise this many tasks "
                "(as `evolver questions synthesize` does) into <output_dir>/questions, then demonstrate them "
                "instead of a tasks_file; an interrupted synthesis of the same settings resumes. 0 = off."})
    synthesis: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "SynthesisConfig fields of that synthesis (JSON on the command line), e.g. {seed_split: none, "
                "batch: 64, max_rounds: 400, embedding_threshold: null, leakage_cosine: null}; its seed defaults "
                "to this run's seed."})
    with_split: bool = field(default=False, metadata={
        "help": "With tasks_file or synthesize_tasks: demonstrate the split's tasks too, after those tasks (human "
                "goals plus synthesised tasks)."})
    num_demonstrations: int = field(default=2000, metadata={"help": "Demonstrations to collect (tasks are cycled)."})
    imperfect_share: float = field(default=0.0, metadata={
        "help": "Research option, off by default: share of demonstrations that are deliberately flawed (buy "
                "another result, skip an option), to study recovery from bad demonstrations. A baseline "
                "trains on clean demonstrations (0); flaws put in on purpose make RL look better than it is."})
    model_name_or_path: str = field(default="tiny", metadata={
        "help": "'tiny' builds a small Llama-style policy and a word-level tokenizer from the environment; "
                "otherwise a Hugging Face name or local folder."})
    hidden_size: int = field(default=128, metadata={"help": "Tiny policy: hidden size."})
    num_hidden_layers: int = field(default=2, metadata={"help": "Tiny policy: layers."})
    num_attention_heads: int = field(default=4, metadata={"help": "Tiny policy: attention heads."})
    spell_ids: bool = field(default=True, metadata={
        "help": "Tiny policy's tokenizer: spell words that mix letters and digits (product ids) one character a "
                "token, so the policy can copy ids it never trained on; False = one token per product id "
                "(the quickstart's measured recipe)."})
    whole_word_min_count: int = field(default=0, metadata={
        "help": "Tiny policy's tokenizer: 0 = a whole token for every word of the environment's vocabulary "
                "(untrained for words training never shows); N >= 1 = whole tokens only for words the training "
                "tasks' instructions, observations and oracle actions use at least N times, any other word (a "
                "held-out product's noun) made of known pieces down to letters, so the policy can copy it."})
    system_prompt: str | None = field(default=None, metadata={"help": "System message before the first observation."})
    observation_shaping: list[str] = field(default_factory=list, metadata={
        "help": "Observation shapers the environment offers (WebShop: drop_repeated_instruction, top_results=K, "
                "numbered_results); "
                "training must use the same ones."})
    num_threads: int = field(default=0, metadata={"help": "torch CPU threads (0 = torch's default)."})
    max_observation_tokens: int = field(default=512, metadata={
        "help": "Observations longer than this keep head and tail."})
    learning_rate: float = field(default=3e-3, metadata={"help": "AdamW learning rate (cosine decay to 10%)."})
    batch_size: int = field(default=16, metadata={"help": "Demonstrations per optimiser step."})
    max_steps: int = field(default=2000, metadata={"help": "Upper bound on optimiser steps."})
    max_minutes: float = field(default=0.0, metadata={
        "help": "Stop after this much training time (0 = no limit, the default: a step budget gives the same "
                "checkpoint on any machine). A run the limit cuts short says so and records it."})
    experience_share: float = field(default=0.0, metadata={
        "help": "Share of demonstrations whose first observation starts with an experience block (offline "
                "summary of another demonstration), as ExperienceContext injects it at RL time."})
    experience_max_chars: int = field(default=300, metadata={
        "help": "Character cap of those blocks; use the navigation wrapper's max_chars."})
    relabel_ids: str = field(default="", metadata={
        "help": "Regular expression of ids (case-insensitive) that get fresh random values each time a "
                "demonstration is batched, the same throughout the demonstration, so the policy learns to copy "
                "them from the page rather than memorise them; its first group, when it has one, is the part "
                "replaced (WebShop: 'b0([a-z0-9]{8})'). Empty = off."})
    relabel_words: float = field(default=0.0, metadata={
        "help": "Chance that each content word of a demonstration's instruction (its product, attributes and "
                "option values: words fewer than 15% of the demonstrations use) gets another word of the "
                "environment's vocabulary each time the demonstration is batched, the same throughout it (pages, "
                "search, option clicks), so the policy learns to copy words rather than memorise the train "
                "products. 0 = off."})
    seed: int = field(default=0, metadata={"help": "Seed of demonstrations, initialisation and batching."})
    log_every: int = field(default=25, metadata={"help": "Print the loss, throughput and ETA every N steps."})
    report_to: str = field(default="tensorboard", metadata={
        "help": "'tensorboard': loss, learning rate and throughput every step in <output_dir>/runs; 'none': off."})
    save_steps: int = field(default=500, metadata={
        "help": "Write a resume checkpoint (<output_dir>/checkpoints/step-N) every N steps; 0 = never."})
    save_total_limit: int = field(default=1, metadata={"help": "Resume checkpoints kept (the newest)."})
    resume: bool = field(default=True, metadata={
        "help": "Continue from the newest resume checkpoint of a run with the same settings in output_dir."})
    lora_r: int = field(default=0, metadata={
        "help": "LoRA rank of the warm start (0 = train all weights). The adapter is merged into the saved "
                "checkpoint, so GRPO starts from a plain model (and may add its own adapter)."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha of the warm start (with lora_r > 0)."})
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
                                           metadata={"help": "Modules the warm start's LoRA adapts."})

    def __post_init__(self) -> None:
        for name in ("spell_ids", "with_split", "resume"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.report_to not in ("tensorboard", "none"):
            raise ConfigError(f"report_to must be 'tensorboard' or 'none', got {self.report_to!r}")
        if not isinstance(self.save_steps, int) or isinstance(self.save_steps, bool) or self.save_steps < 0:
            raise ConfigError(f"save_steps must be an int >= 0, got {self.save_steps!r}")
        if not isinstance(self.save_total_limit, int) or self.save_total_limit < 1:
            raise ConfigError(f"save_total_limit must be an int >= 1, got {self.save_total_limit!r}")
        if not isinstance(self.lora_r, int) or self.lora_r < 0:
            raise ConfigError(f"lora_r must be an int >= 0, got {self.lora_r!r}")
        if self.lora_r and not self.lora_target_modules:
            raise ConfigError(f"lora_target_modules must name at least one module, got {self.lora_target_modules!r}")
        for name in ("max_steps", "hidden_size", "num_hidden_layers", "num_attention_heads", "log_every",
                     "max_observation_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if not self.learning_rate > 0:
            raise ConfigError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if not isinstance(self.whole_word_min_count, int) or self.whole_word_min_count < 0:
            raise ConfigError(f"whole_word_min_count must be an int >= 0, got {self.whole_word_min_count!r}")
        if self.max_minutes < 0 or self.num_threads < 0:
            raise ConfigError(f"max_minutes and num_threads must be >= 0, got {self.max_minutes!r}, "
                              f"{self.num_threads!r}")
        if not isinstance(self.env_kwargs, dict):
            raise ConfigError(f"env_kwargs must be a mapping, got {self.env_kwargs!r}")
        if not 0.0 <= self.imperfect_share <= 1.0:
            raise ConfigError(f"imperfect_share must be in [0, 1], got {self.imperfect_share!r}")
        if not 0.0 <= self.relabel_words <= 1.0:
            raise ConfigError(f"relabel_words must be in [0, 1], got {self.relabel_words!r}")
        if not 0.0 <= self.experience_share <= 1.0:
            raise ConfigError(f"experience_share must be in [0, 1], got {self.experience_share!r}")
        if self.experience_max_chars < 80:
            raise ConfigError(f"experience_max_chars must be >= 80, got {self.experience_max_chars!r}")
        if self.relabel_ids:
            try:
                re.compile(self.relabel_ids)
            except re.error as exc:
                raise ConfigError(f"relabel_ids is not a regular expression ({exc}), "
                                  f"got {self.relabel_ids!r}") from None
        if not isinstance(self.synthesize_tasks, int) or isinstance(self.synthesize_tasks, bool) \
                or self.synthesize_tasks < 0:
            raise ConfigError(f"synthesize_tasks must be an int >= 0, got {self.synthesize_tasks!r}")
        if not isinstance(self.synthesis, dict):
            raise ConfigError(f"synthesis must be a mapping of SynthesisConfig fields, got {self.synthesis!r}")
        if self.synthesis and not self.synthesize_tasks:
            raise ConfigError(f"synthesis settings are given but synthesize_tasks is 0 (synthesis={self.synthesis!r})")
        if self.synthesize_tasks:
            if self.tasks_file:
                raise ConfigError(f"tasks_file and synthesize_tasks both name the tasks to demonstrate; set one "
                                  f"(tasks_file={self.tasks_file!r}, synthesize_tasks={self.synthesize_tasks!r})")
            self.synthesis_config()  # refuses an unknown field or a bad value now, before anything runs
        elif self.tasks_file:
            check_local_path(self.tasks_file, "tasks_file")
        elif self.with_split:
            raise ConfigError(f"with_split adds the split's tasks to those of tasks_file or synthesize_tasks, but "
                              f"both are empty (with_split={self.with_split!r})")
        if self.num_demonstrations < 1 or self.batch_size < 1:
            raise ConfigError(f"num_demonstrations and batch_size must be >= 1, got "
                             f"{self.num_demonstrations!r} and {self.batch_size!r}")

    def synthesis_config(self) -> Any:
        """The ``SynthesisConfig`` of the ``synthesize_tasks`` run (``synthesis`` over its defaults, this seed)."""
        from wrappers.questioning.synthesis import SynthesisConfig

        known = [f.name for f in fields(SynthesisConfig)]
        for key in self.synthesis:
            if key not in known:
                raise unknown_key(key, known, "synthesis")
        try:
            return SynthesisConfig(**{"seed": self.seed, **self.synthesis})
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"synthesis: {' '.join(str(exc).split())}") from None

    @property
    def synthesized_tasks_file(self) -> Path:
        """Where ``synthesize_tasks`` writes its tasks: ``<output_dir>/questions/tasks.jsonl``."""
        return Path(self.output_dir) / "questions" / "tasks.jsonl"


# -- demonstrations ----------------------------------------------------------------------------

def read_tasks_file(path: str | Path, env_id: str) -> list[Task]:
    """The tasks of a JSONL file (one ``Task.to_dict()`` per line), all of them for ``env_id``."""
    try:
        return read_tasks(path, env_id, name="tasks_file")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def synthesize_tasks(config: SFTConfig) -> Path:
    """Run the warm start's self-questioning (``synthesize_tasks``); returns the ``tasks.jsonl`` it wrote.

    Explorations of the environment propose tasks, the leakage guard keeps the protected splits' goals out
    (``synthesis.protected_splits``), and ``<output_dir>/questions`` receives ``pool.sqlite``, ``tasks.jsonl``
    and ``report.json``, as ``evolver questions synthesize`` writes them. Every round commits to the pool,
    so an interrupted run resumes; a folder left by other settings (``settings.json``) is started again.
    """
    from wrappers.questioning.cli import format_report
    from wrappers.questioning.pool import TaskPool
    from wrappers.questioning.synthesis import build_synthesizer, synthesize_into

    synthesis = config.synthesis_config()
    folder = config.synthesized_tasks_file.parent
    settings = json.loads(json.dumps({"env_id": config.env_id, "env_kwargs": config.env_kwargs,
                                      "synthesize_tasks": config.synthesize_tasks, "synthesis": asdict(synthesis)}))
    record = folder / "settings.json"
    if folder.exists():
        try:
            same = json.loads(record.read_text()) == settings
        except (OSError, ValueError):
            same = False
        if not same:
            print(f"sft: {folder} holds a synthesis of other settings; synthesising again", flush=True)
            shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(settings, indent=2))
    env = gym.make(config.env_id, **config.env_kwargs).unwrapped
    embed = bool(synthesis.embedding_threshold or synthesis.leakage_cosine)
    ticker = _Ticker("synthesis", config.synthesize_tasks, "tasks")
    try:
        with TaskPool(folder / "pool.sqlite") as pool:
            synthesizer = build_synthesizer(env, pool, synthesis, embedder="packaged" if embed else None)
            ticker(len(pool.ids(origin="synthetic", status=None)))
            report = synthesize_into(synthesizer, folder, config.synthesize_tasks,
                                     on_round=lambda _: ticker(len(pool.ids(origin="synthetic", status=None))))
    finally:
        env.close()
    n = report["synthetic_tasks"]
    print(f"sft: self-questioning synthesised {n} tasks in {report['rounds']} rounds "
          f"({report['this_run_s']:.0f} s) into {folder}\n{format_report(report)}", flush=True)
    if n < config.synthesize_tasks:
        print(f"sft: warning: {n} of the {config.synthesize_tasks} tasks asked for after max_rounds="
              f"{synthesis.max_rounds} rounds; demonstrating those", flush=True)
    if not n:
        raise ValueError(f"self-questioning synthesised no task in {synthesis.max_rounds} rounds: see "
                         f"{folder / 'report.json'}")
    return config.synthesized_tasks_file


def demonstrated_tasks(config: SFTConfig, env: gym.Env) -> list[Task]:
    """The tasks a warm start demonstrates: the split's, or ``tasks_file``'s (or those ``synthesize_tasks``
    synthesises, running that synthesis first) followed, with ``with_split``, by the split's."""
    if config.synthesize_tasks:
        tasks = read_tasks_file(synthesize_tasks(config), config.env_id)
    elif config.tasks_file:
        tasks = read_tasks_file(config.tasks_file, config.env_id)
    else:
        return list(env.unwrapped.tasks(config.split))
    return tasks + list(env.unwrapped.tasks(config.split)) if config.with_split else tasks


class _Ticker:
    """A progress line at most every ``every`` seconds: ``sft: <what>: done/total unit (elapsed, ETA)``."""

    def __init__(self, what: str, total: int, unit: str, every: float = 15.0):
        self.what, self.total, self.unit, self.every = what, total, unit, every
        self.start = self.last = time.monotonic()
        self.first: int | None = None

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = done  # a resumed synthesis starts part-way
            return
        if now - self.last < self.every or done >= self.total:
            return
        self.last = now
        rate = (now - self.start) / max(done - self.first, 1)
        print(f"sft: {self.what}: {done}/{self.total} {self.unit} ({_duration(now - self.start)}, ETA "
              f"{_duration(rate * (self.total - done))})", flush=True)


def _stop_short(actions: list[str], info: dict[str, Any], rng: np.random.Generator) -> list[str]:
    """The flaw of an environment that offers none: stop one step short of the oracle."""
    return actions[: max(1, len(actions) - 1)]


def collect_demonstrations(env: gym.Env, tasks: Sequence[Task], n: int, *, imperfect_share: float,
                           seed: int = 0, progress: Any = None) -> list[Trajectory]:
    """Play ``n`` demonstrations over ``tasks`` (cycled) with the env's oracle.

    An imperfect demonstration follows a flawed plan: the environment's own ``flawed_plan(plan, info,
    rng)`` after the first action where it offers one, else the plan stopped one step short. Actions
    that are invalid where they land are skipped (a demonstration never teaches an invalid action).
    ``progress``, when given, is called with the number of demonstrations played so far after each one.
    """
    from .envs import express_action

    rng = make_rng(seed, "sft-demonstrations")
    unwrapped = env.unwrapped
    flaw = getattr(unwrapped, "flawed_plan", None) or _stop_short
    order = rng.permutation(len(tasks))
    demos: list[Trajectory] = []
    for k in range(n):
        task = tasks[int(order[k % len(tasks)])]
        plan = list(unwrapped.oracle(task))
        obs, info = env.reset(seed=int(task.seed), options={"task": task})
        imperfect = bool(rng.random() < imperfect_share)
        traj = Trajectory(task=task, metadata={"imperfect": imperfect})
        for i, action in enumerate(plan):
            action = express_action(env, action)
            nobs, reward, terminated, truncated, ninfo = env.step(action)
            if not ninfo.get("action_valid", True):
                continue
            traj.steps.append(Step(observation=obs, action=action, reward=float(reward), info={}))
            obs, info = nobs, ninfo
            if i == 0 and imperfect:  # re-plan after the first action, seeing its outcome (in the page's terms)
                plan[1:] = flaw([express_action(env, a) for a in plan], info, rng)[1:]
            if terminated or truncated:
                break
        traj.success, traj.score = bool(info.get("success", False)), float(info.get("score", 0.0))
        demos.append(traj)
        if progress is not None:
            progress(len(demos))
    return demos


def add_experience_context(demonstrations: Sequence[Trajectory], share: float, *, max_chars: int = 300,
                           seed: int = 0) -> list[Trajectory]:
    """A copy of ``demonstrations`` where ``share`` of them start with an experience block.

    The experiences are the offline summarizer's, from the successful demonstrations; each chosen
    demonstration gets one written from another task of the same product type when there is one
    (what retrieval by instruction finds), from any other task otherwise. The block is
    ``format_block`` of ``ExperienceContext``, prepended to the first observation as the wrapper does.
    Returns the demonstrations unchanged when no demonstration yields an experience.
    """
    from wrappers.navigation.summarize_offline import OfflineSummarizer
    from wrappers.navigation.wrapper import format_block

    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share!r}")
    summarizer = OfflineSummarizer()
    own = [summarizer.summarize([d]) if d.success and d.steps else [] for d in demonstrations]
    experiences = [e for summary in own for e in summary]
    if not experiences or share == 0.0:
        return list(demonstrations)
    rng = make_rng(seed, "sft-experience")
    out: list[Trajectory] = []
    for d, summary in zip(demonstrations, own):
        if not d.steps or rng.random() >= share:
            out.append(d)
            continue
        others = [e for e in experiences if e.source_task_id != d.task.task_id] or experiences
        ptype = summary[0].metadata.get("product_type", "") if summary else ""
        pool = [e for e in others if e.metadata.get("product_type", "") == ptype] or others
        block = format_block([pool[int(rng.integers(len(pool)))]], max_chars)
        first = d.steps[0]
        steps = [Step(observation=block + first.observation, action=first.action, reward=first.reward,
                      info=first.info), *d.steps[1:]]
        out.append(Trajectory(task=d.task, steps=steps, success=d.success, score=d.score,
                              metadata={**d.metadata, "experience": True}))
    return out


def encode_demonstration(codec: Any, trajectory: Trajectory) -> tuple[list[int], list[int]]:
    """(input ids, labels) of one demonstration: labels are -100 except on action tokens and their EOS."""
    if not trajectory.steps:
        return [], []
    ids = list(codec.prompt_ids(trajectory.steps[0].observation))
    labels = [-100] * len(ids)
    for i, step in enumerate(trajectory.steps):
        action = codec.action_ids(step.action)
        ids += action
        labels += action
        if i + 1 < len(trajectory.steps):
            delta = codec.observation_ids(trajectory.steps[i + 1].observation)
            ids += delta
            labels += [-100] * len(delta)
    return ids, labels


# -- training ----------------------------------------------------------------------------------

# Tokens an evaluation allows an action beyond the longest demonstrated one (recorded with the checkpoint).
ACTION_TOKEN_MARGIN = 8
# Settings of how a run reports, saves and resumes: they do not change the weights it trains.
PROGRESS_FIELDS = frozenset({"output_dir", "log_every", "report_to", "save_steps", "save_total_limit", "resume"})
_STATE = "state.pt"


def _resume_settings(config: SFTConfig) -> dict[str, Any]:
    """The settings a resume checkpoint must share with the run that continues it (JSON-normalised): all but
    the progress settings and ``max_minutes`` (a run a time limit stopped continues under another limit)."""
    free = PROGRESS_FIELDS | {"max_minutes"}
    return json.loads(json.dumps({k: v for k, v in asdict(config).items() if k not in free}))


def _checkpoints(out: Path) -> list[tuple[int, Path]]:
    """``(step, folder)`` of the resume checkpoints under ``out/checkpoints``, oldest first."""
    found = []
    for folder in (out / "checkpoints").glob("step-*"):
        tail = folder.name[len("step-"):]
        if tail.isdigit() and (folder / _STATE).is_file():
            found.append((int(tail), folder))
    return sorted(found)


def _newest_checkpoint(config: SFTConfig) -> Path | None:
    """The newest resume checkpoint of a run with this run's settings, or ``None``."""
    for _, folder in reversed(_checkpoints(Path(config.output_dir))):
        try:
            recorded = json.loads((folder / "settings.json").read_text())
        except (OSError, ValueError):
            continue
        if recorded == _resume_settings(config):
            return folder
        print(f"sft: not resuming from {folder}: it was trained with other settings", flush=True)
        return None
    return None


def _save_checkpoint(config: SFTConfig, step: int, state: dict[str, Any]) -> Path:
    """Write ``checkpoints/step-<step>`` atomically (a folder renamed into place) and drop the older ones."""
    import torch

    root = Path(config.output_dir) / "checkpoints"
    folder, tmp = root / f"step-{step}", root / f".step-{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save(state, tmp / _STATE)
    (tmp / "settings.json").write_text(json.dumps(_resume_settings(config), indent=2))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    for _, old in _checkpoints(Path(config.output_dir))[:-config.save_total_limit]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def _duration(seconds: float) -> str:
    seconds = int(round(max(seconds, 0.0)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def _tensorboard(config: SFTConfig, first_step: int) -> Any:
    if config.report_to != "tensorboard":
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        print(f"sft: warning: no TensorBoard logs ({exc}); report_to: none silences this", file=sys.stderr)
        return None
    # A resumed run drops what the killed one logged after its checkpoint, so each step appears once.
    return SummaryWriter(str(Path(config.output_dir) / "runs"), purge_step=first_step or None)

def _batches(lengths: Sequence[int], batch_size: int, rng: np.random.Generator):
    """Batches of similar length (little padding), in random order, reshuffled every epoch."""
    n = len(lengths)
    while True:
        # Sort a shuffled order by length with random jitter, cut into batches, shuffle the batches.
        jitter = rng.random(n) * 0.1 * (max(lengths) - min(lengths) + 1)
        order = np.argsort(np.asarray(lengths) + jitter, kind="stable")
        batches = [order[s:s + batch_size] for s in range(0, n - batch_size + 1 if n >= batch_size else 1, batch_size)]
        for k in rng.permutation(len(batches)):
            yield batches[int(k)]


def action_token_loss(model: Any, input_ids: Any, labels: Any) -> Any:
    """The causal-LM loss of ``model(input_ids=..., labels=...)``, with the output head applied to labelled
    positions only.

    A demonstration labels its actions and not the observations around them (about a tenth of its tokens), so
    projecting every position onto the vocabulary and discarding most of it was a third of an SFT step on the
    tiny policy. The value is the same mean cross-entropy over the next-token labels (``-100`` ignored); a
    model whose head is more than a linear map (``final_logit_softcapping``) takes the model's own path.
    """
    import torch.nn.functional as F

    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a PEFT wrapper's model
    if getattr(base.config, "final_logit_softcapping", None):
        return model(input_ids=input_ids, labels=labels).loss
    hidden = base.get_decoder()(input_ids=input_ids).last_hidden_state
    targets = labels[:, 1:]
    labelled = targets != -100
    logits = base.get_output_embeddings()(hidden[:, :-1][labelled]).float()
    return F.cross_entropy(logits, targets[labelled])


def train_sft(config: SFTConfig, *, demonstrations: list[Trajectory] | None = None) -> Path:
    """Train the policy on oracle demonstrations and save it to ``config.output_dir``; returns the path."""
    import torch

    from .envs import shape_environment
    from .policy import TinyPolicyConfig, build_policy, environment_vocabulary
    from .rollout import ChatCodec

    if config.num_threads:
        torch.set_num_threads(config.num_threads)
    torch.manual_seed(config.seed)
    env = shape_environment(gym.make(config.env_id, **config.env_kwargs), config.observation_shaping)
    tasks = demonstrated_tasks(config, env)
    if demonstrations is None:
        ticker = _Ticker("demonstrations", config.num_demonstrations, "played")
        ticker(0)
        demonstrations = collect_demonstrations(env, tasks, config.num_demonstrations,
                                                imperfect_share=config.imperfect_share, seed=config.seed,
                                                progress=ticker)
    blocks: list[str] = []
    if config.experience_share > 0:
        demonstrations = add_experience_context(demonstrations, config.experience_share,
                                                max_chars=config.experience_max_chars, seed=config.seed)
        # The block's template words join the tokenizer's vocabulary (the tiny policy's is built here).
        blocks = [d.steps[0].observation for d in demonstrations if d.metadata.get("experience")]
    size = TinyPolicyConfig(hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
                            num_attention_heads=config.num_attention_heads, intermediate_size=4 * config.hidden_size,
                            spell_ids=config.spell_ids, whole_word_min_count=config.whole_word_min_count)
    model, tokenizer = build_policy(config.model_name_or_path, env=env, tasks=tasks,
                                    extra_texts=[config.system_prompt or "", *blocks], size=size, seed=config.seed)
    codec = ChatCodec(tokenizer, system_prompt=config.system_prompt,
                      max_observation_tokens=config.max_observation_tokens)
    vocabulary = environment_vocabulary(env) if config.relabel_words else []
    env.close()
    demonstrations = [d for d in demonstrations if d.steps]
    encoded = [encode_demonstration(codec, d) for d in demonstrations]
    if not encoded:
        raise ValueError("no demonstration has a step: check the environment's oracle")
    relabellers: list[IdRelabeller | WordRelabeller] = []
    if config.relabel_ids:
        relabellers.append(IdRelabeller.from_demonstrations(config.relabel_ids, demonstrations))
    if config.relabel_words:
        relabellers.append(WordRelabeller.from_demonstrations(demonstrations, vocabulary, share=config.relabel_words))
    relabel_rng = make_rng(config.seed, "sft-relabel")
    perfect = sum(d.success for d in demonstrations) / len(demonstrations)
    with_experience = sum(bool(d.metadata.get("experience")) for d in demonstrations)
    print(f"sft: {len(encoded)} demonstrations ({perfect:.0%} successful, {with_experience} with an experience block), "
          f"{sum(len(e[0]) for e in encoded) / len(encoded):.0f} tokens each on average")

    if config.lora_r:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                                                 target_modules=list(config.lora_target_modules),
                                                 lora_dropout=0.0, task_type="CAUSAL_LM"))
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / max(1, config.max_steps)))))
    rng = make_rng(config.seed, "sft-batches")
    pad = tokenizer.pad_token_id
    batches = _batches([len(e[0]) for e in encoded], min(config.batch_size, len(encoded)), rng)
    step, loss_ema = 0, None
    tokens_seen, earlier = 0, 0.0  # earlier: training seconds before a resume
    history: list[dict[str, float]] = []  # the progress lines' figures, recorded with the checkpoint
    resume_from = _newest_checkpoint(config) if config.resume else None
    if resume_from is not None:
        state = torch.load(resume_from / _STATE, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        step, loss_ema, tokens_seen, earlier = state["step"], state["loss_ema"], state["tokens_seen"], state["elapsed"]
        history = list(state.get("history", []))
        relabel_rng.bit_generator.state = state["relabel_rng"]
        torch.set_rng_state(state["torch_rng"])
        for _ in range(step):  # the batch order is a function of the seed: replay it to where the run stopped
            next(batches)
        print(f"sft: resuming from {resume_from} at step {step} of {config.max_steps}", flush=True)
    else:  # a fresh run: checkpoints left by other settings (or resume: false) would be mistaken for its own
        shutil.rmtree(Path(config.output_dir) / "checkpoints", ignore_errors=True)

    def checkpoint() -> None:
        if config.save_steps:
            _save_checkpoint(config, step, {
                "model": model.state_dict(), "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                "step": step, "loss_ema": loss_ema, "tokens_seen": tokens_seen, "history": history,
                "elapsed": earlier + time.monotonic() - start, "relabel_rng": relabel_rng.bit_generator.state,
                "torch_rng": torch.get_rng_state()})

    writer = _tensorboard(config, step)
    first_step, start = step, time.monotonic()
    while step < config.max_steps:
        batch = next(batches)
        if not relabellers:
            rows = [encoded[int(i)] for i in batch]
        else:  # fresh names every time a demonstration is batched: they cannot be memorised
            rows = []
            for i in batch:
                demonstration = demonstrations[int(i)]
                for relabeller in relabellers:
                    demonstration = relabeller.relabel(demonstration, relabel_rng)
                rows.append(encode_demonstration(codec, demonstration))
        width = max(len(r[0]) for r in rows)
        # Right padding needs no attention mask: under causal attention a real token never sees the
        # pads after it, and pads carry no label. (A padding mask would push SDPA off its fast path.)
        input_ids = torch.tensor([r[0] + [pad] * (width - len(r[0])) for r in rows])
        labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in rows])
        tokens_seen += sum(len(r[0]) for r in rows)
        loss = action_token_loss(model, input_ids, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        schedule.step()
        step += 1
        value = loss.item()
        loss_ema = value if loss_ema is None else 0.9 * loss_ema + 0.1 * value
        here = time.monotonic() - start
        elapsed = earlier + here
        if writer is not None:
            for tag, scalar in (("loss", value), ("loss_ema", loss_ema), ("learning_rate", schedule.get_last_lr()[0]),
                                ("tokens_per_second", tokens_seen / max(elapsed, 1e-9))):
                writer.add_scalar(f"sft/{tag}", scalar, step)
        if step % config.log_every == 0 or step == config.max_steps:
            history.append({"step": step, "loss": round(loss_ema, 6), "seconds": round(elapsed, 1)})
            eta = here / (step - first_step) * (config.max_steps - step)
            print(f"sft: step {step}/{config.max_steps} loss {loss_ema:.4f} ({elapsed:.0f}s, "
                  f"{tokens_seen / max(elapsed, 1e-9):.0f} tokens/s, ETA {_duration(eta)})",
                  flush=True)
        if config.save_steps and step % config.save_steps == 0:
            checkpoint()
        if step >= config.max_steps:
            break
        if config.max_minutes and elapsed >= 60 * config.max_minutes:
            # A machine-dependent stop: loud, and in the record, so the checkpoint is never mistaken for the
            # step budget's (``finished_sft_mismatch`` refuses to reuse it).
            print(f"sft: warning: max_minutes={config.max_minutes:g} stopped training at step {step} of "
                  f"max_steps={config.max_steps}; set max_minutes 0 to train every step", file=sys.stderr)
            checkpoint()  # a later run of the same settings continues from here
            break
    if writer is not None:
        writer.close()

    if config.lora_r:
        model = model.merge_and_unload()  # a plain checkpoint: GRPO and evaluation load it like any other
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    # The record goes last and an older one first: a checkpoint half-overwritten by a killed run never sits
    # next to a record that vouches for it (see ``finished_sft_mismatch``).
    (out / "sft_config.json").unlink(missing_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    # The action budget an evaluation of this checkpoint needs (``evolver eval`` reads it): the longest
    # demonstrated action with room to spare, so no action the policy learnt is cut short.
    longest = max(len(tokenizer(s.action, add_special_tokens=False)["input_ids"]) + 1
                  for d in demonstrations for s in d.steps)
    record = {**asdict(config), "steps": step, "final_loss": loss_ema, "log_history": history,
              "stopped_by": "max_steps" if step >= config.max_steps else "max_minutes",
              "rollout": {"max_turn_tokens": longest + ACTION_TOKEN_MARGIN, "longest_action_tokens": longest}}
    (out / "sft_config.json").write_text(json.dumps(record, indent=2))
    print(f"sft: {step} steps, loss {loss_ema:.4f}, checkpoint written to {out}")
    return out


def finished_sft_mismatch(folder: str | Path, expected: SFTConfig) -> str | None:
    """Why ``folder`` does not hold the finished SFT run ``expected`` describes; ``None`` when it does.

    It does when its ``sft_config.json`` records every setting of ``expected`` but the output folder, and
    every step of the step budget: with the same seed, training again would give the same checkpoint.

        reason = finished_sft_mismatch("runs/quickstart/sft", config)
        if reason is None: ...  # reuse it
    """
    folder = Path(folder)
    try:
        record = json.loads((folder / "sft_config.json").read_text())
    except FileNotFoundError:
        return f"{folder} has no sft_config.json (no finished SFT run)"
    except (OSError, ValueError) as exc:
        return f"{folder}/sft_config.json is unreadable ({exc})"
    if not isinstance(record, dict):
        return f"{folder}/sft_config.json is not a JSON object"
    wanted = json.loads(json.dumps(asdict(expected)))  # tuples as lists, as they are recorded
    for key, value in wanted.items():
        if key not in PROGRESS_FIELDS - {"log_every"} and record.get(key) != value:
            return f"{folder} was trained with {key}={record.get(key)!r}, not {value!r}"
    if record.get("steps") != expected.max_steps:
        return f"{folder} stopped at step {record.get('steps')!r} of {expected.max_steps}"
    return None


class _Parser(OneLineErrors, argparse.ArgumentParser):
    pass


def _parser() -> argparse.ArgumentParser:
    from transformers.hf_argparser import string_to_bool  # true/false/yes/no/1/0, as `evolver train` reads them

    parser = _Parser(prog="evolver sft", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="YAML file with SFTConfig fields; flags override it.")
    for f in fields(SFTConfig):
        kind = {"int": int, "float": float, "bool": string_to_bool}.get(str(f.type), str)
        help_ = escape_help(f.metadata.get("help"))
        flags = [f"--{f.name.replace('_', '-')}", f"--{f.name}"][: 1 + ("_" in f.name)]  # --env-id, --env_id
        if f.name == "observation_shaping":
            parser.add_argument(*flags, dest=f.name, nargs="*", default=None, help=help_)
            continue
        parser.add_argument(*flags, dest=f.name, type=kind, default=None, help=help_)
    return parser


def _old_spellings() -> dict[str, str]:
    """``--env_id`` -> ``--env-id`` for our own options; TRL's (``--output_dir``, ...) keep both quietly."""
    from transformers import TrainingArguments
    from trl import ModelConfig

    trl_names = {f.name for f in fields(TrainingArguments)} | {f.name for f in fields(ModelConfig)}
    return underscore_flags(f.name for f in fields(SFTConfig) if f.name not in trl_names)


_MAPPINGS = ("env_kwargs", "synthesis")  # fields given as a YAML mapping, or JSON on the command line


def parse_sft_config(argv: Sequence[str]) -> SFTConfig:
    """``SFTConfig`` from a YAML file (``--config``) and command-line flags (flags win).

    Every value is checked before anything runs: a bad one raises ``ConfigError`` naming it.
    """
    parser = _parser()
    args = vars(parser.parse_args(rename_flags(argv, _old_spellings(), "evolver sft")))
    actions = {a.dest: a for a in parser._actions}
    values: dict[str, Any] = {}
    config_path = args.pop("config")
    if config_path:
        for key, value in read_yaml(config_path).items():
            if key not in actions or key == "config":
                raise unknown_key(key, [f.name for f in fields(SFTConfig)], config_path)
            if key in _MAPPINGS:
                values[key] = value
            else:
                values[key] = coerce_yaml_value(actions[key], key, value, config_path)
    for key, value in args.items():
        if value is not None:
            if key in _MAPPINGS:
                try:
                    value = json.loads(value)
                except json.JSONDecodeError as exc:
                    flag = "--" + key.replace("_", "-")
                    raise ConfigError(f"{flag} must be a JSON object, got {value!r}: {exc}") from None
            values[key] = value
    config = SFTConfig(**values)
    check_env_id(config.env_id)
    try:
        check_env_kwargs(config.env_id, config.env_kwargs)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if config.model_name_or_path != "tiny":
        check_local_path(config.model_name_or_path, "model_name_or_path", hub_names=True)
    return config


def main(argv: Sequence[str] | None = None) -> int:
    try:
        config = parse_sft_config(list(sys.argv[1:] if argv is None else argv))
    except ConfigError as exc:
        print(f"evolver sft: {exc}", file=sys.stderr)
        return 2
    train_sft(config)
    return 0
