"""Tests of ``evolver eval``: avg@k/best@k math, a tiny checkpoint end to end on WebShop (plain and as a
LoRA adapter), AppWorld TGC/SGC with the oracle as the policy, experience injection, and an Avalon
seat's win rate against rule bots."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_gym.core.stats import wilson_interval
from evolver_train.cli import main as evolver_main
from evolver_train.evaluation import (
    OraclePolicy,
    RolloutSettings,
    avg_best_at_k,
    evaluate_policy,
    load_checkpoint,
)

WEBSHOP = "evolver/WebShop-v0"
WEBSHOP_KW = {"num_products": 50, "max_steps": 8}


# -- metric math -----------------------------------------------------------------------------


def test_avg_best_at_k_hand_made():
    # task a: 2 of 4 samples succeed; b: none; c: all -> avg = (0.5 + 0 + 1) / 3, best = (1 + 0 + 1) / 3
    out = avg_best_at_k({"a": [1, 0, 1, 0], "b": [0, 0, 0, 0], "c": [1, 1, 1, 1]})
    assert (
        out["avg@k"] == pytest.approx(0.5) and out["best@k"] == pytest.approx(2 / 3) and out["num_tasks"] == 3
    )
    scores = avg_best_at_k({"a": [0.2, 0.8], "b": [0.5, 0.5]})
    assert scores["avg@k"] == pytest.approx(0.5) and scores["best@k"] == pytest.approx(0.65)
    assert avg_best_at_k({"a": [1]}) == {"avg@k": 1.0, "best@k": 1.0, "num_tasks": 1}
    with pytest.raises(ValueError, match="at least one outcome"):
        avg_best_at_k({"a": []})


def test_wilson_interval():
    lo, hi = wilson_interval(50, 100)
    assert (round(lo, 3), round(hi, 3)) == (0.404, 0.596)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="11"):
        wilson_interval(11, 10)


# -- a tiny checkpoint end to end ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    from evolver_train.policy import TinyPolicyConfig, build_tiny_policy, build_word_tokenizer

    env = gym.make(WEBSHOP, **WEBSHOP_KW)
    tok = build_word_tokenizer([*env.unwrapped.catalog.vocabulary(), "search[ ]", "click[ ]"])
    env.close()
    model = build_tiny_policy(
        tok,
        TinyPolicyConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64),
        seed=0,
    )
    folder = tmp_path_factory.mktemp("ckpt") / "tiny"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _check_report(report: dict, *, tasks: int, k: int) -> None:
    assert report["k"] == k and report["num_tasks"] == tasks and report["num_episodes"] == tasks * k
    assert len(report["per_task"]) == tasks and all(len(p["successes"]) == k for p in report["per_task"])
    recomputed = avg_best_at_k({p["task_id"]: p["successes"] for p in report["per_task"]})
    assert report["avg@k"] == pytest.approx(recomputed["avg@k"])
    assert report["best@k"] == pytest.approx(recomputed["best@k"])
    assert report["best@k"] >= report["avg@k"] and report["best_score@k"] >= report["avg_score@k"]
    assert report["success_rate"] == pytest.approx(report["avg@k"])  # equal k per task
    lo, hi = report["success_rate_ci95"]
    assert lo <= report["success_rate"] <= hi
    assert report["score"] == pytest.approx(report["avg_score@k"])
    if any(p["difficulty"] is not None for p in report["per_task"]):
        assert sum(b["num_tasks"] for b in report["by_difficulty"].values()) == tasks
    else:
        assert report["by_difficulty"] == {}


def test_eval_cli_webshop_tiny_checkpoint(tiny_checkpoint, tmp_path):
    out = tmp_path / "report.json"
    argv = [
        "eval",
        "--checkpoint",
        str(tiny_checkpoint),
        "--env-id",
        WEBSHOP,
        "--split",
        "dev",
        "--k",
        "2",
        "--num-tasks",
        "3",
        "--env-kwargs",
        json.dumps(WEBSHOP_KW),
        "--max-turns",
        "3",
        "--max-turn-tokens",
        "8",
        "--max-observation-tokens",
        "96",
        "--out",
        str(out),
        "--quiet",
    ]
    assert evolver_main(argv) == 0
    report = json.loads(out.read_text())
    _check_report(report, tasks=3, k=2)
    assert report["env_id"] == WEBSHOP and report["split"] == "dev" and report["temperature"] == 1.0
    assert report["rollout"]["max_turns"] == 3 and report["experience"]["enabled"] is False
    assert [p["task_id"] for p in report["per_task"]] == [f"webshop/dev/{i}" for i in range(3)]
    # an untrained policy mostly emits invalid actions, and never more turns than the cap
    assert 1 <= report["episode_len"] <= 3 and report["invalid_action_rate"] > 0
    # same seed, same report
    out2 = tmp_path / "again.json"
    assert evolver_main(argv[:-3] + ["--out", str(out2), "--quiet"]) == 0
    assert json.loads(out2.read_text())["per_task"] == report["per_task"]


def test_eval_reads_settings_recorded_by_the_trainer(tiny_checkpoint, tmp_path):
    import shutil

    import torch

    from evolver_train.config import EvolverGRPOConfig

    folder = tmp_path / "trained"
    shutil.copytree(tiny_checkpoint, folder)
    cfg = EvolverGRPOConfig(
        output_dir=str(tmp_path),
        env_id=WEBSHOP,
        env_kwargs=WEBSHOP_KW,
        max_turns=2,
        max_turn_tokens=5,
        max_observation_tokens=80,
        report_to="none",
        num_generations=2,
        per_device_train_batch_size=2,
    )
    torch.save(cfg, folder / "training_args.bin")  # what Trainer.save_model writes next to the weights
    out = tmp_path / "r.json"
    assert (
        evolver_main(
            [
                "eval",
                "--checkpoint",
                str(folder),
                "--k",
                "1",
                "--num-tasks",
                "2",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert report["env_id"] == WEBSHOP and report["env_kwargs"] == WEBSHOP_KW
    assert (report["rollout"]["max_turns"], report["rollout"]["max_turn_tokens"]) == (2, 5)
    assert report["episode_len"] <= 2
    _check_report(report, tasks=2, k=1)


def test_eval_lora_adapter_folder(tiny_checkpoint, tmp_path):
    from peft import LoraConfig, get_peft_model

    from evolver_train.policy import load_policy

    base, tok = load_policy(tiny_checkpoint)
    peft_model = get_peft_model(
        base, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    )
    adapter = tmp_path / "adapter"
    peft_model.save_pretrained(adapter)
    tok.save_pretrained(adapter)
    model, tokenizer = load_checkpoint(adapter)
    assert not hasattr(model, "peft_config") and len(tokenizer) == len(tok)  # merged into a plain model
    report = evaluate_policy(
        model,
        tokenizer,
        WEBSHOP,
        env_kwargs=WEBSHOP_KW,
        k=2,
        num_tasks=2,
        rollout=RolloutSettings(max_turns=2, max_turn_tokens=6, max_observation_tokens=64),
    )
    _check_report(report, tasks=2, k=2)


def test_eval_rejects_bad_arguments(tiny_checkpoint):
    model, tok = load_checkpoint(tiny_checkpoint)
    with pytest.raises(ValueError, match="temperature > 0"):
        evaluate_policy(model, tok, WEBSHOP, env_kwargs=WEBSHOP_KW, k=4, temperature=0.0, num_tasks=1)
    with pytest.raises(ValueError, match="k must be"):
        evaluate_policy(model, tok, WEBSHOP, env_kwargs=WEBSHOP_KW, k=0, num_tasks=1)
    with pytest.raises(ValueError, match="does not exist"):
        evaluate_policy(
            model,
            tok,
            WEBSHOP,
            env_kwargs=WEBSHOP_KW,
            k=1,
            num_tasks=1,
            experience=True,
            experience_uri="/nonexistent/pool.db",
        )


# -- oracle as the policy: WebShop with experience, AppWorld TGC/SGC ---------------------------------


def test_oracle_webshop_with_experience(tmp_path):
    from wrappers.navigation import Experience, ExperiencePool, PoolConfig

    env = gym.make(WEBSHOP, **WEBSHOP_KW)
    tasks = env.unwrapped.tasks("dev")[:3]
    oracle = OraclePolicy(tasks, env.unwrapped.oracle)
    env.close()
    uri = str(tmp_path / "exp.db")
    pool = ExperiencePool(PoolConfig(uri=uri, threshold=-1.0))
    pool.add(
        [
            Experience(
                t.instruction,
                "search the product words, pick the options, then buy",
                env_id=WEBSHOP,
                source_task_id=f"webshop/train/{i}",
            )
            for i, t in enumerate(tasks)
        ]
    )
    pool.close()
    report = evaluate_policy(
        None,
        oracle.tokenizer,
        WEBSHOP,
        tasks=tasks,
        env_kwargs=WEBSHOP_KW,
        k=2,
        generate=oracle.generate,
        rollout=oracle.rollout,
        experience=True,
        experience_uri=uri,
        experience_threshold=-1.0,
    )
    _check_report(report, tasks=3, k=2)
    assert report["experience"]["enabled"] and report["experience"]["usage_rate"] == 1.0
    assert report["avg@k"] == 1.0 and report["score"] == 1.0  # the oracle reads past the injected block


def test_observation_shaping_reaches_the_policy():
    env = gym.make(WEBSHOP, **WEBSHOP_KW)
    tasks = env.unwrapped.tasks("dev")[:2]
    oracle = OraclePolicy(tasks, env.unwrapped.oracle)
    env.close()
    seen: list[str] = []

    def generate(contexts, caps):
        seen.extend(oracle.tokenizer.decode(c, skip_special_tokens=True) for c in contexts)
        return oracle.generate(contexts, caps)

    for shaping, headers in (((), 5), (("drop_repeated_instruction",), 1)):
        seen.clear()
        report = evaluate_policy(
            None,
            oracle.tokenizer,
            WEBSHOP,
            tasks=tasks[:1],
            env_kwargs=WEBSHOP_KW,
            k=1,
            generate=generate,
            rollout=oracle.rollout,
            observation_shaping=shaping,
        )
        assert report["avg@k"] == 1.0 and report["observation_shaping"] == list(shaping)
        # the last context is the whole conversation: 5 pages repeat the instruction header, or only one
        assert seen[-1].count("Instruction: [SEP]") == headers


def test_oracle_appworld_tgc_sgc():
    env = gym.make("evolver/AppWorld-v0", split="dev")
    tasks = env.unwrapped.tasks("dev")[:6]  # two scenarios of three tasks each
    assert len({t.task_id.rsplit("_", 1)[0] for t in tasks}) == 2
    sabotaged = tasks[4].task_id

    def plans(task):  # give up at once on one task of the second scenario
        return (
            ["apis.supervisor.complete_task(status='fail')"]
            if task.task_id == sabotaged
            else env.unwrapped.oracle(task)
        )

    oracle = OraclePolicy(tasks, plans)
    report = evaluate_policy(
        None,
        oracle.tokenizer,
        "evolver/AppWorld-v0",
        tasks=tasks,
        k=2,
        env_kwargs={"split": "dev"},
        generate=oracle.generate,
        rollout=oracle.rollout,
        batch_size=4,
    )
    env.close()
    _check_report(report, tasks=6, k=2)
    assert [p["successes"] for p in report["per_task"]] == [[1, 1]] * 4 + [[0, 0]] + [[1, 1]]
    aw = report["appworld"]
    assert aw["tgc"] == pytest.approx(round(100 * 5 / 6, 2)) and aw["sgc"] == 50.0
    assert (
        aw["best"]["overall"]["num_scenarios"] == 2
        and aw["best"]["overall"]["scenario_goal_completion"] == 50.0
    )
    assert report["avg@k"] == pytest.approx(5 / 6)


def test_eval_cli_oracle_appworld(tmp_path, capsys):
    out = tmp_path / "aw.json"
    assert (
        evolver_main(
            [
                "eval",
                "--checkpoint",
                "oracle",
                "--env-id",
                "evolver/AppWorld-v0",
                "--k",
                "1",
                "--num-tasks",
                "3",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert report["appworld"]["tgc"] == 100.0 and report["appworld"]["sgc"] == 100.0
    assert "TGC 100.0" in capsys.readouterr().out


# -- arena: a seat's win rate against bots ---------------------------------------------------------


def _example_reply_seat():
    """A scripted seat speaking through the token interface: it plays the example reply the prompt gives."""
    import re

    from evolver_train.evaluation import build_byte_tokenizer

    tok = build_byte_tokenizer()
    eos = tok.eos_token_id

    def generate(contexts, caps):
        out = []
        for ctx in contexts:
            replies = re.findall(r"Reply '([^']*)'", tok.decode(ctx[-800:], skip_special_tokens=True))
            reply = replies[-1] if replies and "<" not in replies[-1] else "PASS"
            out.append(tok(reply, add_special_tokens=False)["input_ids"] + [eos])
        return out, [[0.0] * len(o) for o in out]

    return tok, generate


def test_arena_scripted_seat_win_rate():
    import arena  # noqa: F401 - registers evolver/AvalonSeat-v0

    env = gym.make("evolver/AvalonSeat-v0")
    # Under deal key "evaluation-test" these seats are good, good, evil.
    tasks = [env.unwrapped.tasks("dev")[i] for i in (3, 2, 16)]
    env.close()
    tok, generate = _example_reply_seat()
    report = evaluate_policy(
        None,
        tok,
        "evolver/AvalonSeat-v0",
        tasks=tasks,
        k=1,
        temperature=0.0,
        env_kwargs={"num_players": 5, "opponents": "random", "deal_key": "evaluation-test"},
        generate=generate,
        rollout=RolloutSettings(
            max_turns=200, max_episode_tokens=10**6, max_turn_tokens=64, max_observation_tokens=2000
        ),
    )
    _check_report(report, tasks=3, k=1)
    assert report["invalid_action_rate"] == 0.0  # every reply went through the text protocol
    a = report["arena"]
    # Against seeded random bots this seat loses game 3 and wins games 2 and 16 (same task and key, same game).
    assert [p["successes"] for p in report["per_task"]] == [[0], [1], [1]]
    assert (a["games"], a["wins"], a["unfinished"]) == (3, 2, 0) and a["win_rate"] == pytest.approx(2 / 3)
    assert a["win_rate_ci95"] == pytest.approx(list(wilson_interval(2, 3)))
    assert {side: (v["games"], v["wins"]) for side, v in a["by_side"].items()} == {
        "evil": (1, 1),
        "good": (2, 1),
    }


def test_arena_tiny_checkpoint_seat(tmp_path):
    import arena  # noqa: F401 - registers evolver/AvalonSeat-v0
    from evolver_train.policy import TinyPolicyConfig, build_tiny_policy, build_word_tokenizer

    env = gym.make("evolver/AvalonSeat-v0")
    obs, _ = env.reset(seed=0, options={"split": "dev", "index": 0})
    env.close()
    tok = build_word_tokenizer([obs, "TEAM: 0, 1", "VOTE: approve reject", "QUEST: success fail", "PASS"])
    model = build_tiny_policy(
        tok,
        TinyPolicyConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64),
        seed=0,
    )
    report = evaluate_policy(
        model,
        tok,
        "evolver/AvalonSeat-v0",
        k=1,
        num_tasks=1,
        env_kwargs={"num_players": 5, "opponents": "rule"},
        rollout=RolloutSettings(max_turns=200, max_turn_tokens=4, max_observation_tokens=24),
    )
    _check_report(report, tasks=1, k=1)
    a = report["arena"]
    assert a["games"] == 1 and a["unfinished"] == 0 and sum(s["games"] for s in a["by_side"].values()) == 1
    assert a["wins"] == sum(report["per_task"][0]["successes"])
    assert report["invalid_action_rate"] > 0  # an untrained seat mostly gets fallbacks played for it


def test_eval_and_train_refuse_a_folder_that_holds_no_checkpoint(tmp_path, capsys):
    """A run killed before it saved leaves its output folder: naming it is one clear line, not a tokenizer error."""
    from evolver_train.train_cli import main as train_main

    killed = tmp_path / "killed_run"
    (killed / "runs").mkdir(parents=True)
    assert evolver_main(["eval", "--checkpoint", str(killed), "--env-id", WEBSHOP, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{str(killed)!r} holds no checkpoint" in err
    out = tmp_path / "out"
    basic = Path(__file__).resolve().parents[2] / "configs" / "basic.yaml"
    assert train_main(["--config", str(basic), "--model_name_or_path", str(killed),
                       "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"evolver train: model_name_or_path: {str(killed)!r} holds no checkpoint " \
                  "(no config.json or adapter_config.json)"
    assert not out.exists()


def test_a_checkpoint_recorded_before_the_rename_keeps_its_setting(tmp_path):
    import torch

    from evolver_train.eval_cli import _checkpoint_defaults

    old, new = tmp_path / "old", tmp_path / "new"
    for folder, record in ((old, {"valid_actions_only": True}), (new, {"allowed_actions_only": True})):
        folder.mkdir()
        torch.save(SimpleNamespace(env_id=WEBSHOP, max_turns=3, **record), folder / "training_args.bin")
    assert _checkpoint_defaults(old) == _checkpoint_defaults(new) == {
        "env_id": WEBSHOP, "max_turns": 3, "allowed_actions_only": True}


def test_eval_cli_allowed_actions_only_is_recorded_and_off_by_default(tiny_checkpoint, tmp_path, capsys):
    argv = ["eval", "--checkpoint", str(tiny_checkpoint), "--env-id", WEBSHOP, "--split", "dev", "--k", "1",
            "--num-tasks", "2", "--env-kwargs", json.dumps(WEBSHOP_KW), "--max-turns", "2", "--max-turn-tokens", "8",
            "--quiet"]

    def recorded(name):
        return json.loads((tmp_path / name).read_text())["rollout"]["allowed_actions_only"]

    assert evolver_main([*argv, "--out", str(tmp_path / "free.json")]) == 0
    assert evolver_main([*argv, "--allowed-actions-only", "--out", str(tmp_path / "allowed.json")]) == 0
    assert recorded("free.json") is False and recorded("allowed.json") is True
    assert "deprecated" not in capsys.readouterr().err
    recipe = tmp_path / "recipe.yaml"  # a recipe that turns it on, turned off again on the command line
    recipe.write_text("allowed_actions_only: true\n")
    assert evolver_main([*argv, "--config", str(recipe), "--no-allowed-actions-only",
                         "--out", str(tmp_path / "off.json")]) == 0
    assert recorded("off.json") is False
    # The old name, as a flag or a recipe key, still works, with one deprecation line each.
    assert evolver_main([*argv, "--valid-actions-only", "--out", str(tmp_path / "old_flag.json")]) == 0
    assert recorded("old_flag.json") is True
    err = capsys.readouterr().err
    assert err.count("evolver eval: --valid-actions-only is deprecated; use --allowed-actions-only") == 1, err
    recipe.write_text("valid_actions_only: true\n")
    assert evolver_main([*argv, "--config", str(recipe), "--out", str(tmp_path / "old_key.json")]) == 0
    assert recorded("old_key.json") is True
    err = capsys.readouterr().err
    assert err.count(f"{recipe}: valid_actions_only is deprecated; use allowed_actions_only") == 1, err
    # the oracle plays its own plan: the switch does not apply to it
    assert evolver_main(["eval", "--checkpoint", "oracle", "--env-id", WEBSHOP, "--split", "dev", "--num-tasks", "2",
                         "--env-kwargs", json.dumps(WEBSHOP_KW), "--allowed-actions-only", "--quiet",
                         "--out", str(tmp_path / "oracle.json")]) == 0
    assert json.loads((tmp_path / "oracle.json").read_text())["success_rate"] == 1.0
