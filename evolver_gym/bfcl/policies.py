"""Model-free callers for BFCL baselines and fidelity checks.

* ``replay_policy`` - replies from a list (the oracle's, a perturbed one), then hand-backs.
* ``one_call_short`` - the oracle's replies less the last call of the last turn that has calls.
* ``perturb`` - the oracle's replies with one call dropped, duplicated or given another value.
* ``ChatCaller`` - any ``ChatClient`` (an OpenAI-compatible endpoint, a local model) as a policy: the
  episode as a chat, observations as user messages, replies as assistant messages.
* ``RandomCaller`` - per turn, a few calls of functions the docs list, with arguments drawn from the user
  turn's words and numbers (a seeded rule baseline), then a hand-back.

Example:
    >>> from evolver_gym.bfcl.policies import one_call_short
    >>> one_call_short(["[cd(folder='a'), ls()]", "Done."])
    ["[cd(folder='a')]", 'Done.']
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .tasks import HANDBACK

__all__ = ["ChatCaller", "RandomCaller", "one_call_short", "perturb", "replay_policy"]

_QUOTED = re.compile(r"'([^']{1,60})'")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_WORD = re.compile(r"[A-Za-z][A-Za-z_.-]{2,}")


def replay_policy(actions: Sequence[str]) -> Callable[[str, dict[str, Any]], str]:
    """``policy(obs, info)`` that plays ``actions`` in order, then hands back every turn."""
    queue = list(actions)

    def policy(observation: str, info: dict[str, Any]) -> str:
        return queue.pop(0) if queue else HANDBACK

    return policy


def one_call_short(actions: Sequence[str]) -> list[str]:
    """``actions`` (oracle replies) without the last call of the last reply that has calls."""
    out = list(actions)
    for i in range(len(out) - 1, -1, -1):
        try:
            node = ast.parse(out[i], mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.List) and node.elts:
            rest = node.elts[:-1]
            out[i] = "[" + ", ".join(ast.unparse(e) for e in rest) + "]" if rest else HANDBACK
            return out
    return out


class RandomCaller:
    """Calls 1-3 functions per turn, then hands back; seeded, so the same rng gives the same episode.

    Functions are taken from the docs shown so far (reset observation and revealed docs); each required
    parameter gets a value by its type: a string quoted in the user turn (else a word of it), a number
    in it (else 0-9), a random boolean, a one-item list, an empty dict.

    Args:
        rng: The generator (``np.random.default_rng(seed)``).
        max_calls: At most this many calling steps per turn (one call each).
    """

    def __init__(self, rng: np.random.Generator, max_calls: int = 3):
        if not isinstance(max_calls, int) or max_calls < 1:
            raise ValueError(f"RandomCaller.max_calls must be a positive int, got {max_calls!r}")
        self.rng, self.max_calls = rng, max_calls
        self.docs: dict[str, dict[str, Any]] = {}
        self.turn_text, self.left = "", 0

    def _learn(self, observation: str) -> None:
        start = observation.find("[")
        for chunk in re.finditer(r"\{\s*\"name\": .*?\n(?:    )?\}", observation[start:], re.DOTALL):
            try:
                doc = ast.literal_eval(chunk.group(0).replace("true", "True").replace("false", "False")
                                       .replace("null", "None"))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(doc, dict) and "name" in doc:
                self.docs[doc["name"]] = doc

    def _value(self, schema: dict[str, Any]) -> Any:
        kind = schema.get("type", "string")
        quoted, numbers = _QUOTED.findall(self.turn_text), _NUMBER.findall(self.turn_text)
        words = _WORD.findall(self.turn_text) or ["item"]
        if kind in ("integer", "float", "number"):
            value = float(self.rng.choice(numbers)) if numbers else int(self.rng.integers(10))
            return int(value) if kind == "integer" else value
        if kind == "boolean":
            return bool(self.rng.integers(2))
        if kind in ("array", "tuple"):
            return [self._value(schema.get("items", {"type": "string"}))]
        if kind == "dict":
            return {}
        if "enum" in schema and schema["enum"]:
            return str(self.rng.choice(schema["enum"]))
        return str(self.rng.choice(quoted or words))

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        if "results" not in info:  # a new turn (reset or after a hand-back)
            self._learn(observation)
            self.turn_text = observation.rsplit("\n\n", 1)[-1] if info.get("step", 0) == 0 else observation
            self.left = int(self.rng.integers(1, self.max_calls + 1))
        if self.left <= 0 or not self.docs:
            self.left = 0
            return HANDBACK
        self.left -= 1
        names = sorted(self.docs)
        doc = self.docs[names[int(self.rng.integers(len(names)))]]
        params = doc.get("parameters", {}).get("properties", {})
        required = doc.get("parameters", {}).get("required", [])
        args = ", ".join(f"{p}={self._value(params.get(p, {}))!r}" for p in required)
        return f"[{doc['name']}({args})]"


def perturb(actions: list[str], rng: np.random.Generator) -> list[str]:
    """The oracle's replies with one call dropped, duplicated or given another value (seeded by ``rng``)."""
    out = list(actions)
    calling = [i for i, a in enumerate(out) if a.startswith("[")]
    if not calling:
        return out
    i = calling[int(rng.integers(len(calling)))]
    calls = ast.parse(out[i], mode="eval").body.elts
    j = int(rng.integers(len(calls)))
    kind = int(rng.integers(3))
    if kind == 0:
        calls = calls[:j] + calls[j + 1:]
    elif kind == 1:
        calls = calls[:j + 1] + calls[j:]
    else:
        for node in ast.walk(calls[j]):
            value = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                node.value = node.value + "_x" if isinstance(node.value, str) else node.value + 1
                break
    out[i] = "[" + ", ".join(ast.unparse(c) for c in calls) + "]" if calls else HANDBACK
    return out


class ChatCaller:
    """A chat model as a BFCL policy: each observation is a user message, each reply an assistant one.

    The first observation (BFCL's system prompt and the first user turn) is one user message, as for
    models without a system role in BFCL's prompting handlers. A client error (``LLMError``) becomes a
    hand-back with the error in ``last_error``: an unreachable endpoint scores 0, it does not crash a run.

    Args:
        client: A ``ChatClient`` (``OpenAIChatClient`` for any OpenAI-compatible endpoint,
            ``TransformersChatClient`` for a local model).
        **overrides: Per-call settings (``temperature``, ``max_tokens``, ...).

    Example:
        >>> class Echo:
        ...     def chat(self, messages, **kw):
        ...         return "[pwd()]" if len(messages) == 1 else "Done."
        >>> caller = ChatCaller(Echo())
        >>> caller("first turn", {"step": 0}), caller("results", {"step": 1, "results": []})
        ('[pwd()]', 'Done.')
    """

    def __init__(self, client: Any, **overrides: Any):
        if not callable(getattr(client, "chat", None)):
            raise TypeError(f"ChatCaller needs a ChatClient (with .chat), got {type(client).__name__}")
        self.client, self.overrides = client, overrides
        self.messages: list[dict[str, str]] = []
        self.last_error: str | None = None

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        from evolver_gym.core.llm.base import LLMError

        if info.get("step", 0) == 0:
            self.messages = []
        self.messages.append({"role": "user", "content": observation})
        try:
            reply = self.client.chat(list(self.messages), **self.overrides)
        except LLMError as exc:
            self.last_error, reply = str(exc), HANDBACK
        self.messages.append({"role": "assistant", "content": reply})
        return reply
