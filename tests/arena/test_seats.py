"""evolver/AvalonSeats-v0: the seats of chosen roles played by one policy (arena.avalon.seats)."""

from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

from arena.avalon.seats import AvalonSeats, seat_evaluation_report  # noqa: E402


def _play(env, options, pick=lambda allowed: allowed[0], seed=0):
    """Play one game; returns the observations each agent read, the final infos and the replies."""
    obs, infos = env.reset(seed=seed, options=options)
    read = {a: [] for a in env.agents}
    replies = []
    while env.agents:
        actions = {a: pick(infos[a]["allowed_actions"]) for a in env.agents if infos[a]["acting"]}
        for a in actions:
            read[a].append(obs[a])
        replies.append(actions)
        obs, rewards, terms, truncs, infos = env.step(actions)
    return read, infos, replies


def test_learning_seats_hold_the_trainable_roles_and_the_game_is_replayed_from_its_task():
    env = AvalonSeats(num_players=5, trainable_roles=["merlin", "servant"], deal_key="test", discussion_rounds=0)
    assert env.num_learning_seats == 3
    read1, final1, replies1 = _play(env, {"split": "dev", "index": 4})
    read2, final2, replies2 = _play(env, {"split": "dev", "index": 4})
    assert (read1, replies1) == (read2, replies2)  # same task, same key, same replies: the same game
    assert sorted(i["role"] for i in final1.values()) == ["merlin", "servant", "servant"]
    assert all(i["learning"] and "success" in i and i["side"] == "good" for i in final1.values())
    assert len({i["success"] for i in final1.values()}) == 1  # one side, one result
    _, other, _ = _play(AvalonSeats(num_players=5, trainable_roles=["assassin", "minion"], deal_key="test",
                                    discussion_rounds=0), {"split": "dev", "index": 4})
    assert sorted(i["role"] for i in other.values()) == ["assassin", "minion"]


def test_each_seat_reads_only_its_own_night_and_only_what_is_new():
    env = AvalonSeats(num_players=5, trainable_roles=["merlin", "servant"], deal_key="test", discussion_rounds=0)
    read, final, _ = _play(env, {"split": "train", "index": 7})
    for agent, observations in read.items():
        seat = int(agent.split("_")[1])
        first, later = observations[0], observations[1:]
        assert first.startswith("Avalon with 5 players") and f"Night: you are Player {seat}," in first
        assert all("Night:" not in o and "Avalon with 5 players" not in o for o in later)  # told once
        others = [s for s in range(5) if s != seat]
        assert not any(f"Night: you are Player {s}," in o for o in observations for s in others)
    # the whole game fits a small budget: the observations after the first are short
    assert max(len(o) for obs in read.values() for o in obs[1:]) < 600


def test_every_allowed_reply_is_accepted_and_teams_are_spelt_out():
    env = AvalonSeats(num_players=5, trainable_roles=["merlin", "servant"], deal_key="test", discussion_rounds=0)
    obs, infos = env.reset(seed=0, options={"split": "train", "index": 0})
    seen_teams = False
    while env.agents:
        actions = {}
        for a in env.agents:
            allowed = infos[a]["allowed_actions"]
            if not infos[a]["acting"]:
                assert allowed == [] and obs[a] == ""
                continue
            assert allowed and all("<" not in x for x in allowed)
            if allowed[0].startswith("TEAM:"):
                seen_teams = True
                assert len(allowed) == 10  # C(5, 2) = C(5, 3) = 10 teams, each spelt out
            actions[a] = allowed[-1]
        obs, _, _, _, infos = env.step(actions)
        assert all(infos[a]["action_valid"] for a in actions)
    assert seen_teams


def test_bad_replies_get_a_fallback_and_the_reason_is_shown_next_turn():
    env = AvalonSeats(num_players=5, trainable_roles=["merlin", "servant"], deal_key="test", discussion_rounds=0)
    obs, infos = env.reset(seed=0, options={"split": "train", "index": 1})
    acting = [a for a in env.agents if infos[a]["acting"]]
    obs, _, _, _, infos = env.step({a: "I refuse" for a in acting})
    assert not any(infos[a]["action_valid"] for a in acting) and all(infos[a]["error"] for a in acting)
    nxt = [a for a in acting if infos[a]["acting"]]
    assert nxt and all("Your last reply was not accepted" in obs[a] for a in nxt)


