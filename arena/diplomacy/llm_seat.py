"""A Diplomacy power played by a chat model through the shared ``ChatClient`` protocol.

``DiplomacyLLMSeat`` sends the power's text observation (board, last results, its press, legal
orders, reply format), keeps ``<think>`` reasoning private, checks the reply with the environment's
own readers, asks again with the reasons when a line is refused, and returns only accepted lines
(orders, or press lines). When the model keeps failing or the client errors it plays ``PASS`` (units
hold, no press), counted in ``stats``.

Example:
    >>> from arena.diplomacy.game import DiplomacyGame
    >>> class Scripted:
    ...     def chat(self, messages, **kw): return "<think>go east</think>A PAR - BUR\\nA MAR - MUN"
    >>> seat = DiplomacyLLMSeat(Scripted(), max_retries=0)
    >>> seat.reset("FRANCE", seed=0)
    >>> seat.act(DiplomacyGame(), "observation text"), seat.stats["invalid_lines"], seat.thoughts
    ('A PAR - BUR', 1, ['go east'])
"""

from __future__ import annotations

import re
from typing import Any

from evolver_gym.core.llm.base import ChatClient, LLMError

from .game import DiplomacyGame
from .orders import check_orders, read_press

__all__ = ["DiplomacyLLMSeat", "SYSTEM_PROMPT"]

SYSTEM_PROMPT = """You are playing Diplomacy as one of the seven great powers.
Each turn you get the board, the last results, the messages you may read and an instruction.
Think privately inside <think>...</think>; nothing inside it is shown to anyone.
After thinking, reply in the requested format only:
  orders: one order per line, copied exactly from your list of legal orders (at most one per unit);
  press: one line per message, 'TO <POWER>: text' or 'TO ALL: text', or PASS."""

_THINK_BODY = re.compile(r"<think>(.*?)(?:</think>|$)", re.IGNORECASE | re.DOTALL)


class DiplomacyLLMSeat:
    """A power played by a chat model.

    Args:
        client: Any :class:`~evolver_gym.core.llm.base.ChatClient` (a ``.chat(messages)`` method).
        name: Label in tournaments.
        max_retries: Extra model calls after a reply with refused lines before the accepted lines
            (possibly none) are played.
        system_prompt: Replaces :data:`SYSTEM_PROMPT`.
        chat_overrides: Passed to every ``client.chat`` call (temperature, max_tokens, ...).

    Counters (``stats``): ``calls``, ``invalid_lines``, ``retries``, ``fallbacks``, ``client_errors``.
    ``thoughts`` keeps the private reasoning of every reply; it is never returned to the game.
    """

    def __init__(
        self,
        client: ChatClient,
        name: str = "llm",
        *,
        max_retries: int = 1,
        system_prompt: str | None = None,
        chat_overrides: dict[str, Any] | None = None,
    ):
        if not hasattr(client, "chat"):
            raise TypeError(f"client must follow the ChatClient protocol (a .chat method), got {type(client)}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {max_retries!r}")
        self.client = client
        self.name = name
        self.max_retries = max_retries
        self.system_prompt = system_prompt or SYSTEM_PROMPT
        self.chat_overrides = dict(chat_overrides or {})
        self.stats = {"calls": 0, "invalid_lines": 0, "retries": 0, "fallbacks": 0, "client_errors": 0}
        self.thoughts: list[str] = []
        self.errors: list[str] = []
        self.power = ""

    def reset(self, power: str, seed: int) -> None:
        self.power = power

    def act(self, game: DiplomacyGame, text: str | None = None) -> str:
        """Ask the model; return accepted order lines, accepted press lines, or ``PASS``."""
        messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": text or "(no observation)"},
        ]
        press = game.stage == "press"
        for attempt in range(self.max_retries + 1):
            try:
                reply = self.client.chat(messages, **self.chat_overrides)
            except LLMError as exc:
                self.stats["client_errors"] += 1
                self.errors.append(f"client: {exc}")
                break
            self.stats["calls"] += 1
            reply = reply if isinstance(reply, str) else ""
            self.thoughts += [m.strip() for m in _THINK_BODY.findall(reply)]
            if press:
                sent, errors = read_press(reply, self.power, game.config.max_message_chars)
                lines = [f"TO {to}: {message}" for to, message in sent]
            else:
                lines, errors = check_orders(game, self.power, reply)
            if errors:
                self.stats["invalid_lines"] += len(errors)
                self.errors += errors
            if not errors or attempt == self.max_retries:
                return "\n".join(lines) or "PASS"
            self.stats["retries"] += 1
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": "These lines were not accepted: " + "; ".join(errors)
                 + ". Reply again with the whole reply, in the requested format."},
            ]
        self.stats["fallbacks"] += 1
        return "PASS"
