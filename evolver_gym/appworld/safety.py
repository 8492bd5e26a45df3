"""Static safety check of agent code before it reaches the sandbox worker.

* ``check_code`` - parse and vet one cell; returns the parsed tree or raises ``UnsafeCodeError``.
* ``UnsafeCodeError`` - the reason a cell was refused.
* ``ALLOWED_MODULES`` / ``FORBIDDEN_NAMES`` - the import allowlist and the names no cell may use.

This is one layer of several: the worker process also runs with restricted builtins, proxied
modules, resource limits and a hard kill from the host. The check refuses imports outside the
allowlist, any dunder name or attribute, attributes starting with ``_``, frame and code
introspection attributes (``gi_frame``, ``f_globals``, ...) and the escape hatches ``open``,
``exec``, ``eval``, ``compile``, ``globals``, ``locals``, ``vars``, ``breakpoint``, ``input``.
"""

from __future__ import annotations

import ast
import warnings

__all__ = ["check_code", "UnsafeCodeError", "ALLOWED_MODULES", "FORBIDDEN_NAMES"]

ALLOWED_MODULES = frozenset(
    {
        "json",
        "re",
        "math",
        "datetime",
        "calendar",
        "itertools",
        "random",
        "collections",
        "functools",
        "copy",
        "statistics",
        "decimal",
        "fractions",
        "heapq",
        "bisect",
        "textwrap",
        "time",
    }
)
FORBIDDEN_NAMES = frozenset(
    {
        "open",
        "exec",
        "eval",
        "compile",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "help",
        "exit",
        "quit",
        "memoryview",
        "type",
        "super",
        "delattr",
        "setattr",
        "classmethod",
        "staticmethod",
        "property",
    }
)
_FORBIDDEN_ATTR_PREFIXES = ("_", "gi_", "cr_", "ag_", "f_", "tb_", "co_", "func_")
# str.format can walk attributes ("{0.__class__}"), so it is refused; f-strings are checked like code
_FORBIDDEN_ATTRS = frozenset({"mro", "format", "format_map", "with_traceback", "im_func", "im_self"})


class UnsafeCodeError(Exception):
    """The cell uses something the sandbox does not allow; the message names it."""


def _bad_name(name: str) -> bool:
    return name.startswith("__") or name in FORBIDDEN_NAMES


def check_code(code: str) -> ast.Module:
    """Parse ``code`` and refuse anything outside the sandbox's language subset.

    Raises:
        SyntaxError: the code does not parse.
        UnsafeCodeError: the code uses a forbidden import, name or attribute.

    Example:
        >>> _ = check_code("x = [s['title'] for s in apis.music.show_liked_songs(access_token=t)]")
        >>> check_code("import os")
        Traceback (most recent call last):
        ...
        evolver_gym.appworld.safety.UnsafeCodeError: import of module 'os' is not allowed; allowed: ...
    """
    with warnings.catch_warnings():  # e.g. SyntaxWarning on "1if": the host's stderr is not the cell's
        warnings.simplefilter("ignore")
        tree = ast.parse(code, filename="<python-input>", mode="exec")
    allowed = ", ".join(sorted(ALLOWED_MODULES))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_MODULES:
                    raise UnsafeCodeError(
                        f"import of module {alias.name!r} is not allowed; allowed: {allowed}"
                    )
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module not in ALLOWED_MODULES:
                raise UnsafeCodeError(
                    f"import from module {node.module!r} is not allowed; allowed: {allowed}"
                )
            for alias in node.names:
                if alias.name == "*" or alias.name.startswith("_"):
                    raise UnsafeCodeError(f"importing {alias.name!r} from {node.module!r} is not allowed")
        elif isinstance(node, ast.Name) and _bad_name(node.id):
            raise UnsafeCodeError(f"use of the name {node.id!r} is not allowed")
        elif isinstance(node, ast.Attribute) and (
            node.attr.startswith(_FORBIDDEN_ATTR_PREFIXES) or node.attr in _FORBIDDEN_ATTRS
        ):
            hint = " (use an f-string instead)" if node.attr.startswith("format") else ""
            raise UnsafeCodeError(f"access to the attribute {node.attr!r} is not allowed{hint}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name.startswith(
            "__"
        ):
            raise UnsafeCodeError(f"defining the dunder name {node.name!r} is not allowed")
        elif isinstance(node, ast.arg) and node.arg.startswith("__"):
            raise UnsafeCodeError(f"the argument name {node.arg!r} is not allowed")
        elif isinstance(node, ast.alias) and node.asname and _bad_name(node.asname):
            raise UnsafeCodeError(f"the alias {node.asname!r} is not allowed")
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
            raise UnsafeCodeError("async code is not supported")
        elif isinstance(node, ast.keyword) and node.arg and node.arg.startswith("__"):
            raise UnsafeCodeError(f"the keyword {node.arg!r} is not allowed")
    return tree
