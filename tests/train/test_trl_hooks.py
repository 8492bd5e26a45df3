"""The private TRL hooks the trainer overrides or relies on: a TRL upgrade that changes them fails here."""

from __future__ import annotations

import inspect

import trl
from trl import GRPOTrainer
from trl.trainer import utils as trl_utils

from evolver_train.trainer import EvolverGRPOTrainer


def _params(fn):
    return list(inspect.signature(fn).parameters)


def test_trl_minor_version_is_the_tested_one():
    assert trl.__version__.startswith("1.16."), trl.__version__


# Every private TRL method the trainer overrides, with TRL's parameters; the trainer's docstring says why.
OVERRIDDEN_PRIVATE = {
    "_generate_and_score_completions": ["self", "inputs"],
    "_compute_loss": ["self", "model", "inputs"],
    "_get_per_token_logps_and_entropies": ["self", "model", "input_ids", "attention_mask", "logits_to_keep",
                                           "batch_size"],
}


def test_overridden_private_hooks_keep_their_signatures():
    for name, params in OVERRIDDEN_PRIVATE.items():
        assert _params(getattr(GRPOTrainer, name))[: len(params)] == params, name
        assert _params(getattr(EvolverGRPOTrainer, name))[: len(params)] == params, name


def test_every_private_override_is_listed_and_documented():
    """A new private override must be added to OVERRIDDEN_PRIVATE and to the trainer module docstring."""
    import evolver_train.trainer as module

    private = {name for name, value in vars(EvolverGRPOTrainer).items()
               if name.startswith("_") and not name.startswith("__") and callable(value)
               and hasattr(GRPOTrainer, name)}
    assert private == set(OVERRIDDEN_PRIVATE), private
    for name in private:
        assert f"``{name}``" in module.__doc__, name


def test_public_hooks_the_trainer_relies_on():
    from transformers import Trainer, TrainerCallback

    # plugin state: written by a callback right after each checkpoint, restored in train()
    assert "on_save" in vars(TrainerCallback)
    src = inspect.getsource(Trainer._maybe_log_save_evaluate)
    assert src.index("self._save_checkpoint(model, trial)") < src.index("self.callback_handler.on_save(")
    assert _params(Trainer.train)[:2] == ["self", "resume_from_checkpoint"]


def test_used_hooks_and_attributes_exist():
    init = inspect.signature(GRPOTrainer.__init__).parameters
    assert "rollout_func" in init and "peft_config" in init
    assert _params(GRPOTrainer._get_per_token_logps_and_entropies)[:5] == [
        "self", "model", "input_ids", "attention_mask", "logits_to_keep"]
    assert _params(GRPOTrainer._generate)[:2] == ["self", "prompts"]
    src = inspect.getsource(GRPOTrainer)
    # rollout_func contract: required keys, env_mask renamed tool_mask, (B, T) advantages accepted,
    # per-row clip bounds read from these attributes.
    assert 'required_keys = {"prompt_ids", "completion_ids", "logprobs"}' in src
    assert 'extra_fields.pop("env_mask", None)' in src
    assert "if advantages.dim() == 1:" in src
    assert "torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)" in src
    assert 'mask = completion_mask if "tool_mask" not in inputs else completion_mask * inputs["tool_mask"]' in src
    # Old log-probs (the ratio the clips bound): computed at generation time from the rollout's prompt_ids
    # only when a batch serves several steps; otherwise the loss uses its own, detached (ratio 1).
    assert "generate_every = self.args.steps_per_generation * self.num_iterations" in src
    assert "if self.args.gradient_accumulation_steps % generate_every != 0 or (" in src
    assert "old_per_token_logps = per_token_logps.detach() if old_per_token_logps is None" in src
    assert "self.importance_sampling_level" in src
    assert _params(trl_utils.split_tensor_dict) == ["tensor_dict", "num_chunks"]
    assert _params(trl_utils.shuffle_sequence_dict) == ["seq_dict"]
