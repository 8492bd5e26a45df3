"""Self-questioning: the environment proposes, checks and curates its own training tasks.

* ``TaskPool`` - persistent, resumable task store with provenance and pass-rate history.
* ``Curriculum``, ``CurriculumConfig`` - weighted sampling within a target pass-rate band.
* ``Explorer``, ``RandomExplorer``, ``LLMExplorer``, ``CallableExplorer`` - exploration policies.
* ``CodeExplorer``, ``discover_api_docs`` - model-free API exploration of code-as-action envs.
* ``HindsightProposer``, ``LLMProposer``, ``Candidate``, ``parse_task_blocks`` - task proposers.
* ``LexicalDedup``, ``EmbeddingDedup``, ``LeakageGuard``, ``Feasibility``, ``DifficultyEstimate`` - filters.
* ``ReferenceJudge``, ``JudgeResult`` - banded LLM judge for tasks the env cannot check.
* ``Synthesizer``, ``SynthesisConfig``, ``build_synthesizer`` - the explore/propose/filter/admit cycle.
* ``SelfQuestioning`` - the Gymnasium wrapper that draws episodes from the pool and, by default with a pool of
  its own, proposes new tasks itself (``SelfQuestioning(env)``).
* ``QuestioningConfig``, ``QuestioningPayload`` - the mechanism's training settings and its typed
  ``info["questioning"]`` record (``plugin.py``: ``attach``, ``MECHANISM``).
"""

from __future__ import annotations

from .code_explorer import CodeExplorer, discover_api_docs
from .curriculum import Curriculum, CurriculumConfig
from .explorer import CallableExplorer, Explorer, LLMExplorer, RandomExplorer
from .filters import DifficultyEstimate, EmbeddingDedup, Feasibility, LeakageGuard, LexicalDedup, replay
from .judge import JudgeResult, ReferenceJudge, needs_judge
from .plugin import QuestioningConfig, QuestioningPayload
from .pool import TaskPool
from .proposers import Candidate, HindsightProposer, LLMProposer, parse_task_blocks
from .synthesis import SynthesisConfig, Synthesizer, build_synthesizer
from .text import packaged_embedder
from .wrapper import SelfQuestioning

__all__ = [
    "CallableExplorer",
    "Candidate",
    "CodeExplorer",
    "Curriculum",
    "CurriculumConfig",
    "DifficultyEstimate",
    "EmbeddingDedup",
    "Explorer",
    "Feasibility",
    "HindsightProposer",
    "JudgeResult",
    "LLMExplorer",
    "LLMProposer",
    "LeakageGuard",
    "LexicalDedup",
    "RandomExplorer",
    "QuestioningConfig",
    "QuestioningPayload",
    "ReferenceJudge",
    "SelfQuestioning",
    "SynthesisConfig",
    "Synthesizer",
    "TaskPool",
    "build_synthesizer",
    "discover_api_docs",
    "needs_judge",
    "packaged_embedder",
    "parse_task_blocks",
    "replay",
]
