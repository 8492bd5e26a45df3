"""JSON tool-call action mode: one API call per action, for models that call tools.

* ``tool_schemas`` - OpenAI-style function schemas (``app__api``) of every API.
* ``parse_tool_call`` - ``(app, api, kwargs)`` from ``{"name", "arguments"}`` or OpenAI's
  ``{"function": {"name", "arguments": "<json>"}}`` (also wrapped in a one-element list).
"""

from __future__ import annotations

import json
from typing import Any

from .apis import REGISTRY

__all__ = ["tool_schemas", "parse_tool_call"]

_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "list": "array",
}


def tool_schemas() -> list[dict[str, Any]]:
    out = []
    for app, specs in REGISTRY.items():
        for name, spec in specs.items():
            props, required = {}, []
            for p in spec.params:
                schema: dict[str, Any] = {"description": p.description}
                if p.type in _JSON_TYPES:
                    schema["type"] = _JSON_TYPES[p.type]
                if p.type == "list":
                    schema["items"] = {}
                props[p.name] = schema
                if p.required:
                    required.append(p.name)
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": f"{app}__{name}",
                        "description": spec.description,
                        "parameters": {"type": "object", "properties": props, "required": required},
                    },
                }
            )
    return out


def parse_tool_call(action: str) -> tuple[str, str, dict[str, Any]]:
    """Parse one tool call; raises ``ValueError`` naming what is wrong."""
    try:
        data = json.loads(action)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f'the action is not JSON ({e}); send {{"name": "app__api", "arguments": {{...}}}}'
        ) from e
    except RecursionError:
        raise ValueError("the action's JSON is nested too deeply") from None
    if isinstance(data, list):
        if len(data) != 1:
            raise ValueError(f"send exactly one tool call per action, got {len(data)}")
        data = data[0]
    if not isinstance(data, dict):
        raise ValueError(f"a tool call is a JSON object, got {type(data).__name__}")
    if isinstance(data.get("function"), dict):
        data = data["function"]
    name, args = data.get("name"), data.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as e:
            raise ValueError(f"arguments of {name!r:.100} are not valid JSON: {e}") from e
        except RecursionError:
            raise ValueError(f"arguments of {name!r:.100} are nested too deeply") from None
    if not isinstance(name, str) or not name:
        raise ValueError(f"the tool call has no 'name': {action[:200]!r}")
    if not isinstance(args, dict):
        raise ValueError(f"'arguments' must be an object, got {type(args).__name__}")
    sep = "__" if "__" in name else "."
    if sep not in name:
        raise ValueError(f"tool name {name!r:.100} must look like 'app__api'")
    app, api = name.split(sep, 1)
    return app, api, args
