"""The LLM seat: parsing of malformed/valid model replies, private reasoning, fallbacks."""

from __future__ import annotations

import pytest

from arena.avalon import AvalonConfig, AvalonGame
from arena.avalon.bots import RuleBot
from arena.avalon.llm_seat import LLMSeat
from arena.avalon.play import play_game
from evolver_gym.core.llm.base import LLMError


class FixedClient:
    """Answers from a fixed list (cycled); records every conversation it was sent."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.sent = []

    def chat(self, messages, **overrides):
        self.sent.append(messages)
        reply = self.replies[(len(self.sent) - 1) % len(self.replies)]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def chat_batch(self, conversations, **overrides):
        return [self.chat(c, **overrides) for c in conversations]


def _vote_state():
    g = AvalonGame(
        AvalonConfig(5, discussion_rounds=0), ["merlin", "servant", "servant", "assassin", "minion"], 0
    )
    g.step(g.codec.team_code([0, 1]))
    return g


@pytest.mark.parametrize(
    "reply,expected",
    [
        ("VOTE: approve", "approve"),
        ("<think>Player 3 is evil, but I will play along.</think>\nVOTE: reject", "reject"),
        ("I think... hmm. VOTE: approve. Actually no.\nVOTE: Reject", "reject"),
        ('{"action": "VOTE: approve"}', "approve"),
        ("Yes", "approve"),
        ("I do not approve of this team. VOTE: reject", "reject"),
    ],
)
def test_valid_replies_are_parsed(reply, expected):
    g = _vote_state()
    seat = LLMSeat(FixedClient([reply]))
    seat.reset(0, 0)
    code = seat.act(g.view(0), "transcript")
    assert code == (g.codec.APPROVE if expected == "approve" else g.codec.REJECT)
    assert seat.stats == {"calls": 1, "invalid_replies": 0, "fallbacks": 0, "client_errors": 0}


def test_malformed_then_valid_reply_retries_with_the_reason():
    g = _vote_state()
    client = FixedClient(["I do not approve of this team", "VOTE: reject"])
    seat = LLMSeat(client, max_retries=1)
    seat.reset(0, 0)
    assert seat.act(g.view(0), "transcript") == g.codec.REJECT
    assert seat.stats["invalid_replies"] == 1 and seat.stats["calls"] == 2
    assert (
        "not accepted" in client.sent[1][-1]["content"] and "VOTE: approve" in client.sent[1][-1]["content"]
    )


@pytest.mark.parametrize(
    "junk", ["", "\x00\x01\x02", "TEAM: 9, 9, 9", "ASSASSINATE: 77", "{not json", "🙂" * 500]
)
def test_junk_falls_back_to_a_legal_action_and_counts_it(junk):
    g = _vote_state()
    seat = LLMSeat(FixedClient([junk]), max_retries=2)
    seat.reset(0, 0)
    code = seat.act(g.view(0), "transcript")
    assert code in g.legal_codes(0)
    assert seat.stats["fallbacks"] == 1 and seat.stats["invalid_replies"] == 3


def test_illegal_but_wellformed_reply_is_refused():
    g = AvalonGame(
        AvalonConfig(5, discussion_rounds=0), ["merlin", "servant", "servant", "assassin", "minion"], 0
    )
    g.step(g.codec.team_code([0, 1]))
    for _ in range(5):
        g.step(g.codec.APPROVE)
    seat = LLMSeat(FixedClient(["QUEST: fail"]), max_retries=1)  # Merlin may not fail
    seat.reset(0, 0)
    assert seat.act(g.view(0), "transcript") == g.codec.SUCCESS
    assert seat.stats["fallbacks"] == 1 and "not legal" in seat.errors[0]


def test_client_error_falls_back_without_crashing():
    g = _vote_state()
    seat = LLMSeat(FixedClient([LLMError("down", kind="timeout")]))
    seat.reset(0, 0)
    assert seat.act(g.view(0), "t") in g.legal_codes(0)
    assert seat.stats["client_errors"] == 1 and seat.stats["fallbacks"] == 1


def test_private_reasoning_never_reaches_other_seats():
    secret = "SECRET-PLAN-42"
    replies = [
        f"<think>{secret}: I am the Assassin.</think>SAY: I am loyal to Arthur, trust me.",
        f"<think>{secret}</think>TEAM: 0, 1",
        f"<think>{secret}</think>TEAM: 0, 1, 2",
        f"<think>{secret}</think>VOTE: approve",
        f"<think>{secret}</think>QUEST: success",
        f"<think>{secret}</think>ASSASSINATE: 1",
    ]

    class PhaseClient(FixedClient):
        def chat(self, messages, **kw):
            self.sent.append(messages)
            prompt = messages[1]["content"].rsplit("\n", 1)[-1]
            for r in replies:
                key = r.split("</think>")[1].split(":")[0]
                if key in prompt:
                    return r
            return replies[0]

    cfg = AvalonConfig(5)
    seat = LLMSeat(PhaseClient([]))
    players = [seat] + [RuleBot() for _ in range(4)]
    for s in range(6):
        res = play_game(players, config=cfg, seed=s)
        text = "\n".join(e["text"] for e in res["record"]["events"])
        assert secret not in text
        assert res["fallback_actions"][0] == 0
    assert any(secret in t for t in seat.thoughts)
    assert "Player 0 says: I am loyal to Arthur, trust me." in text


def test_llm_seat_through_the_local_openai_compatible_server(llm_server):
    g = _vote_state()
    llm_server.push("<think>reasoning</think>\nnonsense", "VOTE: approve")
    seat = LLMSeat(llm_server.client(role="arena"), max_retries=1)
    seat.reset(0, 0)
    assert seat.act(g.view(0), "the transcript") == g.codec.APPROVE
    assert seat.stats["invalid_replies"] == 1
    first = llm_server.requests[0]["messages"]
    assert first[0]["role"] == "system" and first[1]["content"] == "the transcript"
