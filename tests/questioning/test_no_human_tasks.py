"""Self-questioning with no human task: explorations start from WebShop's goal-free start states, and
what they buy becomes verifiable tasks on products no dev/test goal uses; a warm start can then learn
from those tasks alone (``SFTConfig.tasks_file``)."""

from __future__ import annotations

import json
import re

import pytest

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_gym.core import Task, record_episode
from evolver_gym.webshop import WebShopEnv
from evolver_train.errors import ConfigError
from evolver_train.sft import SFTConfig, demonstrated_tasks, read_tasks_file, train_sft
from wrappers.questioning import SynthesisConfig, TaskPool, build_synthesizer, replay
from wrappers.questioning.cli import main
from wrappers.questioning.proposers import HindsightProposer

SHOP = {"num_products": 200, "max_steps": 8, "goals": "synthetic", "split_scheme": "product"}


@pytest.fixture(scope="module")
def env():
    return WebShopEnv(**SHOP)


def test_an_exploration_start_has_no_goal_and_buying_scores_nothing_but_is_recorded(env):
    start = env.exploration_tasks(3)[2]
    assert (start.task_id, start.split, start.goal, start.reference, start.instruction) == (
        "webshop/explore/2", "explore", {}, [], "")
    assert env.exploration_tasks(3) == env.exploration_tasks(3)  # the same starts on every call
    obs, info = env.reset(options={"task": start})
    assert info["progress"] == 0.0 and info["available_actions"]["has_search_bar"]
    product = env.tasks("train")[0].goal
    env.step(f"search[{product['query']}]")
    _, _, _, _, info = env.step(f"click[{product['asin'].lower()}]")
    assert info["progress"] == 0.0  # no goal: no progress signal to follow
    _, reward, terminated, _, info = env.step("click[buy now]")
    assert terminated and reward == 0.0 and info["success"] is False
    assert info["evaluation"]["purchased"]["asin"] == product["asin"]
    # Only an exploration start may lack a goal: any other task without one is still refused.
    goalless = Task(task_id="webshop/train/x", env_id="evolver/WebShop-v0", instruction="buy socks")
    with pytest.raises(ValueError, match="WebShop task 'webshop/train/x' goal lacks"):
        env.reset(options={"task": goalless})
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match=f"exploration_tasks needs n >= 1, got {bad!r}"):
            env.exploration_tasks(bad)


def test_what_an_exploration_buys_becomes_a_task_that_its_reference_solves(env):
    start = env.exploration_tasks(1)[0]
    product = env.tasks("train")[0].goal
    actions = iter([f"search[{product['query']}]", f"click[{product['asin'].lower()}]", "click[buy now]"])
    traj = record_episode(env, lambda obs, info: next(actions), options={"task": start}, task=start)
    task = env.hindsight_task(traj)
    assert task is not None and task.parent_id == start.task_id and task.goal["asin"] == product["asin"]
    assert replay(WebShopEnv(**SHOP), task, task.reference).success


def test_synthesis_from_no_human_task_stays_off_held_out_products(env):
    pool = TaskPool(None)
    config = SynthesisConfig(batch=32, seed=3, seed_split="none", embedding_threshold=None, leakage_cosine=None)
    synth = build_synthesizer(env, pool, config, embedder=None)
    assert {t.split for t in synth.seed_tasks} == {"explore"} and len(synth.seed_tasks) == 32
    synth.run(40)
    assert len(pool) == 40  # the goal-free starts never enter the pool: only what was proposed
    tasks = pool.tasks(origin="synthetic")
    held_out = {t.goal["asin"] for split in ("dev", "test") for t in env.tasks(split)}
    human = {t.instruction for t in env.tasks("train")}
    assert all(t.parent_id.startswith("webshop/explore/") for t in tasks)
    assert not {t.goal["asin"] for t in tasks} & held_out
    assert not {t.instruction for t in tasks} & human
    fresh = WebShopEnv(**SHOP)
    assert all(replay(fresh, t, t.reference).success for t in tasks)
    # Goals no human wrote: products that carry no train goal are among them.
    train_products = {t.goal["asin"] for t in env.tasks("train")}
    assert {t.goal["asin"] for t in tasks} - train_products


def test_an_env_without_exploration_starts_is_refused_by_name():
    class NoStarts:
        unwrapped = None

        def tasks(self, split):
            return []

    bare = NoStarts()
    bare.unwrapped = bare
    with pytest.raises(ValueError, match="seed_split 'none' needs an environment with exploration_tasks.*NoStarts"):
        build_synthesizer(bare, TaskPool(None), SynthesisConfig(seed_split="none"), embedder=None)


