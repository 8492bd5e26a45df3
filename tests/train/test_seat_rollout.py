"""Multi-seat rollouts (evolver_train.seat_rollout) on evolver/AvalonSeats-v0, evaluation and `evolver train`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

pytest.importorskip("pettingzoo")

from evolver_train.envs import make_env  # noqa: E402
from evolver_train.rollout import ChatCodec, RowSpec, play_episodes  # noqa: E402

KWARGS = {"num_players": 5, "trainable_roles": ["merlin", "servant"], "discussion_rounds": 0, "deal_key": "test"}


def _scripted():
    """A byte-level policy that plays the example reply of the last instruction it read."""
    from evolver_train.evaluation import build_byte_tokenizer

    tok = build_byte_tokenizer()
    eos = tok.eos_token_id

    def generate(contexts, caps):
        out = []
        for ctx in contexts:
            replies = re.findall(r"Reply '([^']*)'", tok.decode(ctx[-400:], skip_special_tokens=True))
            reply = replies[-1] if replies else "PASS"
            out.append(tok(reply, add_special_tokens=False)["input_ids"] + [eos])
        return out, [[0.0] * len(o) for o in out]

    return tok, generate


def test_each_learning_seat_is_one_row_with_its_own_context():
    from wrappers.attribution import EnvRuleAttributor, label_reward
    from wrappers.attribution.wrapper import attribution_record

    tok, generate = _scripted()
    codec = ChatCodec(tok, max_observation_tokens=4000)  # bytes: the rules are long
    env = make_env("evolver/AvalonSeats-v0", KWARGS)
    task = env.tasks("dev")[5]
    rows = [RowSpec(task=task, seed=11, group=0) for _ in range(6)]  # 2 games x 3 learning seats
    finished = []

    def finish(trajectory):
        finished.append(trajectory)
        return {"attribution": attribution_record(EnvRuleAttributor(), trajectory)}

    episodes = play_episodes([env, make_env("evolver/AvalonSeats-v0", KWARGS)], rows, generate, codec,
                             max_turns=40, max_episode_tokens=20000, max_turn_tokens=16, finish_cut=finish,
                             step_rewards=lambda info: [label_reward(x["label"])
                                                        for x in info["attribution"]["labels"]])
    assert [ep.seat_slot for ep in episodes] == [0, 1, 2, 0, 1, 2] and len(finished) == 6
    for ep in episodes:
        seat = ep.final_info["seat"]
        text = tok.decode(ep.tokens.prompt_ids + ep.tokens.completion_ids)
        assert f"Night: you are Player {seat}," in text
        assert not any(f"Night: you are Player {s}," in text for s in range(5) if s != seat)
        assert text.count("Avalon with 5 players") == 1  # the rules once, then only what is new
        assert ep.ended_by == "env" and ep.terminated and "evaluation" in ep.final_info
        turns = {i for i, m in zip(ep.tokens.step_ids, ep.tokens.env_mask) if m}
        assert len(ep.labels) == len(ep.steps) and turns == set(range(len(ep.steps))) and ep.invalid_actions == 0
    # the two games of one deal, played the same way, are the same game; seats of a side share the outcome
    assert [ep.final_info["role"] for ep in episodes[:3]] == [ep.final_info["role"] for ep in episodes[3:]]
    assert len({ep.outcome for ep in episodes}) == 1


def test_the_attributor_judges_each_seat_with_its_games_outcome():
    """env-rules labels a step no rule judges with the outcome's sign: +1 in a won game, -1 in a lost one."""
    from wrappers.attribution import EnvRuleAttributor, label_reward
    from wrappers.attribution.wrapper import attribution_record

    tok, generate = _scripted()
    env = make_env("evolver/AvalonSeats-v0", KWARGS)  # Merlin and the two Servants learn
    tasks = env.tasks("dev")
    rows = [RowSpec(task=tasks[4], seed=11, group=0)] * 3 + [RowSpec(task=tasks[0], seed=11, group=1)] * 3
    finished = []

    def finish(trajectory):
        finished.append(trajectory)
        return {"attribution": attribution_record(EnvRuleAttributor(), trajectory)}

    episodes = play_episodes([env, make_env("evolver/AvalonSeats-v0", KWARGS)], rows, generate,
                             ChatCodec(tok, max_observation_tokens=4000), max_turns=40, max_episode_tokens=20000,
                             max_turn_tokens=16, finish_cut=finish,
                             step_rewards=lambda info: [label_reward(x["label"])
                                                        for x in info["attribution"]["labels"]])
    assert [ep.success for ep in episodes] == [True] * 3 + [False] * 3  # the scripted good side wins deal 4 only
    assert sorted((t.success, t.score) for t in finished) == sorted((ep.success, ep.score) for ep in episodes)
    for ep in episodes:
        for label, st in zip(ep.labels, ep.steps):
            credit = st.info.get("step_credit")
            if not st.info["action_valid"]:
                assert label == -1.0
            elif credit is None:  # a Servant knows no evil player: its votes are judged by the outcome
                assert label == (1.0 if ep.success else -1.0)
            else:  # Merlin's votes on teams with a player he knows is evil are blunders even in a won game
                assert label == (1.0 if credit >= 0 else -1.0)
    assert {ep.labels.count(-1.0) > 0 for ep in episodes[:3]} == {True, False}


