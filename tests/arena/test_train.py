"""Several seats learning at once: groups, rule credit, league, Elo, evaluation and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from arena.avalon import AvalonConfig, AvalonGame
from arena.cli import main as arena_main
from arena.train import ArenaTrainConfig, SeatPolicy, _grpo_loss, _Side, play_group, step_credit, train

ROLES = ("merlin", "servant", "servant", "assassin", "minion")  # Merlin sees seats 3 and 4
RULES = AvalonConfig(5, discussion_rounds=0)


def _at_vote(team):
    g = AvalonGame(RULES, ROLES, leader=0)
    g.step(g.codec.team_code(team))
    return g


def test_step_credit_judges_votes_and_proposals_from_the_seats_knowledge():
    g = _at_vote([0, 3])
    c = g.codec
    assert step_credit(g, 0, c.APPROVE) == -1.0  # Merlin approves a team with a known evil seat
    assert step_credit(g, 0, c.REJECT) is None  # no rule judges it (the LLM judge may)
    assert step_credit(g, 1, c.APPROVE) is None  # a Servant knows no one: no rule applies
    assert step_credit(g, 3, c.APPROVE) is None  # evil approves a team with evil on it
    g = _at_vote([0, 1])
    assert step_credit(g, 4, g.codec.APPROVE) == -1.0  # evil approves an all-good team it knows of
    g = AvalonGame(RULES, ROLES, leader=0)
    assert step_credit(g, 0, g.codec.team_code([0, 4])) == -1.0  # Merlin proposes a known evil seat
    assert step_credit(g, 0, g.codec.team_code([0, 1])) == 0.0
    for _ in range(4):  # four rejected teams: the fifth vote decides the round
        g.step(g.codec.team_code([g.leader, (g.leader + 1) % 5]))
        g.play_votes([g.codec.REJECT] * 5)
    g.step(g.codec.team_code([1, 2]))
    assert g.rejections == 4 and g.phase == "vote"
    assert step_credit(g, 1, g.codec.REJECT) == -1.0  # a good seat hands evil the game
    assert step_credit(g, 3, g.codec.REJECT) is None  # evil may


def test_a_group_is_one_deal_played_g_times_by_the_learning_seats():
    torch.manual_seed(0)
    policy = SeatPolicy(5, 32)
    learner, bots = _Side("policy", policy=policy, learns=True), _Side("rule", bot="rule")
    group = play_group(RULES, learner, bots, deal_seed=11, rollouts=4, sample_seed=5, credit_weight=0.5)
    assert len(group) == 4 and len({tuple(g["roles"]) for g in group}) == 1
    good_seats = {s for s, r in enumerate(group[0]["roles"]) if r in ("merlin", "servant")}
    assert all(set(g["decisions"]) == good_seats for g in group)
    actions = [tuple(code for s in sorted(g["decisions"]) for _, _, code in g["decisions"][s]) for g in group]
    assert len(set(actions)) > 1  # the rollouts differ only by the learning seats' samples
    for g in group:
        for s, ret in g["returns"].items():
            outcome = 1.0 if g["winner"] == "good" else -1.0
            assert ret == pytest.approx(outcome + 0.5 * g["credit"][s])
    again = play_group(RULES, learner, bots, deal_seed=11, rollouts=4, sample_seed=5, credit_weight=0.5)
    assert [g["returns"] for g in again] == [g["returns"] for g in group]  # seeded


def test_grpo_loss_ignores_groups_without_spread_and_pushes_up_better_rollouts():
    policy = SeatPolicy(5, 16)
    x = torch.zeros(1, policy.input_size)
    m = torch.zeros(1, 59, dtype=torch.int8)
    m[0, 33:35] = 1
    same = [[{"decisions": {0: [(x[0], m[0], 33)]}, "returns": {0: 1.0}}] * 2]
    assert _grpo_loss(policy, same, 0.0) == (None, 0)
    group = [{"decisions": {0: [(x[0], m[0], 33)]}, "returns": {0: 1.0}},
             {"decisions": {0: [(x[0], m[0], 34)]}, "returns": {0: -1.0}}]  # fmt: skip
    opt = torch.optim.SGD(policy.parameters(), lr=0.5)
    before = torch.softmax(policy(x, m), 1)[0, 33].item()
    for _ in range(5):
        loss, n = _grpo_loss(policy, [group], 0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert n == 2 and torch.softmax(policy(x, m), 1)[0, 33].item() > before + 0.1


def test_train_end_to_end_writes_report_elo_and_plot(tmp_path):
    cfg = ArenaTrainConfig(steps=2, deals_per_step=2, group_size=3, snapshot_every=1, elo_games=2,
                           eval_games=6, hidden_size=16, output_dir=str(tmp_path / "run"))  # fmt: skip
    from arena.train import write_plot

    report = train(cfg)
    assert report["league"] == ["policy@0", "policy@1", "policy@2", "rule", "random"]
    assert [h["step"] for h in report["elo_history"]] == [0, 1, 2]
    assert set(report["elo_history"][-1]["elo"]) == set(report["league"])
    assert len(report["evaluation"]) == 7
    for row in report["evaluation"]:
        lo, hi = row["ci95"]
        assert row["games"] == 6 and lo <= row["good_win_rate"] <= hi
    saved = json.loads((tmp_path / "run" / "report.json").read_text())
    assert saved["history"] == report["history"]
    assert list((tmp_path / "run" / "tensorboard").iterdir())
    assert write_plot(report, tmp_path / "plot.png").stat().st_size > 1000


def test_config_and_cli_errors_name_the_bad_value(tmp_path, capsys):
    with pytest.raises(ValueError, match="'ugly'"):
        ArenaTrainConfig(learn_sides=("ugly",))
    with pytest.raises(ValueError, match="llm_seats is empty"):
        ArenaTrainConfig(opponent_mix={"llm": 1.0})
    with pytest.raises(ValueError, match="group_size"):
        ArenaTrainConfig(group_size=0)
    bad = tmp_path / "bad.yaml"
    bad.write_text("stepz: 3\n")
    out = tmp_path / "out"
    assert arena_main(["train", "--config", str(bad), "--output-dir", str(out)]) == 2
    assert "unknown key(s) ['stepz']" in capsys.readouterr().err and not out.exists()


def test_cli_runs_a_tiny_recipe(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--steps", "1", "--deals-per-step", "1", "--group-size", "2", "--eval-games", "4",
            "--elo-games", "1", "--hidden-size", "8", "--opponent-mix", '{"rule": 1}',
            "--output-dir", str(out)]  # fmt: skip
    assert arena_main(argv) == 0
    text = capsys.readouterr().out
    assert "good trained" in text and "Elo:" in text
    assert (out / "report.json").exists() and (out / "arena_training.png").exists()
    assert np.isfinite(json.loads((out / "report.json").read_text())["elo_history"][-1]["elo"]["rule"])


def test_llm_judge_labels_the_decisions_no_rule_can_judge():
    import re

    from evolver_gym.core.llm.testing import ScriptedLLMServer
    from wrappers.attribution import LLMJudgeAttributor

    def all_bad(body):
        steps = len(re.findall(r"EVAL-STEP \d+", body["messages"][-1]["content"]))
        return "\n".join(f"Step {i} Judgment: BAD" for i in range(1, steps + 1))

    learner = _Side("policy", policy=SeatPolicy(5, 16), learns=True)
    bots = _Side("rule", bot="rule")
    plain = play_group(RULES, learner, bots, deal_seed=4, rollouts=1, sample_seed=1)
    with ScriptedLLMServer(handler=all_bad) as server:
        judge = LLMJudgeAttributor(server.client(role="attributor"))
        judged = play_group(RULES, learner, bots, deal_seed=4, rollouts=1, sample_seed=1, judge=judge)
        asked = [r["messages"][-1]["content"] for r in server.requests]
    assert asked and all("Play Avalon as Player" in text for text in asked)
    steps_sent = sum(len(re.findall(r"EVAL-STEP \d+", text)) for text in asked)
    extra = sum(judged[0]["credit"].values()) - sum(plain[0]["credit"].values())
    assert steps_sent > 0 and extra == -steps_sent  # every judged decision got BAD (-1), no other change
    labels = judged[0]["judge_labels"]
    assert labels["BAD"] == steps_sent and "GOOD" not in labels and labels["seconds"] >= 0  # counted per game