def test_cli_synthesizes_from_no_human_task_and_refuses_an_unknown_split(tmp_path):
    out = tmp_path / "none"
    args = ["synthesize", "--env-id", "evolver/WebShop-v0", "--env-kwargs", json.dumps(SHOP), "--n", "12",
            "--batch", "16", "--no-embeddings", "--quiet"]
    assert main([*args, "--seed-split", "none", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all(r["parent_id"].startswith("webshop/explore/") for r in rows)
    from evolver_train.cli import main as evolver

    bad = tmp_path / "bad"
    assert evolver(["questions", *args, "--seed-split", "nosuch", "--out", str(bad)]) == 2
    assert not bad.exists()  # a refused command leaves no folder behind


# A warm start of two steps on a policy small enough for a test.
TINY_SFT = dict(env_kwargs=SHOP, max_minutes=0, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                batch_size=4, max_steps=2, num_demonstrations=8, log_every=1)


def _synthesised_tasks_file(env, folder, n: int):
    """The JSONL of ``n`` tasks synthesised from goal-free starts."""
    pool = TaskPool(None)
    build_synthesizer(env, pool, SynthesisConfig(batch=32, seed_split="none", embedding_threshold=None,
                                                 leakage_cosine=None), embedder=None).run(n)
    path = folder / "tasks.jsonl"
    pool.export_jsonl(path, origin="synthetic")
    return path


def test_a_warm_start_learns_from_synthesised_tasks_only(tmp_path, env):
    path = _synthesised_tasks_file(env, tmp_path, 16)
    tasks = read_tasks_file(path, "evolver/WebShop-v0")
    assert len(tasks) == 16 and all(isinstance(t, Task) for t in tasks)
    out = train_sft(SFTConfig(output_dir=str(tmp_path / "sft"), tasks_file=str(path), **TINY_SFT))
    from evolver_train.policy import load_policy

    _, tokenizer = load_policy(out)
    # The vocabulary comes from the synthesised tasks (and the shop), not from the human train goals.
    words = tasks[0].instruction.split()[:6]
    assert tokenizer.unk_token_id not in tokenizer(" ".join(words), add_special_tokens=False)["input_ids"]
    assert json.loads((out / "sft_config.json").read_text())["tasks_file"] == str(path)


def test_with_split_demonstrates_the_human_goals_after_the_synthesised_tasks(tmp_path, env):
    path = _synthesised_tasks_file(env, tmp_path, 6)
    train = env.unwrapped.tasks("train")
    alone = demonstrated_tasks(SFTConfig(env_kwargs=SHOP, tasks_file=str(path)), env)
    both = demonstrated_tasks(SFTConfig(env_kwargs=SHOP, tasks_file=str(path), with_split=True), env)
    assert [t.task_id for t in both] == [t.task_id for t in alone] + [t.task_id for t in train]
    assert len(alone) == 6 and all(t.origin == "synthetic" for t in alone)
    out = train_sft(SFTConfig(output_dir=str(tmp_path / "sft"), tasks_file=str(path), with_split=True, **TINY_SFT))
    assert json.loads((out / "sft_config.json").read_text())["with_split"] is True
    with pytest.raises(ConfigError, match="both are empty .*with_split=True"):
        SFTConfig(with_split=True)
    with pytest.raises(ConfigError, match="with_split must be true or false, got 'false'"):
        SFTConfig(tasks_file=str(path), with_split="false")


def test_a_bad_tasks_file_is_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match="tasks_file: no such file or folder .*nosuch.jsonl"):
        SFTConfig(tasks_file=str(tmp_path / "nosuch.jsonl"))
    wrong_env = tmp_path / "arena.jsonl"
    wrong_env.write_text(json.dumps({"task_id": "a/0", "env_id": "evolver/Other-v0", "instruction": "x"}) + "\n")
    with pytest.raises(ConfigError, match="line 1 is a task of 'evolver/Other-v0', not of env_id"):
        read_tasks_file(wrong_env, "evolver/WebShop-v0")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"task_id": "a/0"}\n')
    with pytest.raises(ConfigError, match="line 1 is not a task: task dict lacks required keys"):
        read_tasks_file(broken, "evolver/WebShop-v0")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="holds no task"):
        read_tasks_file(empty, "evolver/WebShop-v0")