def test_step_credit_judges_proposals_from_the_seats_own_knowledge():
    env = AvalonSeats(num_players=5, trainable_roles=["merlin"], deal_key="test", discussion_rounds=0)
    for index in range(40):  # a deal where Merlin leads first
        obs, infos = env.reset(seed=0, options={"split": "train", "index": index})
        (merlin,) = env.agents
        if infos[merlin]["acting"] and infos[merlin]["phase"] == "proposal":
            break
    seat, evil = infos[merlin]["seat"], sorted(set(range(5)) - {infos[merlin]["seat"]})
    known = [s for s in evil if f"Player {s}" in obs[merlin].split("You see as evil:")[1].split(".")[0]]
    dirty = f"TEAM: {min(seat, known[0])}, {max(seat, known[0])}"
    _, _, _, _, after = env.step({merlin: dirty})
    assert after[merlin]["step_credit"] == -1.0


def test_step_credit_judges_an_evil_seats_quest_card_and_team_both_ways():
    from arena.avalon import AvalonConfig, AvalonGame
    from arena.avalon.credit import step_credit

    def proposed(team):  # Merlin (seat 0) leads; the Assassin and the Minion are seats 3 and 4
        g = AvalonGame(AvalonConfig(5, discussion_rounds=0), ["merlin", "servant", "servant", "assassin", "minion"], 0)
        g.step(g.codec.team_code(team))
        return g

    def quest_with(team):
        g = proposed(team)
        while g.phase == "vote":
            g.step(g.codec.APPROVE)
        assert g.phase == "quest" and g.fails_needed == 1
        return g, g.codec

    g, c = quest_with([0, 3])  # the Assassin alone with Merlin: its Success gives good the quest
    assert step_credit(g, 3, c.SUCCESS) == -1.0 and step_credit(g, 3, c.FAIL) == 0.0
    assert step_credit(g, 0, c.SUCCESS) is None  # a good seat's only card is not judged
    g, c = quest_with([3, 4])  # both evil players: either may fail it, so neither card is judged
    assert step_credit(g, 3, c.SUCCESS) is None and step_credit(g, 4, c.FAIL) is None
    # Every vote of the Minion is judged, so rejecting every team escapes no -1; Merlin's rejection of a team
    # with evil is sound, its rejection of a clean team unjudged (it may suspect a servant).
    for team, approve, reject in (([0, 1], -1.0, 0.0), ([0, 4], 0.0, -1.0)):
        g = proposed(team)
        assert (step_credit(g, 4, g.codec.APPROVE), step_credit(g, 4, g.codec.REJECT)) == (approve, reject)
    assert step_credit(proposed([0, 4]), 0, c.REJECT) == 0.0 and step_credit(proposed([0, 1]), 0, c.REJECT) is None
    g = proposed([0, 1])
    for _ in range(4):  # four teams rejected, a fifth proposed: rejecting it hands evil the game
        while g.phase == "vote":
            g.step(c.REJECT)
        g.step(c.team_code([1, 2]))
    assert g.rejections == 4 and step_credit(g, 1, c.REJECT) == -1.0 and step_credit(g, 4, c.REJECT) == 0.0


def test_self_seats_are_played_by_the_policy_without_learning_and_bad_settings_are_named():
    env = AvalonSeats(num_players=5, trainable_roles=["merlin"], opponents="self", deal_key="test",
                      discussion_rounds=0)
    obs, infos = env.reset(seed=0, options={"split": "dev", "index": 0})
    assert len(env.agents) == 5 and sum(i["learning"] for i in infos.values()) == 1
    with pytest.raises(ValueError, match="'percival' is not in play"):
        AvalonSeats(num_players=5, trainable_roles=["merlin", "percival"])
    with pytest.raises(ValueError, match="unknown opponent 'bots'"):
        AvalonSeats(num_players=5, opponents="bots")


