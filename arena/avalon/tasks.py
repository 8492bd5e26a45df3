"""Task lists of the Avalon seat views: their splits and how a ``reset`` names a task.

* ``SPLIT_SIZES`` - tasks per split (``train``, ``dev``, ``test``).
* ``resolve_task`` - the task ``reset(options=...)`` asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evolver_gym.core import Task

__all__ = ["SPLIT_SIZES", "resolve_task"]

SPLIT_SIZES = {"train": 1000, "dev": 100, "test": 200}


def resolve_task(options: dict[str, Any], task_of: Callable[[str, int], Task], env_id: str,
                 np_random: Any) -> Task:
    """The task a ``reset`` asks for: ``options["task"]`` (a Task or its dict), ``options["task_id"]``
    (``<env_id>/<split>/<index>``), or ``split`` (default ``train``) and ``index`` (default: drawn from
    ``np_random``); ``task_of(split, index)`` builds a task of the env's lists."""
    if "task" in options:
        task = options["task"]
        return task if isinstance(task, Task) else Task.from_dict(task)
    if "task_id" in options:
        tid, prefix = str(options["task_id"]), f"{env_id}/"
        split, _, index = tid[len(prefix):].rpartition("/") if tid.startswith(prefix) else ("", "", "")
        if split not in SPLIT_SIZES or not index.isdigit():
            raise ValueError(f"unknown task_id {tid!r}; expected '{env_id}/<split>/<index>'")
        return task_of(split, int(index))
    split = options.get("split", "train")
    if split not in SPLIT_SIZES:
        raise ValueError(f"unknown split {split!r}; splits: {sorted(SPLIT_SIZES)}")
    index = options.get("index")
    if index is None:
        index = int(np_random.integers(SPLIT_SIZES[split]))
    return task_of(split, int(index))
