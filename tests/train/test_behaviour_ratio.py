"""Stripped experience rows trained against the policy that sampled them (``experience_behaviour_ratio``)."""

from __future__ import annotations

import os

import torch

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from evolver_train.trainer import EvolverGRPOTrainer  # noqa: E402
from wrappers.navigation import NavigationConfig  # noqa: E402
from wrappers.navigation.plugin import training_hooks as navigation_hooks  # noqa: E402

from .fixtures import GuessEnv, HintWrapper, tiny_policy  # noqa: E402
from .test_trainer import _config  # noqa: E402


def _trainer(tmp_path, behaviour: bool, **kw) -> EvolverGRPOTrainer:
    model, tok = tiny_policy()
    hooks = [navigation_hooks(NavigationConfig(experience_share=0.5, experience_mode="strip",
                                               experience_behaviour_ratio=behaviour))]
    return EvolverGRPOTrainer(model, _config(tmp_path, kl_to_start_interval=0, **kw), lambda: HintWrapper(GuessEnv()),
                              tasks=GuessEnv().tasks(), hooks=hooks, processing_class=tok)


def _teacher_forced(model, prompt, completion):
    ids = torch.tensor([list(prompt) + list(completion)])
    logits = model(input_ids=ids).logits[0, len(prompt) - 1: -1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(completion).unsqueeze(1)).squeeze(1)


def test_old_logprobs_of_stripped_rows_are_the_sampling_policys(tmp_path):
    trainer = _trainer(tmp_path, behaviour=True)
    trainer.current_gradient_accumulation_steps = 1
    trainer.model.train()
    out = trainer._generate_and_score_completions([trainer.train_dataset[0]] * 4 + [trainer.train_dataset[1]] * 4)
    old = out["old_per_token_logps"]
    episodes = trainer._episodes
    assert sum(ep.stripped for ep in episodes) == 4
    model = trainer.model
    model.eval()
    with torch.no_grad():
        for r, ep in enumerate(episodes):
            rec = ep.tokens
            model_pos = [k for k, m in enumerate(rec.env_mask) if m]
            # The behaviour policy: the prompt the row was sampled on (with experience when stripped).
            sampled_on = _teacher_forced(model, rec.prompt_ids, rec.completion_ids)
            torch.testing.assert_close(old[r, model_pos], sampled_on[model_pos], atol=1e-4, rtol=1e-4)
            if ep.stripped:  # ... which is not the training prompt's policy: the ratio starts away from 1
                trained_on = _teacher_forced(model, ep.train_prompt_ids, rec.completion_ids)
                assert (trained_on[model_pos] - sampled_on[model_pos]).abs().max() > 1e-3


def test_the_first_pass_ratio_of_stripped_rows_moves_and_is_clipped(tmp_path):
    logs = []
    for behaviour in (False, True):
        trainer = _trainer(tmp_path / str(behaviour), behaviour=behaviour, max_steps=2, learning_rate=0.5)
        trainer.train()
        logs.append([h for h in trainer.state.log_history if "loss" in h])
    without, with_behaviour = logs
    assert all(h["exp/ratio_max_deviation"] < 1e-5 for h in without)  # AgentEvolver's stripping: ratio 1
    assert all(h["exp/ratio_max_deviation"] > 1e-3 for h in with_behaviour)
    assert max(h["clip_ratio/experience_region_mean"] for h in with_behaviour) > 0.0