def test_evaluation_report_counts_games_per_side_and_seats_per_role():
    infos = [
        {"game": "g1", "role": "merlin", "side": "good", "success": True, "evaluation": {}, "opponents": "rule"},
        {"game": "g1", "role": "servant", "side": "good", "success": True, "evaluation": {}, "opponents": "rule"},
        {"game": "g2", "role": "merlin", "side": "good", "success": False, "opponents": "rule"},  # cut: lost
        {"game": "g2", "role": "servant", "side": "good", "success": False, "opponents": "rule"},
    ]
    a = seat_evaluation_report([], infos, 1)["arena"]
    assert (a["games"], a["seats"], a["unfinished"]) == (2, 4, 1)
    assert a["by_side"]["good"]["games"] == 2 and a["by_side"]["good"]["wins"] == 1
    assert a["by_role"]["merlin"]["win_rate"] == 0.5 and len(a["by_role"]["servant"]["win_rate_ci95"]) == 2
    # k samples of one deal share its game id; a seat coming again starts the next game
    replay = [{"game": "g1", "seat": seat, "role": role, "side": "good", "success": won, "evaluation": {}}
              for won in (True, False, False) for seat, role in ((0, "merlin"), (1, "servant"))]
    a = seat_evaluation_report([], replay, 3)["arena"]
    assert (a["games"], a["seats"]) == (3, 6)
    assert (a["by_side"]["good"]["games"], a["by_side"]["good"]["wins"]) == (3, 1)


def _longest_game_pick(env, obs, infos, agent, progress):
    """The reply that makes the game as long as the rules allow: proposals 1-4 of every quest are
    rejected and the 5th approved, teams hold an evil seat, and evil fails quests 2 and 4 only, so all
    five quests are played, each to its fifth proposal."""
    import re

    for quest, proposal in re.findall(r"Quest (\d), proposal (\d)/5", obs[agent]):
        progress[agent] = (int(quest), int(proposal))
    quest, proposal = progress[agent]
    allowed, phase = infos[agent]["allowed_actions"], infos[agent]["phase"]
    evil = [str(infos[a]["seat"]) for a in env.agents if infos[a]["side"] == "evil"]
    if phase == "proposal":
        return next(t for t in allowed if set(evil) & set(t.split(":")[1].replace(",", " ").split()))
    if phase == "vote":
        return next(x for x in allowed if ("approve" if proposal == 5 else "reject") in x.lower())
    if phase == "quest":
        fail = quest % 2 == 0 and infos[agent]["side"] == "evil"
        return next(x for x in allowed if ("fail" if fail else "success") in x.lower())
    return allowed[0]


def test_the_avalon_recipe_budget_holds_the_longest_game():
    # A game the budget cuts counts as lost, so a policy that drags games out (rejecting every team)
    # would lose to the budget, not to the rules: the recipe's budget must hold the longest legal game.
    from evolver_train.policy import build_environment_tokenizer
    from evolver_train.rollout import ChatCodec
    from evolver_train.train_cli import parse_config

    recipe = parse_config(["--config", "avalon"]).train
    kwargs = {k: v for k, v in recipe.env_kwargs.items() if k != "opponents"}
    probe = AvalonSeats(deal_key="test", **kwargs)
    codec = ChatCodec(build_environment_tokenizer(probe, list(probe.tasks("train"))),
                      max_observation_tokens=recipe.max_observation_tokens)
    env = AvalonSeats(deal_key="test", opponents="self", **kwargs)  # the policy's stand-in plays every seat
    obs, infos = env.reset(seed=0, options={"split": "test", "index": 0})
    progress = {a: (1, 1) for a in env.agents}
    turns = {a: 0 for a in env.agents}
    tokens = {a: 0 for a in env.agents}  # what the rollout counts: observations after the first, replies, EOS
    while env.agents:
        actions = {}
        for a in [a for a in env.agents if infos[a]["acting"]]:
            actions[a] = _longest_game_pick(env, obs, infos, a, progress)
            tokens[a] += (len(codec.observation_ids(obs[a])) if turns[a] else 0) + len(codec.action_ids(actions[a])) + 1
            turns[a] += 1
        obs, _, _, _, infos = env.step(actions)
    assert len(infos) == 5 and {i["evaluation"]["end_reason"] for i in infos.values()} <= {
        "assassination_miss", "assassination_hit"}
    assert max(turns.values()) >= 30  # five quests, each to its fifth proposal
    assert max(turns.values()) <= recipe.max_turns
    assert max(tokens.values()) + 2 <= recipe.max_episode_tokens, tokens


def test_a_tiny_policy_is_built_with_positions_for_the_whole_episode_budget():
    from evolver_train.train_cli import load_model, parse_config

    run = parse_config(["--config", "avalon"])
    probe = AvalonSeats(deal_key="test", **{k: v for k, v in run.train.env_kwargs.items() if k != "opponents"})
    model, _ = load_model(run, probe, list(probe.tasks("train")))
    longest = run.train.max_observation_tokens + run.train.max_episode_tokens
    assert longest > 2048 and model.config.max_position_embeddings == longest
