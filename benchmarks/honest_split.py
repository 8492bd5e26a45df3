"""Supervised baseline on the product-held-out split: clean SFT, then held-out success with its interval.

Usage:
    python benchmarks/honest_split.py --steps 750 --seed 0 --out runs/honest/sft750_s0
    python benchmarks/honest_split.py --checkpoint runs/honest/rl/checkpoint --out runs/honest/rl_eval
    python benchmarks/honest_split.py --steps 750 --seed 0 --tasks-file runs/questions/none_s0/tasks.jsonl \
        --out runs/honest/synth750_s0     # warm start on synthesised tasks only (no human task)
    python benchmarks/honest_split.py --coverage      # which dev action tokens never occur in training
    python benchmarks/honest_split.py --steps 750 --seed 0 --out runs/honest/num750_s0 \
        --observation-shaping drop_repeated_instruction,top_results=5,numbered_results   # click by position
    python benchmarks/honest_split.py --checkpoint runs/honest/sft750_s0/sft --copying 120   # what it copies
    python benchmarks/honest_split.py --checkpoint runs/honest/sft750_s0/sft --failures 200  # what it gets wrong
    python benchmarks/honest_split.py --seeds 0,1,2 --versus baseline \
        --over-seeds "main job=runs/honest/qs_s{seed}_eval" "baseline=runs/honest/sft1950_s{seed}"

Trains the quickstart's tiny policy (hidden 128, 2 layers, 4 heads, lr 3e-3, batch 16) on clean oracle
demonstrations (``imperfect_share`` 0, no experience block) of the train goals of a 600-product shop
with synthetic goals cut by ``split_scheme=product`` (no dev or test product appears in any train goal),
for ``--steps`` steps (``--tasks-file``: on the tasks of that JSONL instead, e.g. those that
``evolver questions synthesize --seed-split none`` proposed from exploration alone; ``--with-train``
adds the train goals to them), or takes ``--checkpoint`` as it is; then evaluates it with
``evolver_train.evaluation.evaluate_policy``: every dev goal once (595), sampled at temperature 1, and
``--train-goals`` train goals likewise (the seen-product reference). Writes ``<out>/report.json``
(success with its 95% Wilson interval, score, the evaluation sample's fingerprint, wall times) and
prints it.

``--coverage`` trains nothing: it builds the tiny policy's tokenizer for the shop, plays the oracle on
``--num-demonstrations`` train goals and on every dev goal, and counts the dev action tokens that no
train demonstration contains (an untrained embedding the policy would have to produce), by action kind.

``--over-seeds LABEL=FOLDER ...`` trains nothing: it reads the ``report.json`` of each row's folder for every
seed of ``--seeds`` (``{seed}`` in the folder is replaced), refuses reports whose evaluation samples
differ, and prints a markdown table: each row's dev success per seed, the mean of the per-seed means with
Student's t interval over seeds and the evaluation-noise interval (Wilson, pooled episodes), then each
row minus ``--versus`` (paired t over seeds).

``--copying N`` plays the first N dev goals with ``--checkpoint`` and counts what the policy copies
from its context: searches that repeat the instruction (the oracle's query), clicks on a product
id that is on the page (a valid click) against all clicks on an id, and, under ``numbered_results``,
valid clicks by position on a results page against all of them, and the instruction's words kept in
the episode's first search, apart for words some train goal uses and words none does. ``--failures N`` plays the same
goals and counts, from WebShop's reward breakdown, what each purchase got wrong: the product type,
a required option value, an attribute, the price bound (a purchase can miss several).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

import gymnasium as gym

import evolver_gym  # noqa: F401  (registers the environment ids)

ENV_ID = "evolver/WebShop-v0"
SHAPING = ["drop_repeated_instruction", "top_results=5"]
# The quickstart's rollout layout (configs/quickstart.yaml).
ROLLOUT = dict(max_turns=8, max_episode_tokens=640, max_turn_tokens=48, max_observation_tokens=256)


def env_kwargs(num_products: int, split_scheme: str) -> dict:
    return dict(num_products=num_products, max_steps=8, goals="synthetic", split_scheme=split_scheme)


def evaluate(checkpoint: str, split: str, num_tasks: int | None, kwargs: dict, seed: int,
             shaping: list[str]) -> dict:
    from evolver_train.evaluation import RolloutSettings, evaluate_policy
    from evolver_train.policy import build_policy

    model, tokenizer = build_policy(checkpoint)
    model.eval()
    start = time.monotonic()
    report = evaluate_policy(model, tokenizer, ENV_ID, split=split, k=1, temperature=1.0, num_tasks=num_tasks,
                             env_kwargs=kwargs, observation_shaping=shaping, rollout=RolloutSettings(**ROLLOUT),
                             seed=seed)
    keep = ("num_episodes", "success_rate", "success_rate_ci95", "score", "episode_len", "invalid_action_rate",
            "truncated_rate")
    return {"split": split, **{key: report[key] for key in keep},
            "sample": {key: v for key, v in report["sample"].items() if key not in ("task_ids", "seeds")},
            "seconds": round(time.monotonic() - start, 1)}


def token_coverage(kwargs: dict, num_demonstrations: int, shaping: list[str], whole_word_min_count: int) -> dict:
    """Dev action tokens absent from the train demonstrations' actions, in total and by action kind."""
    from collections import Counter

    from evolver_train.envs import shape_environment
    from evolver_train.policy import build_environment_tokenizer
    from evolver_train.sft import collect_demonstrations

    env = shape_environment(gym.make(ENV_ID, **kwargs), shaping)
    train, dev = env.unwrapped.tasks("train"), env.unwrapped.tasks("dev")
    tokenizer = build_environment_tokenizer(env, train, whole_word_min_count=whole_word_min_count)

    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    seen = {i for d in collect_demonstrations(env, train, num_demonstrations, imperfect_share=0.0, seed=0)
            for step in d.steps for i in ids(step.action)}
    tokens, unseen, episodes, kinds, examples = 0, 0, 0, Counter(), Counter()
    for demo in collect_demonstrations(env, dev, len(dev), imperfect_share=0.0, seed=0):
        hit = False
        for step in demo.steps:
            action = ids(step.action)
            missing = [t for t in action if t not in seen]
            tokens, unseen = tokens + len(action), unseen + len(missing)
            if missing:
                hit = True
                kinds[step.action.split("[")[0]] += 1
                examples.update(tokenizer.convert_ids_to_tokens(missing))
        episodes += hit
    env.close()
    return {"vocabulary": len(tokenizer), "dev_goals": len(dev), "dev_action_tokens": tokens,
            "not_in_train_actions": unseen, "dev_episodes_with_one": episodes, "actions_with_one_by_kind": kinds,
            "most_common": examples.most_common(10)}


