"""``checkpoint:<path>`` seats (evolver_train.arena_seat) play as the policy plays in training.

The chat is the training rollout's (ChatCodec, the multi-seat environment's observations), replies are
drawn from the training sampler's restricted distribution over the legal replies, in every host.
"""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("pettingzoo")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from arena.avalon import AvalonConfig, AvalonGame  # noqa: E402
from arena.avalon.bots import RuleBot  # noqa: E402
from arena.avalon.observation import SeatStream, view_allowed_texts  # noqa: E402
from arena.avalon.opponents import make_opponent  # noqa: E402
from arena.avalon.play import play_game  # noqa: E402
from arena.avalon.seats import AvalonSeats  # noqa: E402
from arena.avalon.tournament import run_tournament  # noqa: E402
from evolver_train.arena_seat import LocalPolicy, PolicySeat  # noqa: E402

CONFIG = AvalonConfig(5, discussion_rounds=0)
ALL_ROLES = ["merlin", "servant", "assassin", "minion"]


@pytest.fixture(autouse=True)
def one_thread():
    """A model this small decodes fastest on one thread (and ten times slower on a busy machine's second)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The tiny policy `evolver train --config avalon` starts from, saved as a checkpoint folder."""
    from evolver_train.policy import build_policy

    env = AvalonSeats(num_players=5, trainable_roles=["merlin", "servant"], deal_key="test", discussion_rounds=0)
    model, tok = build_policy("tiny", env=env, tasks=env.tasks("train"), extra_texts=[""], seed=0)
    path = tmp_path_factory.mktemp("policy") / "start"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _restricted_logprob(policy, context, sequences, reply):
    """log P(reply | context) as the trainer scores a restricted turn: one teacher-forced forward, each
    position's softmax renormalised over the tokens the training restriction record allows there."""
    from evolver_train.rollout import restriction_record

    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([list(context) + list(reply)])).logits[0].float()
    total = 0.0
    for k, allowed in restriction_record(sequences, reply, 0).items():
        row = logits[len(context) + k - 1]
        total += float(row[reply[k]] - torch.logsumexp(row[torch.tensor(allowed)], -1))
    return total


