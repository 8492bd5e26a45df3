"""The policy's derived inputs: the public record joined per player, the seat's belief, per-action values;
built from the seat's own view only; separate networks per side."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arena.avalon import AvalonConfig, AvalonGame
from arena.train import ACTION_INPUTS, PLAYER_BLOCKS, SCALARS, ArenaTrainConfig, SeatPolicy, _grpo_loss, seat_inputs

RULES = AvalonConfig(5, discussion_rounds=0)


def _played(roles, fail_seats=()):
    """Quest 1: Player 0 leads [0, 3]; Players 0, 1, 3 approve; the cards of ``fail_seats`` fail."""
    g = AvalonGame(RULES, roles, leader=0)
    c = g.codec
    g.step(c.team_code([0, 3]))
    g.play_votes([c.APPROVE if s in (0, 1, 3) else c.REJECT for s in g.pending()])
    g.play_cards([c.FAIL if s in fail_seats else c.SUCCESS for s in g.pending()])
    g.step(c.team_code([1, 2, 4]))  # quest 2: Player 1 leads, the vote is due
    return g


def _blocks(g, seat):
    v = g.view(seat, simultaneous=True)
    x = seat_inputs(v, g.codec.size)
    n = g.n
    blocks = dict(zip(PLAYER_BLOCKS, x[: len(PLAYER_BLOCKS) * n].reshape(len(PLAYER_BLOCKS), n), strict=True))
    scalars = dict(zip(SCALARS, x[len(PLAYER_BLOCKS) * n : len(PLAYER_BLOCKS) * n + len(SCALARS)], strict=True))
    per_code = x[len(PLAYER_BLOCKS) * n + len(SCALARS) :].reshape(g.codec.size, len(ACTION_INPUTS))
    return blocks, scalars, per_code


def test_inputs_join_the_public_record_per_player():
    g = _played(("merlin", "servant", "servant", "assassin", "minion"), fail_seats=(3,))
    blocks, scalars, per_code = _blocks(g, 2)  # a Servant: knows no one
    assert list(blocks["failed_quests"]) == pytest.approx([0.2, 0, 0, 0.2, 0])
    assert list(blocks["approved_failed"]) == pytest.approx([0.2, 0.2, 0, 0.2, 0])
    assert list(blocks["led_failed"]) == pytest.approx([0.2, 0, 0, 0, 0])
    # Evil sets the Servant still holds possible: one of {0, 3} in each, never itself.
    p = blocks["p_evil"]
    assert p[2] == 0 and p[0] == pytest.approx(0.6) and p[3] == pytest.approx(0.6) and p[1] == pytest.approx(0.4)
    assert p[4] == pytest.approx(0.4)
    assert scalars["team_p_clean"] == pytest.approx(0.2)  # team {1, 2, 4}: clean only if {0, 3} are evil
    assert scalars["self_on_team"] == 1 and scalars["fails_so_far"] == pytest.approx(1 / 3)
    c = g.codec
    assert per_code[c.APPROVE][0] == pytest.approx(0.2) and not per_code[c.REJECT].any()
    assert not per_code[c.team_code([0, 1])].any()  # not legal now: zeros
    merlin, _, _ = _blocks(g, 0)
    assert list(merlin["p_evil"]) == [0, 0, 0, 1, 1]  # Merlin's belief is exact
    evil, evil_scalars, _ = _blocks(g, 4)
    assert list(evil["p_evil"]) == [0, 0, 0, 1, 1] and evil_scalars["allies_enough"] == 1  # itself on the team


def test_inputs_read_nothing_a_seat_does_not_know():
    """Two deals that differ only in roles the Servant cannot see, played with the same public moves:
    the Servant's inputs are identical (as is its observation)."""
    from arena.avalon.observation import features

    a = _played(("merlin", "servant", "servant", "assassin", "minion"), fail_seats=(3,))
    b = _played(("servant", "merlin", "servant", "minion", "assassin"), fail_seats=(3,))
    assert a.roles != b.roles
    va, vb = a.view(2, simultaneous=True), b.view(2, simultaneous=True)
    assert np.array_equal(seat_inputs(va, a.codec.size), seat_inputs(vb, b.codec.size))
    assert np.array_equal(features(a, 2), features(b, 2))
    pa, pb = SeatPolicy(5, 8), SeatPolicy(5, 8)
    assert np.array_equal(pa.encode(a, 2, features(a, 2)), pb.encode(b, 2, features(b, 2)))