def play_dev(checkpoint: str, n: int, kwargs: dict, seed: int, shaping: list[str], wrapper) -> None:
    """Play the first n dev goals with ``checkpoint``, each env wrapped by ``wrapper(env)`` (which counts)."""
    from evolver_train.envs import shape_environment
    from evolver_train.evaluation import RolloutSettings, evaluate_policy
    from evolver_train.policy import build_policy

    model, tokenizer = build_policy(checkpoint)
    model.eval()
    evaluate_policy(model, tokenizer, ENV_ID, split="dev", k=1, temperature=1.0, num_tasks=n, env_kwargs=kwargs,
                    rollout=RolloutSettings(**ROLLOUT), seed=seed,
                    env_factory=lambda: wrapper(shape_environment(gym.make(ENV_ID, **kwargs), shaping)))


def copying(checkpoint: str, n: int, kwargs: dict, seed: int, shaping: list[str]) -> dict:
    """What the policy copies over n dev goals (``CopyCount``'s counts)."""
    counts = CopyCount.new_counts()
    env = gym.make(ENV_ID, **kwargs)
    train_words = {w for goal in env.unwrapped.splits["train"] for w in words(goal["instruction_text"])}
    env.close()
    play_dev(checkpoint, n, kwargs, seed, shaping, lambda env: CopyCount(env, counts, train_words))
    return counts


def words(text: str) -> set[str]:
    """The lower-cased words of ``text`` (letters, digits, and ' . - inside a word)."""
    return set(re.findall(r"[a-z0-9][a-z0-9'.-]*", text.lower()))


