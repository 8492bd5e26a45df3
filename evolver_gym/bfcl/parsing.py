"""Model output -> the calls BFCL would run, through the package's own decoder, with a guard around it.

* ``ParsedAction`` - what one reply is: calls to run, or a hand-back that ends the turn (and why).
* ``parse_action`` - screen the reply, decode it with ``default_decode_execute_prompting``, screen the result.
* ``guard_calls`` - the decoded calls with every call the guard refuses replaced by one that fails cleanly.

BFCL's decoder is not made for hostile text: it ``eval``-s the source of any arithmetic (``BinOp``) and
``lambda`` it meets in an argument, and the executor ``eval``-s each decoded call in a module that has
``importlib``, ``json`` and the builtins in scope. Two screens keep model output from reaching either:

1. Before decoding, the reply is parsed the way the decoder parses it (``ast``); a ``lambda`` or any
   arithmetic other than ``+ - * / // %`` on number literals makes the reply a refused hand-back
   (``action_valid`` false). A reply that does not parse is a hand-back, as in BFCL.
2. After decoding, every call is parsed again. Allowed: a call of a plain name with literal arguments
   (numbers up to ``MAX_NUMBER`` in size, strings, lists, tuples, dicts, sets, ``True``/``False``/``None``).
   A call whose name is a
   public method of the entry's classes runs; a name that resolves to nothing runs too (it fails with
   ``NameError`` exactly as in BFCL). A call of a builtin or of a name in the executor's module
   (``open``, ``importlib.import_module``, an instance name, ...) or with any other syntax is replaced
   by a call of an undefined name, so it fails with an error result and changes nothing, in the episode
   and in the checker's replay alike.

What runs is then only the simulated API methods; their own cost is bounded by the env's per-step
deadline (``evolver_gym.bfcl.runtime.call_deadline``), which interrupts Python code between bytecodes
(a single C-level operation runs to its end; the number bound keeps those short).

Example:
    >>> from evolver_gym.bfcl.parsing import parse_action
    >>> parse_action("[cd(folder='document'), ls()]", {"cd", "ls"}).calls
    ["cd(folder='document')", 'ls()']
    >>> parse_action("I need the file name first.", {"cd"}).handback
    True
    >>> p = parse_action("[cd(folder=(lambda: 1)())]", {"cd"})
    >>> p.handback, p.refused
    (True, True)
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Collection
from dataclasses import dataclass, field

from .package import decoder, executor

__all__ = ["BLOCKED_PREFIX", "MAX_NUMBER", "ParsedAction", "guard_calls", "parse_action"]

#: Refused calls become ``<BLOCKED_PREFIX><name>()``: an undefined name, so ``eval`` fails cleanly.
BLOCKED_PREFIX = "_refused_call_"
#: Numbers beyond this are refused: a simulated method may spend minutes in one uninterruptible big-integer
#: operation on them (``power``); the ground truth's largest is 987,654.
MAX_NUMBER = 10**12
_SAFE_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
_LITERALS = (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Load, ast.keyword)


@dataclass
class ParsedAction:
    """One reply, as BFCL's inference loop sees it.

    ``calls``: the decoded calls (``default_decode_execute_prompting``), empty for a hand-back.
    ``handback``: the reply ends the turn (no calls, or not decodable as calls).
    ``refused``: the pre-decoding screen refused the reply (it would have been ``eval``-ed).
    ``reason``: why a reply is a hand-back or refused (``None`` for calls).
    """

    calls: list[str] = field(default_factory=list)
    handback: bool = False
    refused: bool = False
    reason: str | None = None


def _number(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, complex)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _number(node.operand)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _SAFE_ARITH) and _number(node.left) and _number(node.right)
    return False


def _unsafe_before_decoding(tree: ast.AST) -> str | None:
    """Why the decoder must not see ``tree`` (it would ``eval`` part of it), or None."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            return "a lambda in a call argument"
        if isinstance(node, ast.BinOp) and not _number(node):
            return f"arithmetic other than + - * / // % on number literals: {ast.unparse(node)[:80]}"
    return None


def _decoder_view(text: str) -> str:
    # default_decode_execute_prompting's own preparation: strip fences, wrap in [], strip quotes.
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    return text.strip().strip("'")


def parse_action(text: str, methods: Collection[str]) -> ParsedAction:
    """Decode ``text`` into calls with the package's decoder, or say why it is a hand-back.

    ``methods`` is the set of public method names of the entry's classes (used by :func:`guard_calls`,
    applied here to the decoded calls).
    """
    if not isinstance(text, str):
        return ParsedAction(handback=True, refused=True, reason=f"the action is not a string: {type(text).__name__}")
    try:
        tree = ast.parse(_decoder_view(text), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return ParsedAction(handback=True, reason=f"no function calls decoded ({type(exc).__name__})")
    unsafe = _unsafe_before_decoding(tree)
    if unsafe is not None:
        return ParsedAction(handback=True, refused=True, reason=f"refused: {unsafe}")
    try:
        calls = decoder().default_decode_execute_prompting(text, has_tool_call_tag=False)
    except Exception as exc:  # the decoder's own failures: BFCL ends the turn on them
        return ParsedAction(handback=True, reason=f"no function calls decoded ({type(exc).__name__}: {str(exc)[:120]})")
    if executor().is_empty_execute_response(calls):
        return ParsedAction(handback=True, reason="no function calls")
    return ParsedAction(calls=guard_calls(calls, methods))


def _refusal(call: str, methods: Collection[str], scope: Collection[str]) -> str | None:
    """Why ``call`` (one decoded call string) must not be ``eval``-ed, or None."""
    try:
        tree = ast.parse(call, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None if "(" not in call else "unparsable"  # eval fails on it the same way
    if not isinstance(tree.body, ast.Call):
        return "not a call"
    for node in ast.walk(tree.body):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                return f"calls {ast.unparse(node.func)[:60]}"
            name = node.func.id
            if name not in methods and name in scope:
                return f"calls {name}, which is not an API function"
            if node.args:
                continue  # positional literals are checked below like any argument
        elif isinstance(node, ast.Name):
            if not any(isinstance(p, ast.Call) and p.func is node for p in ast.walk(tree.body)):
                return f"names {node.id}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)) \
                and not isinstance(node.value, bool) and abs(node.value) > MAX_NUMBER:
            return f"a number beyond {MAX_NUMBER:.0e}"
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
                return "an operator"
        elif not isinstance(node, _LITERALS + (ast.unaryop,)):
            return f"contains {type(node).__name__}"
    return None


def guard_calls(calls: list[str], methods: Collection[str]) -> list[str]:
    """``calls`` with each refused call replaced by ``_refused_call_<name>()`` (fails, changes nothing)."""
    scope = set(vars(builtins)) | set(vars(executor()))
    out = []
    for call in calls:
        why = _refusal(call, methods, scope)
        if why is None:
            out.append(call)
        else:
            name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in call.split("(", 1)[0])[:40]
            out.append(f"{BLOCKED_PREFIX}{name}()")
    return out
