"""What a cell can reach at all, checked structurally, and the audit gate behind it.

``test_no_reachable_helper_takes_attribute_names_or_code`` walks every value a cell reaches by
public names (its builtins, ``apis``, the allowed modules as the worker exports them, their classes
and those classes' public attributes) and reads the source of each pure-Python function found: a
call of ``getattr``/``setattr``/``delattr``/``hasattr`` with a name that is not a literal, or of
``eval``/``exec``/``compile``/``__import__``/``vars``, is a route around the syntax check (the
``functools.update_wrapper(..., updated=('__globals__',))`` escape was one). Each one found must be
on the reviewed list below, with the reason it is safe; a new stdlib version or a new allowed module
that brings another fails here. The scan sees direct uses only: a helper that reaches ``eval``
through another module (``functools.singledispatch`` through ``typing``) is caught by the audit
gate and by the escapes in ``test_language_escapes.py``.

The audit gate (``AuditGate`` in ``_worker.py``) is tested with cells that already hold the real
builtins but run with the gate armed: they stand for a route the exports missed.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

import pytest

from evolver_gym.appworld import _worker

from .conftest import sandbox_answers

# function qualname -> why its dynamic attribute access or code evaluation is not a route
REVIEWED = {
    "collections.namedtuple": "evaluates a fixed constructor template over field names it checked to be "
    "identifiers, in a namespace with empty builtins; reads its caller's module name from the frame",
    "functools.total_ordering": "getattr/setattr over the fixed method names of its own table",
    "make_builtins.<locals>.safe_getattr": "the guard itself: refuses the names the syntax check refuses",
    "make_builtins.<locals>.safe_hasattr": "the guard itself: refuses the names the syntax check refuses",
    "UserString.format": "reached only as the attribute 'format', which the syntax check and the guard refuse",
    "UserString.format_map": "reached only as the attribute 'format_map', refused like 'format'",
}
_NAMED = {"getattr", "setattr", "delattr", "hasattr"}
_CODE = {"eval", "exec", "compile", "__import__", "vars", "globals", "locals"}


def _cell_roots() -> dict[str, object]:
    modules = {name: _worker.cell_module(name) for name in _worker._SAFE_MODULES}
    worker = _worker.Worker(None, {}, modules)
    roots = {f"builtins.{k}": v for k, v in worker.ns["__builtins__"].items()}
    roots["apis"] = worker.ns["apis"]
    roots.update({name: mod for name, mod in modules.items()})
    return roots


def _reachable_functions() -> dict[str, tuple[str, types.FunctionType]]:
    found: dict[str, tuple[str, types.FunctionType]] = {}
    seen: set[int] = set()
    stack = list(_cell_roots().items())
    while stack:
        path, obj = stack.pop()
        if id(obj) in seen or path.count(".") > 6:
            continue
        seen.add(id(obj))
        fn = getattr(obj, "__func__", obj)
        if isinstance(fn, types.FunctionType):
            found.setdefault(f"{fn.__module__}.{fn.__qualname__}", (path, fn))
        if isinstance(obj, (type, types.SimpleNamespace)) or not isinstance(obj, (types.FunctionType, types.MethodType,
                                                                                   types.BuiltinFunctionType)):
            for name in dir(obj):
                if name.startswith("_"):
                    continue
                try:
                    value = getattr(obj, name)
                except Exception:
                    continue
                if not isinstance(value, (int, float, str, bytes, bool, type(None))):
                    stack.append((f"{path}.{name}", value))
    return found


def _dynamic_uses(fn: types.FunctionType) -> list[str]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return []
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in _NAMED and (len(node.args) < 2 or not isinstance(node.args[1], ast.Constant)):
                uses.append(f"{name} with a computed name (line {node.lineno})")
            elif name in _CODE:
                uses.append(f"{name} (line {node.lineno})")
        elif isinstance(node, ast.Attribute) and node.attr in ("_getframe", "attrgetter", "methodcaller"):
            uses.append(f"{node.attr} (line {node.lineno})")
    return uses


def test_no_reachable_helper_takes_attribute_names_or_code():
    functions = _reachable_functions()
    assert len(functions) > 100  # the walk reaches the modules' Python code
    offending = {}
    for qualname, (path, fn) in sorted(functions.items()):
        uses = _dynamic_uses(fn)
        short = qualname.split(".", 1)[1] if qualname.startswith(("_worker.", "evolver_gym.")) else qualname
        key = next((k for k in REVIEWED if qualname.endswith(k) or short.endswith(k)), None)
        if uses and key is None:
            offending[path] = (qualname, uses)
    assert not offending, offending


@pytest.mark.parametrize("name", ["update_wrapper", "wraps", "singledispatch", "singledispatchmethod",
                                  "cached_property", "WRAPPER_ASSIGNMENTS"])
def test_functools_reflection_helpers_are_not_exported(name):
    assert not hasattr(_worker.cell_module("functools"), name)


def test_everyday_functools_stays(sandbox):
    code = (
        "import functools\n@functools.lru_cache(maxsize=None)\n"
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "print(fib(30), functools.reduce(lambda a, b: a + b, [1, 2, 3]), functools.partial(max, 0)(-5))\n"
        "print(sorted([3, 1, 2], key=functools.cmp_to_key(lambda a, b: b - a)))"
    )
    assert sandbox.execute(code, lambda *a: (404, {})).output == "832040 6 0\n[3, 2, 1]\n"


GATED = {
    "os.system": "import os\nos.system('true')",
    "open": "open('/etc/hostname')",
    "import": "import wave",
    "compile": "compile('1', 's', 'eval')",
    "sys._current_frames": "import sys\nsys._current_frames()",
    "ctypes.dlopen": "import ctypes\nctypes.CDLL(None)",
    "object.__getattr__": "(lambda: 0).__code__",
    "socket.__new__": "import socket\nsocket.socket()",
}


@pytest.mark.parametrize("event", sorted(GATED))
def test_the_audit_gate_refuses_what_no_cell_needs(sandbox, event):
    out = sandbox._execute_unguarded(GATED[event], lambda *a: (404, {}), audit=True).output
    assert f"PermissionError: the sandbox does not allow {event!r} in a cell" in out, out
    sandbox_answers(sandbox)


@pytest.mark.parametrize("code", ["eval('1 + 1')", "exec('x = 1')", "exec(compile('x = 1', 's', 'exec'))"])
def test_strings_are_never_run_as_code(sandbox, code):
    out = sandbox._execute_unguarded(code, lambda *a: (404, {}), audit=True).output
    assert "PermissionError: the sandbox does not allow 'compile' in a cell" in out, out


def test_the_audit_gate_lets_ordinary_cells_run(sandbox):
    code = (
        "import collections, time, datetime, json, re, random, decimal, statistics\n"
        "P = collections.namedtuple('P', 'a b')\nQ = collections.namedtuple('Q', ['x'])\ntime.sleep(0)\n"
        "d = datetime.datetime.strptime('2024-05-01', '%Y-%m-%d')\n"
        "print(P(1, 2), Q(3), d.year, json.dumps({'a': [1]}), re.sub('a+', 'b', 'caat'), id(P) > 0,\n"
        "      '€'.encode('cp1252'), decimal.Decimal('1.10') + 1, statistics.mean([1, 2]),\n"
        "      random.Random(3).randint(1, 9) > 0)"
    )
    out = sandbox.execute(code, lambda *a: (404, {})).output
    assert out.startswith("P(a=1, b=2) Q(x=3) 2024 {\"a\": [1]} cbt True b'\\x80' 2.10 1.5 True"), out


def test_raw_cells_run_without_the_gate_so_the_os_layers_are_tested_alone(sandbox):
    out = sandbox._execute_unguarded("import gc\nprint(len(gc.get_objects()) > 0)", lambda *a: (404, {})).output
    assert out == "True\n"