class CopyCount(gym.Wrapper):
    """Counts, into a shared dict, what the policy copies from its context.

    ``searches_repeating_the_instruction`` (the oracle's query); id clicks and those on the page;
    clicks by position on a results page (``numbered_results``) and those on the page; and the
    instruction's words kept in each episode's first search, apart for words ``train_words`` holds
    (``..._train_goals_use``, ``of_which_kept``) and words it does not (``..._no_train_goal_uses``,
    ``of_which_kept_unused``).
    """

    @staticmethod
    def new_counts() -> dict:
        return {"searches": 0, "searches_repeating_the_instruction": 0, "id_clicks": 0, "id_clicks_on_the_page": 0,
                "position_clicks": 0, "position_clicks_on_the_page": 0,
                "first_search_words_train_goals_use": 0, "of_which_kept": 0,
                "first_search_words_no_train_goal_uses": 0, "of_which_kept_unused": 0}

    def __init__(self, env, counts: dict, train_words: set[str]):
        super().__init__(env)
        self.counts, self.train_words = counts, train_words

    def reset(self, **kw):
        obs, info = self.env.reset(**kw)
        self.instruction, self.on_results, self.searched = info["instruction"].lower(), False, False
        return obs, info

    def step(self, action):
        out = self.env.step(action)
        counts = self.counts
        if action.startswith("search["):
            counts["searches"] += 1
            counts["searches_repeating_the_instruction"] += action[7:-1] == self.instruction
            if not self.searched:
                self.searched, query = True, words(action[7:-1])
                for word in words(self.instruction):
                    if word in self.train_words:
                        counts["first_search_words_train_goals_use"] += 1
                        counts["of_which_kept"] += word in query
                    else:
                        counts["first_search_words_no_train_goal_uses"] += 1
                        counts["of_which_kept_unused"] += word in query
        elif action.startswith("click[b0"):  # a product id, well formed or not
            counts["id_clicks"] += 1
            counts["id_clicks_on_the_page"] += bool(out[4].get("action_valid"))
        elif self.on_results and action[6:-1].isdigit() and action.startswith("click["):  # numbered_results
            counts["position_clicks"] += 1
            counts["position_clicks_on_the_page"] += bool(out[4].get("action_valid"))
        if out[4].get("action_valid"):
            self.on_results = "(Total results: " in out[0]
        return out


def failures(checkpoint: str, n: int, kwargs: dict, seed: int, shaping: list[str]) -> dict:
    """What the purchases over n dev goals got wrong (``PurchaseBreakdown``'s counts)."""
    counts = PurchaseBreakdown.new_counts()
    play_dev(checkpoint, n, kwargs, seed, shaping, lambda env: PurchaseBreakdown(env, counts))
    return counts


class PurchaseBreakdown(gym.Wrapper):
    """Counts, into a shared dict, what each purchase got wrong from WebShop's ``info["evaluation"]``.

    A purchase can miss several parts at once, so the ``purchases_*`` counts overlap: ``wrong_type``
    (``r_type`` < 1: the bought title does not share the goal's product noun), ``missing_option``
    (some required option value not chosen; over goals that ask for options), ``missing_attribute``
    and ``over_price``. ``not_bought`` counts episodes that ended or were cut without a purchase.
    """

    @staticmethod
    def new_counts() -> dict:
        return {"episodes": 0, "successes": 0, "not_bought": 0, "purchases": 0, "purchases_wrong_type": 0,
                "purchases_with_options_asked": 0, "purchases_missing_option": 0,
                "purchases_missing_attribute": 0, "purchases_over_price": 0}

    def __init__(self, env, counts: dict):
        super().__init__(env)
        self.counts = counts

    def reset(self, **kw):
        self.counts["episodes"] += 1
        self.counts["not_bought"] += 1  # until a purchase: the rollout's budget can also cut an episode
        return self.env.reset(**kw)

    def step(self, action):
        out = self.env.step(action)
        ev, c = out[4].get("evaluation") or {}, self.counts
        if out[2] and ev.get("purchased") is not None:
            c["not_bought"] -= 1
            c["purchases"] += 1
            c["successes"] += bool(out[4].get("success"))
            c["purchases_wrong_type"] += ev.get("r_type", 1.0) < 1.0
            if ev.get("r_option") is not None:
                c["purchases_with_options_asked"] += 1
                c["purchases_missing_option"] += ev["r_option"] < 1.0
            c["purchases_missing_attribute"] += ev.get("r_att", 1.0) < 1.0
            c["purchases_over_price"] += ev.get("r_price") is False
        return out


