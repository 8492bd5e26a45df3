"""Self-attributing: step-level GOOD/BAD credit for finished episodes (the input of ADCA-GRPO).

* ``Attribution`` - the Gymnasium wrapper; writes ``info["attribution"]`` on an episode's last step.
* ``Attributor``, ``StepLabel``, ``AttributionResult`` - the interface a user's attributor implements.
* ``LLMJudgeAttributor`` - AgentEvolver's outcome-conditioned LLM judge, batched, with fallback.
* ``OracleAttributor`` - ground truth from the simulator's privileged ``info["progress"]``.
* ``RuleAttributor`` - invalid and repeated actions are BAD.
* ``EnvRuleAttributor`` - the environment's own rules (``info["step_credit"]``, e.g. Avalon's hidden-state credit).
* ``make_attributor`` - an attributor from its name, for configuration files.
* ``AttributionPayload`` - the typed ``info["attribution"]`` record; ``label_reward`` - GOOD/BAD -> +1/-1.
* ``AttributionConfig`` - the mechanism's training settings (``plugin.py``: ``attach``, ``MECHANISM``).
* ``evaluate_attributor`` - agreement of an attributor with the oracle (accuracy, kappa, per label).
"""

from __future__ import annotations

from .base import (
    LABELS,
    AttributionPayload,
    AttributionResult,
    Attributor,
    StepLabel,
    label_reward,
    outcome_positive,
    outcome_score,
)
from .evaluate import cohen_kappa, evaluate_attributor
from .judge import JUDGE_SYSTEM_PROMPT, LLMJudgeAttributor, build_judge_messages, parse_verdicts
from .plugin import AttributionConfig
from .rules import EnvRuleAttributor, MissingProgress, OracleAttributor, RuleAttributor, progress_of
from .wrapper import ATTRIBUTOR_NAMES, Attribution, make_attributor

__all__ = [
    "ATTRIBUTOR_NAMES",
    "JUDGE_SYSTEM_PROMPT",
    "LABELS",
    "Attribution",
    "AttributionConfig",
    "AttributionPayload",
    "AttributionResult",
    "Attributor",
    "EnvRuleAttributor",
    "LLMJudgeAttributor",
    "MissingProgress",
    "OracleAttributor",
    "RuleAttributor",
    "StepLabel",
    "build_judge_messages",
    "cohen_kappa",
    "evaluate_attributor",
    "label_reward",
    "make_attributor",
    "outcome_positive",
    "outcome_score",
    "parse_verdicts",
    "progress_of",
]
