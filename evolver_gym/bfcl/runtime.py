"""Glue to the package's executor and checker: live instances under names of their own, and the verdict.

* ``unique_model_name`` - a model name no other episode in this process uses.
* ``LiveEntry`` - the simulated API instances of one entry for one episode (BFCL's
  ``execute_multi_turn_func_call``), removed from the executor's globals on ``close``.
* ``run_checker`` - ``multi_turn_checker`` on decoded calls, as ``bfcl-eval``'s eval runner calls it.
* ``call_deadline`` - a wall-clock limit on a block of simulated calls (main thread only).

The executor keeps live instances in its module's globals under ``<model_name>_<entry id>_<class>_instance``
and reuses one when the name exists: two environments (or two episodes of the same entry) in one process
must use distinct model names, and names must be removed when an episode ends, or instances leak and a
later episode would start from an earlier one's end state. Every episode here gets a fresh name from
:func:`unique_model_name` and removes its names (the checker's ``_eval`` and ``_ground_truth_eval`` ones
too) when it is done.

Example:
    >>> from evolver_gym.bfcl.package import entry_by_id
    >>> live = LiveEntry(entry_by_id("multi_turn_base_0"))
    >>> live.execute(["cd(folder='document')", "pwd()"])[1]
    '{"current_working_directory": "/workspace/document"}'
    >>> live.close()
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import threading
from collections.abc import Iterator
from typing import Any

from .package import checker, decoder, executor

__all__ = ["CallTimeout", "LiveEntry", "call_deadline", "forget_model_name", "official_verdict", "run_checker",
           "unique_model_name"]

_COUNTER = itertools.count()


def unique_model_name(prefix: str = "evolver") -> str:
    """``<prefix><pid>x<n>``: distinct for every call in this process (and across forked workers)."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", prefix):
        raise ValueError(f"model name prefix must be letters and digits, starting with a letter; got {prefix!r}")
    return f"{prefix}{os.getpid()}x{next(_COUNTER)}"


def _instance_prefix(model_name: str) -> str:
    return re.sub(r"[-./:]", "_", f"{model_name}_")


def forget_model_name(model_name: str) -> int:
    """Remove every live instance the executor holds under ``model_name`` (and its checker suffixes)."""
    namespace = vars(executor())
    prefix = _instance_prefix(model_name)
    stale = [k for k in namespace if k.startswith(prefix) and k.endswith("_instance")]
    for key in stale:
        del namespace[key]
    return len(stale)


class CallTimeout(BaseException):
    """Raised inside a simulated call that outlived its deadline (a ``BaseException``: API code that
    catches ``Exception`` does not swallow it)."""


@contextlib.contextmanager
def call_deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`CallTimeout` in the block once ``seconds`` of wall time have passed.

    Uses ``SIGALRM`` with a repeating timer, so only in the main thread of a process (vector-env
    workers and the training process qualify); elsewhere, or with ``seconds`` None, it does nothing.
    """
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise CallTimeout(f"simulated calls ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _is_long_context(entry_id: str) -> bool:
    category = entry_id.rsplit("_", 1)[0]
    return "long_context" in category or "composite" in category  # the executor's own test


class LiveEntry:
    """The live instances of one entry for one episode.

    Args:
        entry: The BFCL entry (``id``, ``initial_config``, ``involved_classes``).
        model_name: The name its instances live under (default: a fresh :func:`unique_model_name`).
    """

    def __init__(self, entry: dict[str, Any], model_name: str | None = None):
        for key in ("id", "initial_config", "involved_classes"):
            if key not in entry:
                raise ValueError(f"a BFCL entry needs {key!r}; got keys {sorted(entry)}")
        self.entry = entry
        self.model_name = model_name or unique_model_name()
        self.long_context = _is_long_context(entry["id"])
        _, self.instances = self._run([])
        self.methods = sorted({name for inst in self.instances.values() for name in dir(inst)
                               if not name.startswith("_") and callable(getattr(inst, name))})

    def _run(self, calls: list[str]) -> tuple[list[str], dict[str, Any]]:
        return executor().execute_multi_turn_func_call(
            func_call_list=list(calls), initial_config=self.entry["initial_config"],
            involved_classes=self.entry["involved_classes"], model_name=self.model_name,
            test_entry_id=self.entry["id"], long_context=self.long_context, is_evaL_run=False)

    def execute(self, calls: list[str]) -> list[str]:
        """Run ``calls`` (decoded call strings) on the live instances; their results, as BFCL returns them."""
        results, self.instances = self._run(calls)
        return results

    def state(self) -> dict[str, dict[str, Any]]:
        """Class -> public attributes (what the checker compares)."""
        return {name: {k: v for k, v in vars(inst).items() if not k.startswith("_")}
                for name, inst in self.instances.items()}

    def close(self) -> None:
        """Remove this episode's instances from the executor's globals."""
        forget_model_name(self.model_name)


def run_checker(entry: dict[str, Any], ground_truth: list[list[str]], decoded_turns: list[list[list[str]]],
                model_name: str | None = None) -> dict[str, Any]:
    """``multi_turn_checker`` on ``decoded_turns`` (turn -> step -> calls), as the eval runner calls it.

    Returns the checker's dict (``valid`` plus, when invalid, ``error_type``, ``error_message`` and
    ``details``). When there are fewer decoded turns than ground-truth turns (the model was forced to
    quit), the verdict is the runner's ``multi_turn:force_terminated`` without running the checker. The
    instances the replay created are removed afterwards.
    """
    if len(decoded_turns) != len(ground_truth):
        return {"valid": False, "error_type": "multi_turn:force_terminated",
                "error_message": f"Model was force-terminated during inference phase. The length of the model "
                                 f"result turns ({len(decoded_turns)}) does not match the length of the ground "
                                 f"truth turns ({len(ground_truth)})."}
    name = model_name or unique_model_name("check")
    category = entry["id"].rsplit("_", 1)[0]
    try:
        return dict(checker().multi_turn_checker(decoded_turns, ground_truth, entry, category, name))
    finally:
        forget_model_name(name)


def official_verdict(entry: dict, truth: list[list[str]], raw_turns: list[list[str]]) -> bool:
    """``bfcl-eval``'s verdict on an inference result (turn -> step -> raw reply), computed the way its eval
    runner's ``_evaluate_single_multi_turn_entry`` does: turn count (``force_terminated``), each reply
    decoded by ``default_decode_execute_prompting`` (failed or empty decodes skipped), ``multi_turn_checker``.
    Independent of the env's own bookkeeping, for fidelity checks. Replies are decoded unguarded: use it on
    trusted replies only (oracles, seeded callers), never on model output."""
    if len(raw_turns) != len(truth):
        return False  # multi_turn:force_terminated
    decode = decoder().default_decode_execute_prompting
    decoded = []
    for turn in raw_turns:
        steps = []
        for reply in turn:
            try:
                calls = decode(reply, has_tool_call_tag=False)
            except Exception:
                continue
            if executor().is_empty_execute_response(calls):
                continue
            steps.append(calls)
        decoded.append(steps)
    name = unique_model_name("official")
    try:
        return bool(checker().multi_turn_checker(decoded, truth, entry, entry["id"].rsplit("_", 1)[0], name)["valid"])
    finally:
        forget_model_name(name)
