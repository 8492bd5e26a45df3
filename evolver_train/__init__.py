"""The GRPO training plugin on TRL: configs, trainer, rollouts, evaluation and the ``evolver`` commands.

Public names are imported on first use, so ``import evolver_train`` works without the ``train`` extra
(torch, TRL); using a name that needs it then raises the usual ``ModuleNotFoundError``.

* ``EvolverGRPOConfig``, ``EvolverGRPOTrainer``, ``ConfigError``
* ``build_training_environment``, ``evaluate_policy``, ``parse_config``, ``train_sft``, ``SFTConfig``
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["EvolverGRPOConfig", "EvolverGRPOTrainer", "ConfigError", "build_training_environment",
           "evaluate_policy", "parse_config", "train_sft", "SFTConfig"]

_WHERE = {"EvolverGRPOConfig": "config", "EvolverGRPOTrainer": "trainer", "ConfigError": "errors",
          "build_training_environment": "envs", "evaluate_policy": "evaluation", "parse_config": "train_cli",
          "train_sft": "sft", "SFTConfig": "sft"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'evolver_train' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