def over_seeds(rows: list[str], seeds: list[int], versus: str | None) -> str:
    """The markdown summary of ``--over-seeds`` (see the module docstring)."""
    from evolver_gym.core.stats import difference_interval, summarize_over_seeds

    outcomes: dict[str, dict[int, list[float]]] = {}
    samples: dict[str, str] = {}
    for row in rows:
        label, sep, pattern = row.partition("=")
        if not sep or not label or "{seed}" not in pattern:
            raise SystemExit(f"--over-seeds takes LABEL=FOLDER with {{seed}} in FOLDER, got {row!r}")
        outcomes[label] = {}
        for seed in seeds:
            folder = pattern.replace("{seed}", str(seed))
            try:
                dev = json.loads((Path(folder) / "report.json").read_text())["dev"]
            except (OSError, ValueError, KeyError) as exc:
                raise SystemExit(f"--over-seeds: no readable report.json in {folder!r} ({exc})") from None
            n, k = dev["num_episodes"], round(dev["success_rate"] * dev["num_episodes"])
            outcomes[label][seed] = [1.0] * k + [0.0] * (n - k)  # order is irrelevant to every statistic here
            samples[folder] = dev["sample"]["fingerprint"]
    if len(set(samples.values())) > 1:
        raise SystemExit("--over-seeds: the reports evaluated different episodes, so they are not comparable: "
                         + ", ".join(f"{f} {fp}" for f, fp in samples.items()))
    if versus is not None and versus not in outcomes:
        raise SystemExit(f"--versus must be one of the labels {sorted(outcomes)}, got {versus!r}")

    def pct(x: float, sign: str = "") -> str:  # one seed has no spread over seeds: its t interval is infinite
        return f"{100 * x:{sign}.1f}" if abs(x) != float("inf") else "n/a"

    head = " | ".join(f"seed {s}" for s in seeds)
    lines = [f"Dev success, % (evaluation sample {next(iter(samples.values()))}, "
             f"{len(next(iter(outcomes.values()))[seeds[0]])} episodes per evaluation):", "",
             f"| policy | {head} | mean [95% t over seeds] | evaluation noise [95%] |",
             "|---|" + "---|" * len(seeds) + "---|---|"]
    for label, by_seed in outcomes.items():
        summary = summarize_over_seeds(by_seed)
        lo, hi = summary["interval"]
        elo, ehi = summary["episode_interval"]
        cells = " | ".join(pct(sum(by_seed[s]) / len(by_seed[s])) for s in seeds)
        lines.append(f"| {label} | {cells} | {pct(summary['mean'])} [{pct(lo)}, {pct(hi)}] | "
                     f"[{pct(elo)}, {pct(ehi)}] |")
    if versus is not None:
        lines += ["", f"| difference, points | {head} | mean [95% paired t over seeds] |",
                  "|---|" + "---|" * len(seeds) + "---|"]
        base = outcomes[versus]
        for label, by_seed in outcomes.items():
            if label == versus:
                continue
            d = difference_interval(by_seed, base)
            lo, hi = d["interval"]
            cells = " | ".join(f"{100 * (sum(by_seed[s]) / len(by_seed[s]) - sum(base[s]) / len(base[s])):+.1f}"
                               for s in seeds)
            lines.append(f"| {label} − {versus} | {cells} | {pct(d['difference'], '+')} "
                         f"[{pct(lo, '+')}, {pct(hi, '+')}] |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=750, help="SFT steps (batch 16)")
    p.add_argument("--seed", type=int, default=0, help="SFT seed (demonstrations, init, batches)")
    p.add_argument("--relabel-ids", default="", help="SFTConfig.relabel_ids (WebShop: 'b0([a-z0-9]{8})'; empty: off)")
    p.add_argument("--relabel-words", type=float, default=0.0,
                   help="SFTConfig.relabel_words: chance that each content word of an instruction gets another "
                        "word of the shop's vocabulary per batch (0: off)")
    p.add_argument("--whole-word-min-count", type=int, default=0,
                   help="SFTConfig.whole_word_min_count (0: a token for every word; N: words training uses N times)")
    p.add_argument("--max-turn-tokens", type=int, default=ROLLOUT["max_turn_tokens"],
                   help="rollout budget of one action (a tokenizer that spells more words needs more)")
    p.add_argument("--allowed-actions-only", "--valid-actions-only", dest="allowed_actions_only", action="store_true",
                   help="sample clicks only among the page's clickables, info['allowed_actions'] "
                        "(RolloutSettings.allowed_actions_only; --valid-actions-only is its old name)")
    p.add_argument("--max-episode-tokens", type=int, default=ROLLOUT["max_episode_tokens"],
                   help="rollout budget of an episode after its first observation")
    p.add_argument("--tasks-file", default="", help="demonstrate the tasks of this JSONL instead of the train goals")
    p.add_argument("--with-train", action="store_true", help="with --tasks-file: demonstrate the train goals too")
    p.add_argument("--checkpoint", default=None, help="evaluate this checkpoint instead of training one")
    p.add_argument("--num-products", type=int, default=600)
    p.add_argument("--observation-shaping", default=",".join(SHAPING),
                   help="comma-separated observation shapers of training and evaluation "
                        "(add numbered_results for clicks by position)")
    p.add_argument("--split-scheme", default="product")
    p.add_argument("--num-demonstrations", type=int, default=2000)
    p.add_argument("--train-goals", type=int, default=128, help="train goals evaluated (0 = none)")
    p.add_argument("--eval-seed", type=int, default=0, help="seed of the evaluation's episodes")
    p.add_argument("--num-threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    p.add_argument("--coverage", action="store_true", help="count unseen dev action tokens; train nothing")
    p.add_argument("--copying", type=int, default=0, metavar="N",
                   help="with --checkpoint: count what the policy copies on N dev goals; train nothing")
    p.add_argument("--failures", type=int, default=0, metavar="N",
                   help="with --checkpoint: play the first N dev goals, print what their purchases got wrong")
    p.add_argument("--out", default=None, help="folder of the checkpoint and report.json")
    p.add_argument("--over-seeds", nargs="+", default=None, metavar="LABEL=FOLDER",
                   help="summarise finished reports over --seeds instead of training ({seed} in FOLDER)")
    p.add_argument("--seeds", default="0,1,2", help="with --over-seeds: the seeds, comma-separated")
    p.add_argument("--versus", default=None, help="with --over-seeds: the row every other row is compared with")
    args = p.parse_args()
    if args.over_seeds:
        try:
            seeds = [int(s) for s in args.seeds.split(",")]
        except ValueError:
            p.error(f"--seeds must be comma-separated integers, got {args.seeds!r}")
        print(over_seeds(args.over_seeds, seeds, args.versus))
        return
    shaping = [name for name in args.observation_shaping.split(",") if name]
    # every rollout of this run (evaluation, --copying, --failures) reads the module's settings
    ROLLOUT.update(max_turn_tokens=args.max_turn_tokens, max_episode_tokens=args.max_episode_tokens,
                   allowed_actions_only=args.allowed_actions_only)
    if args.coverage:
        kwargs = env_kwargs(args.num_products, args.split_scheme)
        print(json.dumps(token_coverage(kwargs, args.num_demonstrations, shaping, args.whole_word_min_count), indent=2))
        return
    for flag, n, count in (("--copying", args.copying, copying), ("--failures", args.failures, failures)):
        if n:
            if not args.checkpoint:
                p.error(f"{flag} needs --checkpoint")
            kwargs = env_kwargs(args.num_products, args.split_scheme)
            print(json.dumps(count(args.checkpoint, n, kwargs, args.eval_seed, shaping), indent=2))
            return
    if not args.out:
        p.error("--out is required (unless --coverage)")
    if args.with_train and not args.tasks_file:
        p.error("--with-train needs --tasks-file")

    import torch

    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    kwargs = env_kwargs(args.num_products, args.split_scheme)
    out = Path(args.out)
    record: dict = {"command": "python benchmarks/honest_split.py " + " ".join(os.sys.argv[1:]),
                    "env_kwargs": kwargs, "observation_shaping": shaping, "rollout": dict(ROLLOUT),
                    "load_before": os.getloadavg()}
    checkpoint = args.checkpoint
    if checkpoint is None:
        from evolver_train.sft import SFTConfig, train_sft

        config = SFTConfig(output_dir=str(out / "sft"), env_id=ENV_ID, env_kwargs=kwargs, split="train",
                           tasks_file=args.tasks_file, with_split=args.with_train,
                           num_demonstrations=args.num_demonstrations, imperfect_share=0.0, hidden_size=128,
                           num_hidden_layers=2, num_attention_heads=4, learning_rate=3e-3, batch_size=16,
                           max_steps=args.steps, max_minutes=0, observation_shaping=shaping,
                           max_observation_tokens=ROLLOUT["max_observation_tokens"], seed=args.seed,
                           num_threads=args.num_threads, relabel_ids=args.relabel_ids, log_every=100,
                           relabel_words=args.relabel_words,
                           whole_word_min_count=args.whole_word_min_count)
        start = time.monotonic()
        checkpoint = str(train_sft(config))
        record["sft"] = {"steps": args.steps, "seed": args.seed, "tasks_file": args.tasks_file,
                         "whole_word_min_count": args.whole_word_min_count, "relabel_words": args.relabel_words,
                         "with_train": args.with_train, "seconds": round(time.monotonic() - start, 1)}
    record["checkpoint"] = checkpoint
    record["dev"] = evaluate(checkpoint, "dev", None, kwargs, args.eval_seed, shaping)
    if args.train_goals:
        record["train"] = evaluate(checkpoint, "train", args.train_goals, kwargs, args.eval_seed, shaping)
    record["load_after"] = os.getloadavg()
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
