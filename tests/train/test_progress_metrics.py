"""What a user reads to judge a run's progress: KL to the starting policy, the fixed probes of training
and held-out goals, injected rows apart from plain ones, the zero-variance share."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from peft import LoraConfig  # noqa: E402

from evolver_train.config import ConfigError, EvolverGRPOConfig  # noqa: E402
from evolver_train.trainer import EvolverGRPOTrainer  # noqa: E402
from wrappers.navigation import NavigationConfig  # noqa: E402
from wrappers.navigation.plugin import training_hooks as navigation_hooks  # noqa: E402

from .fixtures import GuessEnv, HintWrapper, tiny_policy  # noqa: E402
from .test_trainer import _config  # noqa: E402


def _logs(trainer):
    return [h for h in trainer.state.log_history if "loss" in h]


def test_kl_to_start_is_zero_before_the_first_update_and_grows(tmp_path):
    model, tok = tiny_policy()
    cfg = _config(tmp_path, max_steps=4, learning_rate=0.2, kl_to_start_interval=1)
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, tasks=GuessEnv().tasks(), processing_class=tok)
    trainer.train()
    kl = [h["kl_to_start"] for h in _logs(trainer)]
    assert len(kl) == 4
    assert abs(kl[0]) < 1e-5  # the weights that sampled the first batch are the starting ones
    assert kl[-1] > 1e-3 and all(k >= -1e-6 for k in kl)
    for h in _logs(trainer):  # TRL's share of groups whose rows all scored the same
        assert 0.0 <= h["frac_reward_zero_std"] <= 1.0
        assert "env/edited_share" not in h and "env_plain/success_rate" not in h  # no injection, no split


def test_kl_to_start_with_lora_uses_the_base_weights(tmp_path):
    model, tok = tiny_policy()
    cfg = _config(tmp_path, max_steps=3, learning_rate=0.2, kl_to_start_interval=1)
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, tasks=GuessEnv().tasks(), processing_class=tok,
                                 peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    trainer.train()
    assert trainer._start_model is None  # no copy: the adapter is switched off instead
    kl = [h["kl_to_start"] for h in _logs(trainer)]
    assert abs(kl[0]) < 1e-5 and kl[-1] > 0.0


def test_probes_of_train_and_held_out_goals_are_logged(tmp_path):
    model, tok = tiny_policy()
    tasks = GuessEnv().tasks()
    cfg = _config(tmp_path, max_steps=3, evolver_eval_interval=1, evolver_eval_episodes=4,
                  evolver_eval_train_episodes=3, kl_to_start_interval=0)
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, tasks=tasks[:6], eval_tasks=tasks[6:],
                                 processing_class=tok)
    trainer.train()
    logs = _logs(trainer)
    assert "kl_to_start" not in logs[0]
    probed = [h for h in logs if "eval_train_env/success_rate" in h]
    assert len(probed) == 2  # steps 1 and 2 (the last step is the run's own final evaluation)
    for h in probed:
        assert 0.0 <= h["eval_train_env/success_rate"] <= 1.0 and 0.0 <= h["eval_env/success_rate"] <= 1.0


def test_injected_rows_are_reported_apart_from_plain_rows(tmp_path):
    model, tok = tiny_policy()
    hooks = [navigation_hooks(NavigationConfig(experience_share=0.5))]
    cfg = _config(tmp_path, max_steps=2, kl_to_start_interval=0)
    trainer = EvolverGRPOTrainer(model, cfg, lambda: HintWrapper(GuessEnv()), tasks=GuessEnv().tasks(), hooks=hooks,
                                 processing_class=tok)
    trainer.train()
    for h in _logs(trainer):
        assert h["env/edited_share"] == 0.5
        for part in ("env_edited", "env_plain"):
            assert 0.0 <= h[f"{part}/success_rate"] <= 1.0 and h[f"{part}/invalid_action_rate"] >= 0.0
        # The batch mean is the mean of the two halves.
        assert h["env/success_rate"] == pytest.approx((h["env_edited/success_rate"] + h["env_plain/success_rate"]) / 2)


def test_bad_progress_settings_are_refused():
    with pytest.raises(ConfigError, match="kl_to_start_interval must be an int >= 0, got -1"):
        EvolverGRPOConfig(output_dir="/tmp/x", kl_to_start_interval=-1)
    with pytest.raises(ConfigError, match="evolver_eval_train_episodes must be an int >= 0, got 1.5"):
        EvolverGRPOConfig(output_dir="/tmp/x", evolver_eval_train_episodes=1.5)