def test_a_tournament_with_a_checkpoint_entrant_plays_legal_moves_to_the_rules_end(folder, tmp_path):
    entrants = {"tiny": f"checkpoint:{folder}", "rule": "rule", "random": "random"}
    first = run_tournament(entrants, num_games=5, config=CONFIG, seed=4, out=tmp_path / "a.jsonl")
    again = run_tournament(entrants, num_games=5, config=CONFIG, seed=4, out=tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()  # same seed, same games
    assert first == again
    tiny = first["entrants"]["tiny"]
    assert tiny["overall"]["games"] > 0 and tiny["invalid_actions"] == tiny["fallback_actions"] == 0
    assert tiny["llm"]["turns"] > 0 and tiny["llm"]["unmatched"] == tiny["llm"]["ambiguous"] == 0
    assert "fallbacks" not in tiny["llm"] and "invalid_replies" not in tiny["llm"]
    reasons = first["end_reasons"]
    assert sum(reasons.values()) == 5 and reasons.get("five_rejections", 0) < 5, reasons  # ended by play
    other = run_tournament(entrants, num_games=5, config=CONFIG, seed=5)
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert all(r["fallback_actions"][r["lineup"].index("tiny")] == 0 for r in rows if "tiny" in r["lineup"])
    assert other != first  # another seed, other games


def test_a_greedy_seat_in_a_tournament_game_replays_the_training_rollout_token_for_token(folder):
    """Every seat of a game played by the training rollout (AvalonSeats, ChatCodec, the restricted sampler at
    temperature 0), then the same deal played by greedy checkpoint seats in play_game: the same chats."""
    from evolver_train.rollout import IncrementalSampler, RowSpec, allowed_actions_in, play_episodes

    policy = LocalPolicy.load(folder)
    env = AvalonSeats(num_players=5, trainable_roles=ALL_ROLES, deal_key="test", discussion_rounds=0)
    sampler = IncrementalSampler(policy.model, eos_token_ids=policy.eos_token_ids, pad_token_id=policy.pad_token_id,
                                 temperature=0.0)
    rows = [RowSpec(task=env.tasks("dev")[2], seed=3, group=0) for _ in range(5)]
    episodes = play_episodes([env], rows, sampler, policy.codec, max_turns=60, max_episode_tokens=10**6,
                             max_turn_tokens=32, allowed_actions=allowed_actions_in)
    game = env.game
    assert game.done and all(ep.invalid_actions == 0 for ep in episodes)
    seats = [PolicySeat(policy, greedy=True) for _ in range(5)]
    result = play_game(seats, config=CONFIG, seed=0, roles=game.roles, leader=game.proposals[0][1])
    assert (result["winner"], result["end_reason"]) == (game.winner, game.end_reason)
    assert result["fallback_actions"] == [0] * 5 and result["invalid_actions"] == [0] * 5
    for s, (ep, seat) in enumerate(zip(episodes, seats)):
        assert ep.final_info["seat"] == s
        assert seat.context == ep.tokens.prompt_ids + ep.tokens.completion_ids, f"seat {s}'s chat differs"
        assert [a for a, _ in seat.choices] == [step.action for step in ep.steps]


def test_each_reply_is_drawn_from_the_training_samplers_restricted_distribution(folder):
    policy = LocalPolicy.load(folder)
    seat = PolicySeat(policy)
    turns = []
    act = seat.act

    def recording(view, text=None):
        code = act(view, text)
        reply = policy.action_ids(view_allowed_texts(view)[view.legal.index(code)])
        sequences = [policy.action_ids(a) for a in view_allowed_texts(view)]
        turns.append((list(seat.context[:len(seat.context) - len(reply)]), sequences, reply))
        return code

    seat.act = recording
    play_game([seat, *(RuleBot() for _ in range(4))], config=CONFIG, seed=1)
    assert len(turns) == len(seat.choices) >= 3 and any(len(s) > 2 for _, s, _ in turns)
    for (context, sequences, reply), (_, logprob) in zip(turns, seat.choices):
        assert logprob == pytest.approx(_restricted_logprob(policy, context, sequences, reply), abs=1e-4)

    # The distribution itself: a vote at a seat's first turn, sampled by 200 differently seeded seats.
    game = AvalonGame(CONFIG, ("merlin", "servant", "servant", "assassin", "minion"), 0)
    game.step(game.codec.team_code([0, 1]))
    view, text = game.view(0), SeatStream().observe(game, 0)  # the leader votes first
    context = policy.codec.prompt_ids(text)
    sequences = [policy.action_ids(a) for a in view_allowed_texts(view)]
    probs = [math.exp(_restricted_logprob(policy, context, sequences, s)) for s in sequences]
    assert len(probs) == 2 and sum(probs) == pytest.approx(1.0, abs=1e-4) and min(probs) > 0.05
    codes = []
    for k in range(200):
        sampler = PolicySeat(policy)
        sampler.reset(0, seed=k)
        codes.append(sampler.act(view, text))
    share = codes.count(view.legal[0]) / len(codes)
    assert abs(share - probs[0]) < 0.1, (share, probs)


@pytest.mark.parametrize("host", ["tournament", "single-seat", "multi-seat"])
def test_every_host_gives_the_seat_the_multi_seat_observations(folder, host, monkeypatch):
    read: list[tuple[int, str]] = []
    act = PolicySeat.act

    def recording(self, view, text=None):
        read.append((view.seat, text))
        code = act(self, view, text)
        assert isinstance(code, int) and code in view.legal  # a legal move, never a text to repair
        return code

    monkeypatch.setattr(PolicySeat, "act", recording)
    spec = f"checkpoint:{folder}"
    if host == "tournament":
        play_game([make_opponent(spec)(), *(RuleBot() for _ in range(4))], config=CONFIG, seed=2)
    elif host == "single-seat":
        import gymnasium as gym

        import evolver_gym  # noqa: F401 - registers evolver/AvalonSeat-v0

        env = gym.make("evolver/AvalonSeat-v0", opponents=spec, deal_key="test", discussion_rounds=0)
        obs, info = env.reset(seed=0, options={"split": "dev", "index": 1})
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(info["allowed_actions"][0])
            done = terminated or truncated
    else:
        env = AvalonSeats(num_players=5, trainable_roles=["merlin"], opponents=spec, deal_key="test",
                          discussion_rounds=0)
        obs, infos = env.reset(seed=0, options={"split": "dev", "index": 1})
        while env.agents:
            obs, _, _, _, infos = env.step({a: i["allowed_actions"][0] for a, i in infos.items() if i["acting"]})
    seats = sorted({s for s, _ in read})
    assert seats
    for s in seats:
        texts = [t for seat, t in read if seat == s]
        assert texts[0].startswith("Avalon with 5 players") and f"Night: you are Player {s}," in texts[0]
        assert all("Avalon with 5 players" not in t and "Night:" not in t for t in texts[1:])  # only what is new


def test_a_chat_longer_than_the_model_restarts_from_the_rules_and_is_counted(folder):
    from evolver_train.evaluation import load_checkpoint
    from evolver_train.rollout import ChatCodec

    model, tok = load_checkpoint(folder)
    first = len(ChatCodec(tok).prompt_ids(SeatStream().observe(AvalonGame(CONFIG, ALL_ROLES + ["servant"], 0), 0)))
    model.config.max_position_embeddings = first + 60  # room for the first turns only
    seat = PolicySeat(LocalPolicy(model, ChatCodec(tok), max_turn_tokens=12))
    result = play_game([seat, *(RuleBot() for _ in range(4))], config=CONFIG, seed=1)
    assert seat.stats["restarts"] > 0 and result["fallback_actions"][0] == 0
    assert tok.decode(seat.context).count("avalon with 5 players") == 1  # the rules again, once


@pytest.mark.parametrize("build,message", [
    (lambda p: PolicySeat("runs/avalon"), "policy must be a LocalPolicy"),
    (lambda p: PolicySeat(p, greedy="yes"), "greedy must be True or False, got 'yes'"),
    (lambda p: LocalPolicy(p.model, p.codec, max_turn_tokens=0), "max_turn_tokens must be a positive int, got 0"),
    (lambda p: LocalPolicy.load("no/such/folder"), "'no/such/folder' is not a model folder"),
    (lambda p: make_opponent("rule", greedy=1), "greedy must be True or False, got 1"),
    (lambda p: SeatStream(max_new_lines=0), "max_new_lines must be a positive int, got 0"),
])
def test_bad_arguments_are_named(folder, build, message):
    with pytest.raises((TypeError, ValueError), match=message.replace("(", r"\(")):
        build(LocalPolicy.load(folder))


def test_docstring_examples():
    import doctest

    import evolver_train.arena_seat as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
