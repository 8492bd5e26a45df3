"""Checkpoints a run can always resume from: a completion record per checkpoint, and the search for the last
complete one.

* ``CheckpointCompletion`` - a ``TrainerCallback`` that, after every other ``on_save`` (the plugin state
  included), writes ``checkpoint_complete.json`` into the new ``checkpoint-N`` folder, atomically (a
  temporary file, then a rename): the name and size of every file of the checkpoint. It removes a stale
  record before a folder is saved again, and deletes old checkpoints (``save_total_limit``) only after the
  new one is complete, so a kill at any point of a save leaves the previous complete checkpoint in place.
* ``checkpoint_problem`` - why a ``checkpoint-N`` folder cannot be resumed from, or ``None``.
* ``last_complete_checkpoint`` - the newest complete checkpoint of an output folder; incomplete ones
  (a save that was killed) are skipped, each with one line on stderr.
* ``resolve_resume`` - what ``resume_from_checkpoint`` names: ``True``/``"true"`` -> the last complete
  checkpoint (or ``None``: start at step 0, said on stderr), a path -> that checkpoint if it is complete,
  else a ``ConfigError`` naming it.

Checkpoints written before the completion record existed (no run folder has a record) are judged by
their ``trainer_state.json``, which the trainer writes after the weights, the optimizer and the RNG state.

Example:
    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(run, "checkpoint-5"))  # a save killed before it wrote anything else
    >>> print(last_complete_checkpoint(run, report=print))
    skipping checkpoint-5: incomplete (no trainer_state.json: the save did not finish)
    None
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

from .errors import ConfigError

START_DIR = "start"  # <output_dir>/start: a policy built from a config (tiny), saved before RL

__all__ = ["COMPLETE_FILE", "CheckpointCompletion", "checkpoint_problem", "list_checkpoints",
           "last_complete_checkpoint", "resolve_resume", "write_completion_record"]

COMPLETE_FILE = "checkpoint_complete.json"
TRAINER_STATE = "trainer_state.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0", "none", ""}


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def list_checkpoints(output_dir: str) -> list[tuple[int, str]]:
    """``(step, path)`` of every ``checkpoint-N`` folder of ``output_dir``, oldest first."""
    if not os.path.isdir(output_dir):
        return []
    found = []
    for name in os.listdir(output_dir):
        match = _CHECKPOINT.match(name)
        path = os.path.join(output_dir, name)
        if match and os.path.isdir(path):
            found.append((int(match.group(1)), path))
    return sorted(found)


def _files(folder: str) -> dict[str, int]:
    """Relative path -> size of every file under ``folder`` but the completion record (and its temp file)."""
    sizes = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            if rel in (COMPLETE_FILE, COMPLETE_FILE + ".tmp"):
                continue
            sizes[rel.replace(os.sep, "/")] = os.path.getsize(path)
    return sizes


def write_completion_record(folder: str, step: int) -> str:
    """Write ``checkpoint_complete.json`` (each file's size) into ``folder`` atomically; returns its path."""
    record = {"global_step": int(step), "files": _files(folder)}
    tmp = os.path.join(folder, COMPLETE_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    final = os.path.join(folder, COMPLETE_FILE)
    os.replace(tmp, final)
    return final


def _records_used(output_dir: str) -> bool:
    return any(os.path.exists(os.path.join(p, COMPLETE_FILE)) for _, p in list_checkpoints(output_dir))


def checkpoint_problem(folder: str, *, legacy: bool | None = None) -> str | None:
    """Why ``folder`` is not a complete checkpoint, or ``None`` when it is.

    With a completion record, every file it lists must be there with its recorded size. Without one,
    ``legacy`` (default: no sibling checkpoint has a record) accepts a folder whose ``trainer_state.json``
    is whole JSON; otherwise the save did not finish.
    """
    if not os.path.isdir(folder):
        return "no such folder"
    record_path = os.path.join(folder, COMPLETE_FILE)
    if os.path.exists(record_path):
        try:
            with open(record_path, encoding="utf-8") as fh:
                record = json.load(fh)
            files = dict(record["files"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f"unreadable {COMPLETE_FILE} ({exc})"
        for rel, size in sorted(files.items()):
            path = os.path.join(folder, rel)
            if not os.path.isfile(path):
                return f"{rel} is missing"
            if os.path.getsize(path) != size:
                return f"{rel} has {os.path.getsize(path)} bytes, {size} when the save finished"
        return None
    if legacy is None:
        legacy = not _records_used(os.path.dirname(os.path.abspath(folder)))
    state_path = os.path.join(folder, TRAINER_STATE)
    if not os.path.isfile(state_path):
        return f"no {TRAINER_STATE}: the save did not finish"
    if not legacy:
        return f"no {COMPLETE_FILE}: the save did not finish"
    try:
        with open(state_path, encoding="utf-8") as fh:
            json.load(fh)
    except (OSError, ValueError) as exc:
        return f"{TRAINER_STATE} is cut short ({' '.join(str(exc).split())})"
    return None


def last_complete_checkpoint(output_dir: str, report: Callable[[str], None] = _stderr) -> str | None:
    """The newest complete ``checkpoint-N`` of ``output_dir``, or ``None``; each newer incomplete one is
    skipped with a line to ``report``."""
    checkpoints = list_checkpoints(output_dir)
    legacy = not _records_used(output_dir)
    for _, path in reversed(checkpoints):
        problem = checkpoint_problem(path, legacy=legacy)
        if problem is None:
            return path
        report(f"skipping {os.path.basename(path)}: incomplete ({problem})")
    return None


def resolve_resume(value: Any, output_dir: str, report: Callable[[str], None] = _stderr) -> str | None:
    """The checkpoint folder ``resume_from_checkpoint`` names, or ``None`` to start at step 0.

    ``True`` (or the strings ``true``/``yes``/``1``, any case) means the last complete checkpoint of
    ``output_dir``; when there is none the run starts at step 0 and says so. ``False``/``None``/``""``
    means no resume. Anything else is a folder that must hold a complete checkpoint.

    Example:
        >>> resolve_resume("false", "runs/x") is None
        True
    """
    if value is None or value is False:
        return None
    if value is True or (isinstance(value, str) and value.strip().lower() in _TRUE):
        found = last_complete_checkpoint(output_dir, report)
        if found is None:
            report(f"resume_from_checkpoint: no complete checkpoint in {output_dir!r}; starting at step 0")
        else:
            report(f"resume_from_checkpoint: resuming from {found}")
        return found
    if isinstance(value, str) and value.strip().lower() in _FALSE:
        return None
    path = os.path.expanduser(str(value))
    if not os.path.isdir(path):
        raise ConfigError(f"resume_from_checkpoint: no such checkpoint folder {value!r}")
    problem = checkpoint_problem(path)
    if problem is not None:
        older = last_complete_checkpoint(os.path.dirname(os.path.abspath(path)), report=lambda _: None)
        hint = f"; the last complete one is {older!r}" if older else ""
        raise ConfigError(f"resume_from_checkpoint: {value!r} is incomplete ({problem}){hint}")
    return path


class CheckpointCompletion(TrainerCallback):
    """Marks each finished checkpoint complete, and rotates old ones only after that.

    Add it after every callback whose ``on_save`` writes into the checkpoint (the trainer adds it last).
    It takes over ``save_total_limit`` for the run (the trainer's own rotation would delete the previous
    checkpoint before the new one is complete) and puts it back when training ends.

    Example:
        >>> CheckpointCompletion().limit is None
        True
    """

    def __init__(self) -> None:
        self.limit: int | None = None

    @staticmethod
    def _folder(args: Any, state: Any) -> str:
        return os.path.join(args.output_dir, f"checkpoint-{state.global_step}")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if args.save_total_limit:
            self.limit, args.save_total_limit = args.save_total_limit, None

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.limit is not None:
            args.save_total_limit, self.limit = self.limit, None

    def _before_save(self, args: Any, state: Any, control: Any) -> None:
        # A folder saved again (a resumed run repeating a step) must not keep the old record while it is rewritten.
        if control.should_save and args.should_save:
            stale = os.path.join(self._folder(args, state), COMPLETE_FILE)
            if os.path.exists(stale):
                os.remove(stale)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._before_save(args, state, control)

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._before_save(args, state, control)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not args.should_save:
            return
        folder = self._folder(args, state)
        if not os.path.isdir(folder):
            return
        write_completion_record(folder, state.global_step)
        if self.limit:
            self._rotate(args.output_dir, folder, state)

    def _rotate(self, output_dir: str, newest: str, state: Any) -> None:
        """Delete the oldest complete checkpoints beyond the limit (never the newest or the best)."""
        keep = {os.path.abspath(newest)}
        if getattr(state, "best_model_checkpoint", None):
            keep.add(os.path.abspath(state.best_model_checkpoint))
        complete = [p for _, p in list_checkpoints(output_dir) if checkpoint_problem(p, legacy=False) is None]
        extra = len(complete) - max(int(self.limit or 0), len(keep))
        for path in complete:
            if extra <= 0:
                break
            if os.path.abspath(path) in keep:
                continue
            os.remove(os.path.join(path, COMPLETE_FILE))  # first: a half-deleted folder is never "complete"
            shutil.rmtree(path, ignore_errors=True)
            extra -= 1
