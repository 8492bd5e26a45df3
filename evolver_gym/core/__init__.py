"""The shared core: task and trajectory records, text spaces, seeding, language-model clients."""

from .seeding import derive_seed, make_random, make_rng, seed_everything
from .spaces import UnicodeText
from .task import Task
from .trajectory import Step, TokenRecord, Trajectory, read_jsonl, read_tasks, record_episode, write_jsonl

__all__ = [
    "Step",
    "Task",
    "TokenRecord",
    "Trajectory",
    "UnicodeText",
    "derive_seed",
    "make_random",
    "make_rng",
    "read_jsonl",
    "read_tasks",
    "record_episode",
    "seed_everything",
    "write_jsonl",
]
