"""Self-navigating: experience distilled from past episodes, retrieved and injected into prompts.

* ``Experience`` - the record (``when_to_use`` embedded, ``content``, provenance, use/win counts).
* ``Embedder`` - offline sentence embeddings (the packaged all-MiniLM-L6-v2 by default).
* ``ExperiencePool`` / ``PoolConfig`` / ``Hit`` - the pool on Milvus (milvus-lite file or server).
* ``OfflineSummarizer`` / ``LLMSummarizer`` - trajectories to experiences, without or with a model.
* ``ExperienceContext`` - the Gymnasium wrapper writing ``info["experience"]``.
* ``ExperiencePayload`` - the typed ``info["experience"]`` record.
* ``NavigationConfig`` - the mechanism's training settings (``plugin.py``: ``attach``, ``MECHANISM``).
* ``build_pool`` - warm-up from rollouts of training tasks.
"""

from .embedder import Embedder, default_model_path
from .plugin import NavigationConfig
from .pool import ExperiencePool, Hit, PoolConfig
from .record import Experience
from .summarize_llm import LLMSummarizer, parse_insights
from .summarize_offline import OfflineSummarizer
from .warmup import build_pool, oracle_policy, random_policy
from .wrapper import (
    EXP_CLOSE,
    EXP_OPEN,
    LEARN_SPLITS,
    ExperienceContext,
    ExperiencePayload,
    Summarizer,
    format_block,
    is_training_task,
    strip_experience,
    summarize_into_pool,
)

__all__ = [
    "EXP_CLOSE",
    "EXP_OPEN",
    "Embedder",
    "Experience",
    "ExperienceContext",
    "ExperiencePayload",
    "ExperiencePool",
    "Hit",
    "LEARN_SPLITS",
    "LLMSummarizer",
    "NavigationConfig",
    "OfflineSummarizer",
    "PoolConfig",
    "Summarizer",
    "build_pool",
    "default_model_path",
    "format_block",
    "is_training_task",
    "oracle_policy",
    "parse_insights",
    "random_policy",
    "strip_experience",
    "summarize_into_pool",
]
