"""The installed ``bfcl-eval`` package: its multi-turn data, simulated API classes, decoder and checker.

* ``require_package`` - the package's folder, or :class:`BFCLUnavailable` saying how to install it.
* ``entries`` / ``ground_truth`` / ``function_docs`` - the four multi-turn categories as BFCL loads them.
* ``checker`` / ``executor`` / ``decoder`` - the package's own modules (``multi_turn_checker``,
  ``multi_turn_utils``, ``model_handler.utils``), imported as dependencies.

``bfcl-eval`` pins old versions of many packages (numpy 1.26.4, hosted-LLM SDKs) that none of this
needs, so it is installed without its dependency tree::

    pip install --no-deps bfcl-eval==2026.3.23 mpmath

The simulated classes and the checker import with the standard library alone (MathAPI needs ``mpmath``).
The decoder lives in ``bfcl_eval.model_handler.utils``, whose module also imports the Java and JavaScript
parsers (``tree_sitter``) and ``tenacity`` for its hosted-API retries; neither is used by the Python
decoder. When they are absent, :func:`decoder` imports the module with stand-ins for exactly those
names (each raises if ever called) and removes the stand-ins from ``sys.modules`` right after, so
nothing else in the process sees them. Importing ``bfcl_eval.utils`` creates ``result/``, ``score/`` and
``.file_locks/`` under ``BFCL_PROJECT_ROOT``; when that variable is unset it is set to
``~/.cache/evolver/bfcl`` first, so nothing is written into ``site-packages``.

Example:
    >>> from evolver_gym.bfcl.package import entries, ground_truth
    >>> first = entries("base")[0]
    >>> first["id"], first["involved_classes"]
    ('multi_turn_base_0', ['TwitterAPI', 'GorillaFileSystem'])
    >>> ground_truth("base")[first["id"]][0][0]
    "cd(folder='document')"
"""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

__all__ = ["BFCLUnavailable", "CATEGORIES", "VERSION", "bfcl_available", "category_of", "checker", "decoder",
           "entries", "entry_by_id", "executor", "function_docs", "ground_truth", "populate", "require_package",
           "step_limit"]

#: The multi-turn categories, 200 entries each.
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
#: The version the data, the fidelity figures and the tests were measured with.
VERSION = "2026.3.23"
_FILE_PREFIX = "BFCL_v4_multi_turn_"
INSTALL_HINT = f"pip install --no-deps bfcl-eval=={VERSION} mpmath"


class BFCLUnavailable(ImportError):
    """``bfcl-eval`` is not installed (or lacks a file this module reads)."""


def bfcl_available() -> bool:
    """Whether ``bfcl-eval`` is installed (without importing it)."""
    try:
        return importlib.util.find_spec("bfcl_eval") is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def require_package() -> Path:
    """The folder of the installed ``bfcl_eval`` package; :class:`BFCLUnavailable` when it is missing."""
    spec = importlib.util.find_spec("bfcl_eval") if bfcl_available() else None
    if spec is None or not spec.submodule_search_locations:
        raise BFCLUnavailable(f"the BFCL environment needs the bfcl-eval package: {INSTALL_HINT}")
    root = Path(next(iter(spec.submodule_search_locations)))
    if not (root / "data" / f"{_FILE_PREFIX}base.json").is_file():
        raise BFCLUnavailable(f"bfcl-eval at {root} has no multi-turn data ({_FILE_PREFIX}base.json); "
                              f"install the tested version: {INSTALL_HINT}")
    return root


def _check_category(category: str) -> None:
    if category not in CATEGORIES:
        raise ValueError(f"BFCL category must be one of {CATEGORIES}, got {category!r}")


