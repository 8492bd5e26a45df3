"""Seeded hostile actions for robustness checks of ``AppWorldEnv`` (tests and ``benchmarks/appworld_fuzz.py``).

* ``fuzz_actions`` - ``n`` actions for ``action_mode`` ("code" or "tool"), drawn from ``seed``.
* ``fuzz_env`` - step an env through them; counts exceptions out of ``step()`` and observations
  outside ``observation_space``.

The actions mix random text (control characters, lone surrogates, odd Unicode), fragments of
code and JSON glued at random (mostly invalid), and well-formed actions with hostile arguments
(huge, deeply nested, wrong types, escape attempts). A few loop forever, so timeouts are covered.
"""

from __future__ import annotations

import json
import random
from typing import Any

__all__ = ["fuzz_actions", "fuzz_env"]

_ALPHABET = (
    "abcxyz_ 0123456789()[]{}:;,.'\"=+-*/%<>!\\\n\t\r"
    "\x00\x01\x07\x08\x1b\x7f\x85\xa0\u200b\u202e\u2028\ufeff\ue000\udcff\ud800🙂ß漢"
)
_CODE_FRAGMENTS = (
    "print(", ")", "apis.", "phone", "notes", "supervisor", ".login(", ".show_alarms(", "access_token=tok",
    "while True:\n    pass", "for i in range(10):\n", "    ", "\n", "x = ", "'x' * 10**6", "raise ", "ValueError(",
    "import os", "import json", "getattr(", "'gi_frame'", "__class__", "'{0.__class__}'.format(1)", "lambda: 0",
    "def f(n):\n    return f(n + 1)\n", "f(0)", "[" * 50, "]" * 50, "try:\n", "except BaseException:\n", "yield",
    "\x00", "\udcff", "```python\n", "```", "None", "{'a': [1, 2]}", "chr(27) * 100", "10 ** 10 ** 10", "del x",
    "apis.supervisor.show_account_passwords()", "apis.api_docs.show_api_doc(app_name='phone', api_name='login')",
)
_API_NAMES = (
    "phone__login", "phone__show_alarms", "notes__create_note", "supervisor__show_profile", "api_docs__show_api_doc",
    "api_docs__show_app_descriptions", "supervisor__show_account_passwords", "music__search_songs", "nope__nothing",
    "phone", "", "__", "phone.login", "a" * 300,
)


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(n))


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return _text(rng, rng.randrange(0, 40))
    if kind == 1:
        return rng.choice([0, -1, 1, 2**63, -(2**70), 20, 21])
    if kind == 2:
        return rng.choice([0.5, float("1e308"), -0.0])
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return "x" * rng.choice([1, 100, 20_001, 150_000])
    if kind == 5:
        return "[" * rng.randrange(1, 200)
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if kind == 7:
        return {_text(rng, 5): _value(rng, depth + 1) for _ in range(rng.randrange(0, 4))}
    nested: Any = 1
    for _ in range(rng.randrange(10, 60)):
        nested = [nested]
    return nested


def _code_action(rng: random.Random) -> str:
    kind = rng.randrange(100)
    if kind < 15:
        return _text(rng, rng.randrange(0, 200))
    if kind < 50:
        return "".join(rng.choice(_CODE_FRAGMENTS) for _ in range(rng.randrange(1, 8)))
    if kind < 65:
        return f"print({_value(rng)!r})"
    if kind < 75:
        return f"raise ValueError({_value(rng)!r})"
    if kind < 93:
        app, api = rng.choice(_API_NAMES[:8]).split("__")
        args = ", ".join(f"{k}={_value(rng)!r}" for k in rng.sample(["access_token", "username", "password",
                                                                      "title", "content", "app_name", "page_limit"],
                                                                     rng.randrange(0, 4)))
        return f"print(apis.{app}.{api}({args}))"
    if kind < 99:
        return rng.choice(_CODE_FRAGMENTS[9:40])
    return "while True:\n    pass"


def _tool_action(rng: random.Random) -> str:
    kind = rng.randrange(100)
    if kind < 15:
        return _text(rng, rng.randrange(0, 200))
    if kind < 25:
        depth = rng.randrange(1, 5000)
        return rng.choice(["[", "{\"a\":"]) * depth + "1" + rng.choice(["]", "}"]) * depth
    call: Any = {"name": rng.choice(_API_NAMES), "arguments": _value(rng) if kind < 45 else {
        k: _value(rng) for k in rng.sample(["access_token", "username", "password", "title", "content", "app_name",
                                           "api_name", "page_index"], rng.randrange(0, 4))}}
    if kind < 55:
        call = {"function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
    if kind < 60:
        call = [call] * rng.randrange(0, 3)
    text = json.dumps(call, ensure_ascii=rng.random() < 0.5)
    if kind < 70:
        cut = rng.randrange(len(text) + 1)
        text = text[:cut] + _text(rng, rng.randrange(0, 5)) + text[cut:]
    return text


def fuzz_actions(n: int, action_mode: str, seed: int = 0) -> list[str]:
    """``n`` seeded hostile actions for ``action_mode`` ("code" or "tool").

    Example:
        >>> a = fuzz_actions(3, "tool", seed=1)
        >>> a == fuzz_actions(3, "tool", seed=1), len(a)
        (True, 3)
    """
    if action_mode not in ("code", "tool"):
        raise ValueError(f"action_mode must be 'code' or 'tool', got {action_mode!r}")
    rng = random.Random(seed)
    make = _code_action if action_mode == "code" else _tool_action
    return [make(rng) for _ in range(n)]


def fuzz_env(env: Any, actions: list[str], episode_steps: int = 40) -> dict[str, Any]:
    """Step ``env`` through ``actions`` (a new episode every ``episode_steps`` or when one ends).

    Returns counts: ``steps``, ``exceptions`` (raised out of ``step()``), ``outside_space``
    (observations not in ``observation_space``), ``faults`` (by kind) and the first few failures.
    """
    out: dict[str, Any] = {"steps": 0, "exceptions": 0, "outside_space": 0, "faults": {}, "examples": []}
    env.reset(options={"index": 0})
    for i, action in enumerate(actions):
        try:
            obs, _, terminated, truncated, info = env.step(action)
        except Exception as e:  # noqa: BLE001 - counting them is the point
            out["exceptions"] += 1
            if len(out["examples"]) < 5:
                out["examples"].append((action[:200], f"{type(e).__name__}: {e}"[:300]))
            env.reset(options={"index": i % 5})
            continue
        out["steps"] += 1
        if obs not in env.observation_space:
            out["outside_space"] += 1
            if len(out["examples"]) < 5:
                out["examples"].append((action[:200], repr(obs[:200])))
        if info.get("fault"):
            out["faults"][info["fault"]] = out["faults"].get(info["fault"], 0) + 1
        if terminated or truncated or (i + 1) % episode_steps == 0:
            env.reset(options={"index": (i + 1) % 5})
    return out
