"""Checks of how a run was launched.

* ``check_distributed_launch`` - refuse a multi-process launch that did not set up distributed training.

``accelerate launch`` with ``num_processes: 2`` starts two processes through ``torch.distributed.run``
(``WORLD_SIZE=2``), but each sets up distributed training only where accelerate finds a backend for it:
CUDA devices, or CPUs when ``ACCELERATE_USE_CPU=true`` (gloo). Without either, each process silently
becomes a single-process run (``DistributedType.NO``): both train their own unsynchronised copy of the
policy over the same output folder and exit 0. This check turns that into an error naming the fix.
"""

from __future__ import annotations

import os

from .errors import ConfigError

__all__ = ["check_distributed_launch"]


def _world_size() -> int:
    raw = os.environ.get("WORLD_SIZE", "1") or "1"
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"WORLD_SIZE must be an integer, got {raw!r}") from None


def check_distributed_launch() -> None:
    """Raise ``ConfigError`` when this is one of several launched processes (``WORLD_SIZE`` > 1) but
    accelerate's process state is not distributed over all of them.

    Does nothing in a plain single-process run (no ``WORLD_SIZE``, or 1).

    Example:
        >>> import os
        >>> "WORLD_SIZE" in os.environ or check_distributed_launch() is None
        True
    """
    world = _world_size()
    if world <= 1:
        return
    from accelerate import PartialState

    state = PartialState()
    if state.num_processes == world:
        return
    import torch

    use_cpu = os.environ.get("ACCELERATE_USE_CPU", "")
    raise ConfigError(
        f"this process is one of WORLD_SIZE={world} launched processes, but accelerate set up "
        f"{state.num_processes} process(es) with distributed_type {state.distributed_type.value} "
        f"(ACCELERATE_USE_CPU={use_cpu!r}, {torch.cuda.device_count()} CUDA devices visible): each would train "
        f"its own unsynchronised copy. "
        f"On CPUs launch with ACCELERATE_USE_CPU=true (configs/accelerate/multi_cpu.yaml); on GPUs check that "
        f"CUDA devices are visible")