def test_separate_sides_keep_the_teams_gradients_apart():
    torch.manual_seed(0)
    policy = SeatPolicy(5, 16)
    g = _played(("merlin", "servant", "servant", "assassin", "minion"), fail_seats=(3,))
    from arena.avalon.observation import features

    mask = torch.zeros(g.codec.size, dtype=torch.int8)
    mask[[g.codec.APPROVE, g.codec.REJECT]] = 1
    x = torch.from_numpy(policy.encode(g, 4, features(g, 4)))  # an evil seat's vote
    group = [{"decisions": {4: [(x, mask, g.codec.APPROVE)]}, "returns": {4: 1.0}},
             {"decisions": {4: [(x, mask, g.codec.REJECT)]}, "returns": {4: -1.0}}]  # fmt: skip
    loss, n = _grpo_loss(policy, [group], 0.0)
    loss.backward()
    good, evil = policy.sides
    assert n == 2 and all(p.grad is None or not p.grad.any() for p in good.parameters())
    assert any(p.grad is not None and p.grad.any() for p in evil.parameters())
    shared = SeatPolicy(5, 16, derived_inputs=False, separate_sides=False)
    assert len(shared.sides) == 1 and shared.input_size == shared.obs_size


def test_learn_side_weights_are_checked():
    assert ArenaTrainConfig(learn_side_weights=[3, 1]).learn_side_weights == (3, 1)
    with pytest.raises(ValueError, match=r"\(1.0,\)"):
        ArenaTrainConfig(learn_side_weights=(1.0,))


def test_architecture_flags_from_yaml_and_the_command_line(tmp_path):
    with pytest.raises(ValueError, match="'false'"):
        ArenaTrainConfig(derived_inputs="false")
    from arena.cli import main as arena_main

    out = tmp_path / "run"
    argv = ["train", "--steps", "1", "--deals-per-step", "1", "--group-size", "2", "--eval-games", "0",
            "--elo-games", "0", "--hidden-size", "8", "--separate-sides", "false", "--learn-side-weights", "[1, 0]",
            "--output-dir", str(out)]  # fmt: skip
    assert arena_main(argv) == 0
    import json

    config = json.loads((out / "report.json").read_text())["config"]
    assert config["separate_sides"] is False and config["derived_inputs"] is True
    weights = torch.load(out / "policy.pt")
    assert any(k.startswith("sides.0.") for k in weights) and not any(k.startswith("sides.1.") for k in weights)


def test_games_in_lockstep_play_as_they_would_alone():
    from arena.train import _Side, play_games

    torch.manual_seed(0)
    policy = _Side("policy", policy=SeatPolicy(5, 16), learns=True)
    frozen = _Side("frozen", policy=SeatPolicy(5, 16))
    rule = _Side("rule", bot="rule")
    matches = [(policy, rule, 3, 30), (frozen, policy, 4, 40), (policy, policy, 5, 50), (policy, rule, 3, 31)]

    def moves(res):
        return res["winner"], {s: [code for _, _, code in d] for s, d in res["decisions"].items()}

    together = play_games(RULES, matches)
    alone = [play_games(RULES, [m])[0] for m in matches]
    assert [moves(r) for r in together] == [moves(r) for r in alone]
    assert moves(together[0]) != moves(together[3])  # same deal, other sampling seed