def test_train_with_no_human_task_learns_from_the_synthesised_pool_alone(tmp_path, capsys):
    from evolver_train.train_cli import main as train

    questions = tmp_path / "questions"
    assert main(["synthesize", "--env-id", "evolver/WebShop-v0", "--env-kwargs", json.dumps(SHOP), "--n", "12",
                 "--batch", "16", "--no-embeddings", "--quiet", "--seed-split", "none", "--out", str(questions)]) == 0
    sft = {"tasks_file": str(questions / "tasks.jsonl"), "num_demonstrations": 8, "max_steps": 2, "max_minutes": 0,
           "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "batch_size": 4}
    out = tmp_path / "run"
    common = ["--model_name_or_path", "tiny", "--env-kwargs", json.dumps(SHOP), "--task-split", "none",
              "--wrappers", "questioning",
              "--max_steps", "1", "--per_device_train_batch_size", "4", "--num_generations", "2",
              "--evolver-eval-episodes", "0", "--max-turns", "3", "--max-episode-tokens", "200",
              "--max-turn-tokens", "12", "--report_to", "none", "--save_strategy", "no"]
    rc = train([*common, "--output_dir", str(out), "--sft", json.dumps(sft),
                "--questioning-pool", str(questions / "pool.sqlite")])
    assert rc == 0 and (out / "model.safetensors").exists()
    printed = capsys.readouterr().out
    assert "mechanisms: questioning" in printed and "synth 1.00" in printed  # every rollout on a synthesised task
    pool = TaskPool(questions / "pool.sqlite")
    assert pool.tasks(origin="seed", status=None) == [] and len(pool) == 12  # no human task entered the pool
    pool.close()
    # Refused in one line, before anything is written: no questioning, no pool, a warm start with nothing to show.
    from evolver_train.cli import main as evolver

    refusals = {
        "needs questioning in wrappers, got ['navigation']": ["--wrappers", "navigation"],
        "needs tasks before the first step: set questioning_pool": [],
        "questioning_pool: no such file or folder": ["--questioning-pool", str(tmp_path / "nosuch.sqlite")],
        "sft: task_split 'none' has no human task to demonstrate": [
            "--questioning-pool", str(questions / "pool.sqlite"), "--sft", json.dumps({"max_steps": 1})],
    }
    for message, extra in refusals.items():
        before = sorted(tmp_path.rglob("*"))
        assert evolver(["train", *common, "--output_dir", str(tmp_path / "refused"), *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert sorted(tmp_path.rglob("*")) == before


def test_complete_targets_admits_only_tasks_that_pin_every_option_of_their_product(env):
    # A purchase without every option chosen becomes a task any option value satisfies; the shop's
    # goals pin every option, so such tasks teach buying without choosing.
    start = env.exploration_tasks(1)[0]
    product = next(t.goal for t in env.tasks("train") if len(env.catalog.by_asin[t.goal["asin"]]["options"]) >= 2)
    actions = iter([f"search[{product['query']}]", f"click[{product['asin'].lower()}]", "click[buy now]"])
    open_task = env.hindsight_task(record_episode(env, lambda obs, info: next(actions), options={"task": start},
                                                  task=start))
    assert open_task.metadata["open_choices"] == sorted(env.catalog.by_asin[product["asin"]]["options"])

    def synthesise(complete: bool) -> tuple[list[Task], dict]:
        pool = TaskPool(None)
        synth = build_synthesizer(env, pool, SynthesisConfig(batch=32, seed=3, seed_split="none",
                                                             embedding_threshold=None, leakage_cosine=None,
                                                             complete_targets=complete), embedder=None)
        synth.run(30)
        return pool.tasks(origin="synthetic"), synth.report["stages"]

    loose, loose_report = synthesise(False)
    complete, report = synthesise(True)
    assert any(t.metadata["open_choices"] for t in loose) and loose_report["complete_targets"]["in"] == 0
    assert len(complete) == 30 and not any(t.metadata["open_choices"] for t in complete)
    for t in complete:
        assert sorted(t.goal["goal_options"]) == sorted(t.metadata["purchased"]["options"].values())
        assert len(t.goal["goal_options"]) == len(env.catalog.by_asin[t.goal["asin"]]["options"])
    reasons = report["complete_targets"]["reasons"]
    assert report["complete_targets"]["rejected"] > 0 and all(r.startswith("leaves a choice open: ") for r in reasons)


def test_fill_open_choices_pins_every_option_with_a_value_the_product_offers(env, tmp_path):
    start = env.exploration_tasks(1)[0]
    product = next(t.goal for t in env.tasks("train") if len(env.catalog.by_asin[t.goal["asin"]]["options"]) >= 2)
    offered = env.catalog.by_asin[product["asin"]]["options"]
    first_value = offered[sorted(offered)[0]][-1]  # the last value of the first option

    def bought(*choices: str):
        actions = iter([f"search[{product['query']}]", f"click[{product['asin'].lower()}]",
                        *(f"click[{c}]" for c in choices), "click[buy now]"])
        return record_episode(env, lambda obs, info: next(actions), options={"task": start}, task=start)

    none_chosen, one_chosen = bought(), bought(first_value)
    assert env.hindsight_task(none_chosen).metadata["open_choices"] == sorted(offered)  # the default is unchanged
    filled = env.hindsight_task(none_chosen, fill_open_choices=True)
    assert filled.metadata["open_choices"] == [] and filled.metadata["filled_choices"] == sorted(offered)
    assert len(filled.goal["goal_options"]) == len(offered)
    assert all(v in values for v, values in zip(filled.goal["goal_options"], (offered[k] for k in sorted(offered))))
    assert all(f"click[{v}]" in filled.reference for v in filled.goal["goal_options"])
    assert replay(WebShopEnv(**SHOP), filled, filled.reference).success
    assert env.hindsight_task(none_chosen, fill_open_choices=True) == filled  # seeded by the trajectory
    # A chosen option is kept; only the open ones are filled.
    partly = env.hindsight_task(one_chosen, fill_open_choices=True)
    assert partly.metadata["filled_choices"] == sorted(offered)[1:] and first_value in partly.goal["goal_options"]
    assert replay(WebShopEnv(**SHOP), partly, partly.reference).success

    # In synthesis: every task pins every option, so complete_targets has nothing left to refuse.
    pool = TaskPool(None)
    config = SynthesisConfig(batch=32, seed=3, seed_split="none", embedding_threshold=None, leakage_cosine=None,
                             complete_targets=True, fill_open_choices=True)
    synth = build_synthesizer(env, pool, config, embedder=None)
    synth.run(30)
    tasks = pool.tasks(origin="synthetic")
    assert len(tasks) == 30 and synth.report["stages"]["complete_targets"]["rejected"] == 0
    assert any(t.metadata["filled_choices"] for t in tasks)
    for t in tasks:
        assert len(t.goal["goal_options"]) == len(env.catalog.by_asin[t.goal["asin"]]["options"])
    # The CLI flag is the same setting.
    out = tmp_path / "filled"
    assert main(["synthesize", "--env-id", "evolver/WebShop-v0", "--env-kwargs", json.dumps(SHOP), "--n", "12",
                 "--batch", "16", "--no-embeddings", "--quiet", "--seed-split", "none", "--fill-open-choices",
                 "--out", str(out)]) == 0
    written = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(written) == 12 and not any(t["metadata"]["open_choices"] for t in written)


def test_fill_open_choices_needs_an_env_that_can_fill():
    class Shop:
        def hindsight_task(self, trajectory):
            return None

    with pytest.raises(ValueError, match="fill_open_choices=True needs an env whose hindsight_task takes "
                                         "fill_open_choices; Shop's does not"):
        HindsightProposer(Shop(), fill_open_choices=True)
    assert HindsightProposer(Shop()).fill_open_choices is False


def test_the_questioning_warm_start_recipe_is_the_measured_one(tmp_path):
    """configs/sft_questioning.yaml holds the settings of the mixture runs measured in honest_split.md (mix2150)."""
    from pathlib import Path

    from evolver_train.sft import parse_sft_config

    recipe = Path(__file__).resolve().parents[2] / "configs" / "sft_questioning.yaml"
    config = parse_sft_config(["--config", str(recipe)])
    synthesis = config.synthesis_config()  # evolver questions synthesize --seed-split none --batch 64 ...
    assert config.synthesize_tasks == 2000 and config.num_demonstrations == 2000 + 2075
    assert (synthesis.seed_split, synthesis.batch, synthesis.max_rounds, synthesis.seed) == ("none", 64, 400, 0)
    assert synthesis.embedding_threshold is None and synthesis.leakage_cosine is None
    assert config.with_split is True and config.split == "train" and config.max_steps == 2150
    assert config.experience_share == 0.0 and config.max_minutes == 0  # no experience block; a step budget
    assert config.observation_shaping == ["drop_repeated_instruction", "top_results=5", "numbered_results"]
    assert config.env_kwargs == {"num_products": 600, "max_steps": 8, "goals": "synthetic", "split_scheme": "product"}
    assert (config.hidden_size, config.learning_rate, config.batch_size, config.imperfect_share) == (128, 3e-3, 16, 0.0)


SYNTHESIS = {"seed_split": "none", "batch": 16, "embedding_threshold": None, "leakage_cosine": None}


def test_a_warm_start_can_synthesise_its_own_tasks_first_as_the_cli_does(tmp_path, capsys):
    from evolver_train.sft import synthesize_tasks

    config = SFTConfig(output_dir=str(tmp_path / "sft"), synthesize_tasks=12, synthesis=SYNTHESIS, with_split=True,
                       **TINY_SFT)
    assert config.synthesis_config().seed == config.seed  # the run's seed unless synthesis names one
    out = train_sft(config)
    questions = out / "questions"
    assert "self-questioning synthesised 12 tasks" in capsys.readouterr().out
    assert {p.name for p in questions.iterdir()} == {"pool.sqlite", "tasks.jsonl", "report.json", "settings.json"}
    record = json.loads((out / "sft_config.json").read_text())
    assert record["synthesize_tasks"] == 12 and record["synthesis"] == SYNTHESIS
    # the same tasks `evolver questions synthesize` writes for the same settings
    cli = tmp_path / "cli"
    assert main(["synthesize", "--env-id", "evolver/WebShop-v0", "--env-kwargs", json.dumps(SHOP), "--n", "12",
                 "--batch", "16", "--no-embeddings", "--quiet", "--seed-split", "none", "--out", str(cli)]) == 0
    ids = [json.loads(line)["task_id"] for line in (questions / "tasks.jsonl").read_text().splitlines()]
    assert ids == [json.loads(line)["task_id"] for line in (cli / "tasks.jsonl").read_text().splitlines()]
    # demonstrated: the synthesised tasks, then the split's
    env = WebShopEnv(**SHOP)
    tasks = demonstrated_tasks(config, env)
    assert [t.task_id for t in tasks] == ids + [t.task_id for t in env.tasks("train")]
    # Again with the same settings: the finished pool is reused, no new round runs.
    rounds = json.loads((questions / "report.json").read_text())["rounds"]
    synthesize_tasks(config)
    assert json.loads((questions / "report.json").read_text())["rounds"] == rounds
    assert "other settings" not in capsys.readouterr().out
    # Other settings: synthesised again from scratch, not mixed into the old pool.
    other = SFTConfig(output_dir=str(tmp_path / "sft"), synthesize_tasks=12, synthesis={**SYNTHESIS, "seed": 5},
                      **TINY_SFT)
    synthesize_tasks(other)
    assert "holds a synthesis of other settings; synthesising again" in capsys.readouterr().out
    again = [json.loads(line)["task_id"] for line in (questions / "tasks.jsonl").read_text().splitlines()]
    assert len(again) == 12 and again != ids


def test_bad_synthesis_settings_are_refused_by_name(tmp_path):
    from evolver_train.sft import parse_sft_config

    refused = {
        "synthesize_tasks must be an int >= 0, got -1": dict(synthesize_tasks=-1),
        "synthesis: unknown option 'batches' (did you mean 'batch'?)": dict(synthesize_tasks=4,
                                                                             synthesis={"batches": 3}),
        "synthesis: SynthesisConfig.batch must be a positive int, got 0": dict(synthesize_tasks=4,
                                                                               synthesis={"batch": 0}),
        "synthesis settings are given but synthesize_tasks is 0": dict(synthesis={"batch": 3}),
        "tasks_file and synthesize_tasks both name the tasks": dict(synthesize_tasks=4,
                                                                    tasks_file=str(tmp_path)),
        "tasks_file or synthesize_tasks, but both are empty": dict(with_split=True),
    }
    for message, kwargs in refused.items():
        with pytest.raises(ConfigError, match=re.escape(message)):
            SFTConfig(**kwargs)
    config = parse_sft_config(["--synthesize-tasks", "5", "--synthesis", '{"seed_split": "none", "batch": 8}'])
    assert config.synthesize_tasks == 5 and config.synthesis_config().batch == 8
    with pytest.raises(ConfigError, match="--synthesis must be a JSON object, got '{batch'"):
        parse_sft_config(["--synthesize-tasks", "5", "--synthesis", "{batch"])