def test_a_game_stops_for_every_seat_at_the_token_budget():
    tok, generate = _scripted()
    env = make_env("evolver/AvalonSeats-v0", KWARGS)
    rows = [RowSpec(task=env.tasks("dev")[5], seed=11, group=0) for _ in range(3)]
    episodes = play_episodes([env], rows, generate, ChatCodec(tok), max_turns=40, max_episode_tokens=120,
                             max_turn_tokens=16)
    assert {ep.ended_by for ep in episodes} == {"token_budget"} and not any(ep.success for ep in episodes)


def test_evaluation_reports_per_role_win_rates():
    from evolver_train.evaluation import RolloutSettings, evaluate_policy

    tok, generate = _scripted()
    # k = 2: the two samples of a deal replay the same game id, and still count as two games
    report = evaluate_policy(None, tok, "evolver/AvalonSeats-v0", split="dev", num_tasks=2, k=2, temperature=1.0,
                             env_kwargs=KWARGS, generate=generate,
                             rollout=RolloutSettings(max_turns=40, max_episode_tokens=20000, max_turn_tokens=16,
                                                     max_observation_tokens=4000))
    a = report["arena"]
    assert report["num_episodes"] == 12 and (a["games"], a["seats"], a["unfinished"]) == (4, 12, 0)
    assert set(a["by_role"]) == {"merlin", "servant"} and a["by_role"]["servant"]["games"] == 8
    assert a["by_side"]["good"]["games"] == 4 and a["opponents"] == ["rule"]


def test_evolver_train_on_the_arena_recipe(tmp_path, monkeypatch):
    """`evolver train --config avalon` for 2 steps; the league seats a saved checkpoint at step 2."""
    from evolver_train.train_cli import main

    monkeypatch.setenv("EVOLVER_ARENA_DEAL_KEY", "test")
    out = tmp_path / "run"
    code = main(["--config", "avalon", "--output-dir", str(out), "--max-steps", "2", "--num-generations", "6",
                 "--per-device-train-batch-size", "6", "--evolver-eval-episodes", "0", "--save-steps", "1",
                 "--league-share", "1.0", "--max-turns", "12", "--report-to", "none"])
    assert code == 0
    history = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())["log_history"]
    steps = [row for row in history if "env/episode_len" in row]
    assert len(steps) == 2 and all(row["env/episode_len"] > 1 for row in steps)
    assert "elo/checkpoint-1" in steps[1] and "elo/rule" in steps[0]  # step 2 met the checkpoint of step 1
    assert Path(out, "model.safetensors").exists()
    # the policy built from the config is kept as it was before RL, for `evolver eval --checkpoint run/start`
    from safetensors.torch import load_file

    start, final = load_file(out / "start" / "model.safetensors"), load_file(out / "model.safetensors")
    assert start.keys() == final.keys() and Path(out, "start", "tokenizer.json").exists()
    assert any(not torch.equal(start[k], final[k]) for k in start)
    # the run and its starting point meet in a tournament, each played as the run played it
    from arena.avalon import AvalonConfig
    from arena.avalon.tournament import run_tournament
    from evolver_train.arena_seat import LocalPolicy

    # the reply cap is the recipe's (12), read from the run's record, for its starting policy too
    assert LocalPolicy.load(out).max_turn_tokens == LocalPolicy.load(out / "start").max_turn_tokens == 12
    summary = run_tournament({"start": f"checkpoint:{out / 'start'}", "trained": f"checkpoint:{out}", "rule": "rule"},
                             num_games=5, config=AvalonConfig(5, discussion_rounds=0), seed=0)
    for name in ("start", "trained"):
        entrant = summary["entrants"][name]
        assert entrant["fallback_actions"] == 0 and entrant["llm"]["turns"] > 0 and entrant["llm"]["unmatched"] == 0
    assert summary["end_reasons"].get("five_rejections", 0) < 5
