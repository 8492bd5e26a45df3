"""An Avalon seat played by a chat model through the shared ``ChatClient`` protocol.

* ``LLMSeat`` - prompts the model with the seat's transcript, keeps its ``<think>`` reasoning
  private, parses the reply with the text protocol, asks again on a bad reply, and falls back to a
  seeded legal action (counted) when the model still fails or the client errors.

``llm:<model>@<url>`` seats (a remote endpoint, whose sampling cannot be restricted) are played by it. A
model folder on this machine (``checkpoint:<path>``) is played by
``evolver_train.arena_seat.PolicySeat`` instead: the training chat, legal replies only.
"""

from __future__ import annotations

import re
from typing import Any

from evolver_gym.core.llm.base import ChatClient, LLMError
from evolver_gym.core.seeding import make_rng

from .actions import ParseError, parse_action, strip_private
from .engine import SeatView

__all__ = ["LLMSeat", "SYSTEM_PROMPT"]

SYSTEM_PROMPT = """You are playing The Resistance: Avalon as one of the players.
Each turn you get the full transcript from your seat and an instruction.
Think privately inside <think>...</think>; nothing inside it is shown to anyone.
After thinking, reply with exactly one line in the requested format:
  SAY: <message>            (discussion; or PASS to stay silent)
  TEAM: <player>, <player>  (when you are the leader)
  VOTE: approve | VOTE: reject
  QUEST: success | QUEST: fail
  ASSASSINATE: <player>
Only the text after your thinking is used; in discussion it is heard by every player."""

_THINK_BODY = re.compile(r"<think>(.*?)(?:</think>|$)", re.IGNORECASE | re.DOTALL)


class LLMSeat:
    """A seat played by a chat model.

    Args:
        client: Any :class:`~evolver_gym.core.llm.base.ChatClient`.
        name: Label in tournaments.
        max_retries: Extra model calls after a bad reply before the fallback is played.
        system_prompt: Replaces :data:`SYSTEM_PROMPT`; ``""`` sends no system message.
        chat_overrides: Passed to every ``client.chat`` call (temperature, max_tokens, ...).
        conversation: Keep one chat per game (cleared by :meth:`reset`): each ``text`` is the next user
            turn and each reply stays in the chat, as a policy trained on the multi-seat environment's
            observations (what is new since the seat's last turn) reads them. Every host then gives
            those observations (:class:`~arena.avalon.observation.SeatStream`), not the whole transcript.

    Counters (``stats``): ``calls``, ``invalid_replies``, ``fallbacks``, ``client_errors``.
    ``thoughts`` keeps the private reasoning of every reply, for analysis; it is never returned
    to the game.

    Example:
        >>> class Echo:
        ...     def chat(self, messages, **kw): return "<think>I am Merlin</think>VOTE: approve"
        ...     def chat_batch(self, convs, **kw): return [self.chat(c) for c in convs]
        >>> from arena.avalon import AvalonConfig, AvalonGame
        >>> g = AvalonGame(AvalonConfig(5, discussion_rounds=0), ["merlin", "servant", "servant",
        ...                "assassin", "minion"], 0)
        >>> g.step(g.codec.team_code([0, 1]))
        >>> seat = LLMSeat(Echo()); seat.reset(0, seed=0)
        >>> seat.act(g.view(0), "transcript") == g.codec.APPROVE, seat.thoughts
        (True, ['I am Merlin'])
    """

    needs_text = True

    def __init__(
        self,
        client: ChatClient,
        name: str = "llm",
        *,
        max_retries: int = 1,
        system_prompt: str | None = None,
        chat_overrides: dict[str, Any] | None = None,
        conversation: bool = False,
    ):
        if not hasattr(client, "chat"):
            raise TypeError(
                f"client must follow the ChatClient protocol (a .chat method), got {type(client)}"
            )
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {max_retries!r}")
        self.client = client
        self.name = name
        self.max_retries = max_retries
        self.system_prompt = SYSTEM_PROMPT if system_prompt is None else system_prompt
        self.conversation = bool(conversation)
        self._chat: list[dict[str, str]] = []
        self.chat_overrides = dict(chat_overrides or {})
        self.stats = {"calls": 0, "invalid_replies": 0, "fallbacks": 0, "client_errors": 0}
        self.thoughts: list[str] = []
        self.errors: list[str] = []
        self.rng = make_rng("llm-seat", 0)

    def reset(self, seat: int, seed: int) -> None:
        self.rng = make_rng("llm-seat", seed, seat)
        self._chat = []

    def act(self, view: SeatView, text: str | None = None) -> int | str:
        """Ask the model; return an action code, or ``"SAY: ..."`` public speech in discussion."""
        head = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages = [*head, *self._chat, {"role": "user", "content": text or "(no transcript)"}]
        for _ in range(self.max_retries + 1):
            try:
                reply = self.client.chat(messages, **self.chat_overrides)
            except LLMError as exc:
                self.stats["client_errors"] += 1
                self.errors.append(f"client: {exc}")
                break
            self.stats["calls"] += 1
            if not isinstance(reply, str):
                reply = ""
            self.thoughts += [m.strip() for m in _THINK_BODY.findall(reply)]
            try:
                parsed = parse_action(reply, view.phase, view.codec, team_size=view.team_size)
                if parsed.code is not None and parsed.code not in view.legal:
                    raise ParseError(f"{view.codec.describe(parsed.code)!r} is not legal for you now")
            except ParseError as exc:
                self.stats["invalid_replies"] += 1
                self.errors.append(str(exc))
                messages += [
                    {"role": "assistant", "content": reply},
                    {
                        "role": "user",
                        "content": f"Your reply was not accepted: {exc}. Reply again "
                        "with exactly one line in the requested format.",
                    },
                ]
                continue
            if self.conversation:
                self._chat = [*messages[len(head):], {"role": "assistant", "content": reply}]
            if parsed.code is None:
                # Only the public speech leaves the seat; the reasoning stays in self.thoughts.
                return "SAY: " + strip_private(parsed.speech or "")
            return parsed.code
        self.stats["fallbacks"] += 1
        if self.conversation:
            self._chat = messages[len(head):]
        return self._fallback(view)

    def _fallback(self, view: SeatView) -> int:
        c = view.codec
        if view.phase == "discussion":
            return c.PASS
        if view.phase == "vote":
            return c.REJECT
        if view.phase == "quest":
            return c.SUCCESS
        return int(view.legal[int(self.rng.integers(len(view.legal)))])