def _read_lines(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@functools.cache
def _entries(category: str) -> tuple[dict[str, Any], ...]:
    _check_category(category)
    return tuple(_read_lines(require_package() / "data" / f"{_FILE_PREFIX}{category}.json"))


def entries(category: str) -> list[dict[str, Any]]:
    """The raw entries of ``category`` in file order (deep copies; no function docs yet)."""
    return copy.deepcopy(list(_entries(category)))


@functools.cache
def _entry_index() -> dict[str, tuple[str, int]]:
    return {e["id"]: (c, i) for c in CATEGORIES for i, e in enumerate(_entries(c))}


def category_of(entry_id: str) -> str:
    """The category of an entry id (``multi_turn_miss_func_3`` -> ``miss_func``)."""
    where = _entry_index().get(entry_id)
    if where is None:
        raise ValueError(f"unknown BFCL multi-turn entry id {entry_id!r}")
    return where[0]


@functools.lru_cache(maxsize=64)
def _populated(entry_id: str) -> dict[str, Any]:
    raw = copy.deepcopy(_entries(category_of(entry_id))[_entry_index()[entry_id][1]])
    return populate(raw)


def populate(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` completed by the package's own loader steps (``populate_test_cases_with_predefined_functions``
    and ``add_language_specific_hint_to_function_doc``, as ``load_dataset_entry`` runs them): ``function``
    holds the docs of the involved classes, a missed function's doc moves to ``missed_function`` under the
    turn it is revealed at. Changes and returns ``entry``."""
    support = decoder_support()
    entry = support.populate_test_cases_with_predefined_functions([entry])[0]
    return support.add_language_specific_hint_to_function_doc([entry])[0]


def entry_by_id(entry_id: str) -> dict[str, Any]:
    """One entry (a deep copy) by its BFCL id, e.g. ``multi_turn_miss_func_3``, as BFCL's inference loads
    it: ``function`` and ``missed_function`` filled with docs."""
    return copy.deepcopy(_populated(entry_id))


@functools.cache
def _ground_truth(category: str) -> dict[str, tuple[tuple[str, ...], ...]]:
    _check_category(category)
    rows = _read_lines(require_package() / "data" / "possible_answer" / f"{_FILE_PREFIX}{category}.json")
    return {r["id"]: tuple(tuple(turn) for turn in r["ground_truth"]) for r in rows}


def ground_truth(category: str) -> dict[str, list[list[str]]]:
    """Entry id -> the ground-truth calls of every turn (BFCL's ``possible_answer``)."""
    return {k: [list(t) for t in v] for k, v in _ground_truth(category).items()}


@functools.cache
def _docs(class_name: str) -> tuple[dict[str, Any], ...]:
    mapping = executor_config().MULTI_TURN_FUNC_DOC_FILE_MAPPING
    if class_name not in mapping:
        raise ValueError(f"unknown BFCL API class {class_name!r}; known: {sorted(mapping)}")
    return tuple(_read_lines(require_package() / "data" / "multi_turn_func_doc" / mapping[class_name]))


def function_docs(class_name: str) -> list[dict[str, Any]]:
    """The function docs (BFCL's JSON schema dicts) of one simulated API class."""
    return copy.deepcopy(list(_docs(class_name)))


@functools.cache
def executor_config() -> types.ModuleType:
    """``bfcl_eval.constants.executable_backend_config`` (class -> module and doc file)."""
    require_package()
    return importlib.import_module("bfcl_eval.constants.executable_backend_config")


@functools.cache
def executor() -> types.ModuleType:
    """``bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils``: runs calls on the live instances."""
    require_package()
    return importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")


@functools.cache
def checker() -> types.ModuleType:
    """``bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker``: the official multi-turn checker."""
    require_package()
    return importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")


def step_limit() -> int:
    """BFCL's per-turn step cap (``MAXIMUM_STEP_LIMIT``: the model is forced to quit past it)."""
    require_package()
    return int(importlib.import_module("bfcl_eval.constants.default_prompts").MAXIMUM_STEP_LIMIT)


def _raiser(what: str, needs: str):
    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise BFCLUnavailable(f"{what} needs {needs}, which is not installed (evolver-gym uses only the "
                              f"Python decoder of bfcl-eval)")
    return unavailable


def _stand_ins() -> dict[str, types.ModuleType]:
    """Modules for the names ``model_handler.utils`` imports but the Python decoder never uses."""
    out: dict[str, types.ModuleType] = {}
    if importlib.util.find_spec("tree_sitter") is None:
        for name, func in (("java_parser", "parse_java_function_call"),
                           ("js_parser", "parse_javascript_function_call")):
            module = types.ModuleType(f"bfcl_eval.model_handler.parser.{name}")
            setattr(module, func, _raiser(func, "tree_sitter"))
            out[module.__name__] = module
    if importlib.util.find_spec("tenacity") is None:
        module = types.ModuleType("tenacity")
        for name in ("retry", "retry_if_exception_message", "retry_if_exception_type", "wait_random_exponential"):
            setattr(module, name, _raiser(f"tenacity.{name}", "tenacity"))
        out["tenacity"] = module
    return out


@functools.cache
def decoder_support() -> types.ModuleType:
    """``bfcl_eval.utils`` (the dataset helpers), imported as :func:`decoder` explains."""
    decoder()
    return sys.modules["bfcl_eval.utils"]


@functools.cache
def decoder() -> types.ModuleType:
    """``bfcl_eval.model_handler.utils``: ``default_decode_execute_prompting``, the system prompt, the
    tool-result format. See the module docstring for the stand-ins used when optional imports are absent."""
    require_package()
    os.environ.setdefault("BFCL_PROJECT_ROOT", str(Path("~/.cache/evolver/bfcl").expanduser()))
    added = {name: mod for name, mod in _stand_ins().items() if name not in sys.modules}
    sys.modules.update(added)
    try:
        return importlib.import_module("bfcl_eval.model_handler.utils")
    except ImportError as exc:
        raise BFCLUnavailable(f"bfcl-eval's decoder does not import here ({exc}); {INSTALL_HINT}") from exc
    finally:
        for name, module in added.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
