"""The loss of a row sampled under ``allowed_actions_only`` is the acting policy's.

Sampling is restricted to the allowed actions token by token, so the policy that acted is the model's
distribution renormalised over the allowed tokens at each restricted position. The sampler reports
that log-prob, the trainer recomputes it, and the gradient it applies is that policy's gradient.
"""

from __future__ import annotations

import os
from typing import Any

import torch

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from evolver_train.config import EvolverGRPOConfig  # noqa: E402
from evolver_train.policy import TinyPolicyConfig, build_tiny_policy, build_word_tokenizer  # noqa: E402
from evolver_train.trainer import EvolverGRPOTrainer  # noqa: E402

from .fixtures import GuessEnv, vocabulary_texts  # noqa: E402

CLICKABLES = ["3", "7", "8"]


class ClickGuessEnv(GuessEnv):
    """The guessing game with three allowed actions: ``click[3]``, ``click[7]``, ``click[8]``."""

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {**super()._info(**extra), "allowed_actions": [f"click[{c}]" for c in CLICKABLES]}


def _policy():
    tok = build_word_tokenizer(vocabulary_texts() + [f"click[{c}]" for c in CLICKABLES])
    tok.padding_side = "left"
    model = build_tiny_policy(tok, TinyPolicyConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                    intermediate_size=64, max_position_embeddings=512), seed=0)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model, tok


def _trainer(tmp_path, **kw) -> EvolverGRPOTrainer:
    model, tok = _policy()
    params = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_generations=4, max_steps=1,
                  learning_rate=1e-2, max_turns=3, max_episode_tokens=200, max_turn_tokens=8, report_to="none",
                  save_strategy="no", rollout_seed=1, disable_tqdm=True, allowed_actions_only=True, loss_type="dapo",
                  beta=0.0)
    params.update(kw)
    return EvolverGRPOTrainer(model, EvolverGRPOConfig(**params), ClickGuessEnv, tasks=ClickGuessEnv().tasks(),
                              processing_class=tok)


def _teacher_forced(model, prompt_ids, completion_ids, restricted, temperature=1.0):
    """Per completion token: log-prob under the model, renormalised over the allowed tokens where restricted."""
    ids = torch.tensor([list(prompt_ids) + list(completion_ids)])
    logits = model(input_ids=ids).logits[0, len(prompt_ids) - 1: -1].float() / temperature
    out = []
    for k, token in enumerate(completion_ids):
        row = logits[k]
        if k in restricted:
            allowed = torch.tensor(restricted[k])
            out.append(row[token] - torch.logsumexp(row[allowed], -1))
        else:
            out.append(row[token] - torch.logsumexp(row, -1))
    return torch.stack(out)


def _batch(trainer):
    rows = [trainer.train_dataset[3]] * 4 + [trainer.train_dataset[7]] * 4  # targets 3 and 7 are clickable
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop; one optimiser step per batch here
    return trainer._generate_and_score_completions(rows)


def test_sampling_logprobs_are_the_restricted_policys(tmp_path):
    trainer = _trainer(tmp_path)
    trainer.model.eval()
    rows = trainer._row_specs([trainer.train_dataset[0]["prompt"]] * 8, "train")
    episodes = trainer._play(rows, trainer._generate_fn(1.0, 0))
    assert all(step.action in {f"click[{c}]" for c in CLICKABLES} for ep in episodes for step in ep.steps)
    restricted_positions = 0
    for ep in episodes:
        rec = ep.tokens
        assert ep.restricted and all(rec.env_mask[k] == 1 for k in ep.restricted)  # only sampled tokens
        restricted_positions += len(ep.restricted)
        with torch.no_grad():
            ref = _teacher_forced(trainer.model, rec.prompt_ids, rec.completion_ids, ep.restricted)
        model_pos = [k for k, m in enumerate(rec.env_mask) if m]
        torch.testing.assert_close(torch.tensor([rec.logprobs[k] for k in model_pos]), ref[model_pos],
                                   atol=1e-4, rtol=1e-4)
        # The last action token is EOS, forced once the action is complete: probability 1 when restricted.
        for k in ep.restricted:
            if len(ep.restricted[k]) == 1:
                assert abs(rec.logprobs[k]) < 1e-5
    assert restricted_positions > 0


def test_trainer_logps_and_gradient_are_the_acting_policys(tmp_path):
    trainer = _trainer(tmp_path)
    trainer.model.train()
    out = _batch(trainer)
    assert out["restricted_tokens"] and all(out["restricted_tokens"])
    model = trainer.model
    # The trainer's loss gradient.
    model.zero_grad()
    trainer._compute_loss(model, out).backward()
    applied = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    # The acting policy's gradient of the same objective: sum over model tokens of A * log pi_restricted.
    # (dapo with one iteration: the ratio is exp(logp - logp.detach()), so d loss = -sum(A d logp) / N.)
    mask = out["completion_mask"] * out.get("tool_mask", torch.ones_like(out["completion_mask"]))
    model.zero_grad()
    total = torch.zeros(())
    n_tokens = out["num_items_in_batch"]  # dapo's normaliser: the batch's model tokens
    for r in range(out["completion_ids"].size(0)):
        prompt = out["prompt_ids"][r][out["prompt_mask"][r].bool()].tolist()
        length = int(out["completion_mask"][r].sum())
        completion = out["completion_ids"][r][:length].tolist()
        lp = _teacher_forced(model, prompt, completion, out["restricted_tokens"][r])
        total = total - (out["advantages"][r, :length] * lp * mask[r, :length]).sum() / n_tokens
    total.backward()
    acting = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    assert acting.norm() > 0
    cosine = torch.nn.functional.cosine_similarity(applied, acting, dim=0).item()
    assert cosine >= 0.999, cosine
    torch.testing.assert_close(applied, acting, atol=1e-5, rtol=1e-3)

    # Scoring the same rows without the restriction (the model's unrestricted log-probs) is another gradient.
    unrestricted = dict(out, restricted_tokens=[{} for _ in out["restricted_tokens"]])
    model.zero_grad()
    trainer._compute_loss(model, unrestricted).backward()
    plain = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    assert torch.nn.functional.cosine_similarity(plain, acting, dim=0).item() < 0.999


def test_old_logprobs_of_a_reused_batch_are_restricted_too(tmp_path):
    """With num_iterations > 1 TRL scores the batch's old log-probs: they match the sampling ones."""
    trainer = _trainer(tmp_path, num_iterations=2)
    trainer.model.train()
    out = _batch(trainer)
    old = out["old_per_token_logps"]
    episodes = trainer._episodes
    for r, ep in enumerate(episodes):
        model_pos = [k for k, m in enumerate(ep.tokens.env_mask) if m]
        torch.testing.assert_close(old[r, model_pos], torch.tensor([ep.tokens.logprobs[k] for k in model_pos]),
                                   atol=1e-4, rtol=1e-4)


def test_kl_to_start_on_restricted_batches_compares_with_the_starting_weights(tmp_path):
    """Restricted rows are scored through the model's plain forward: the starting copy must use its own."""
    trainer = _trainer(tmp_path, max_steps=4, learning_rate=0.2, kl_to_start_interval=1)
    trainer.train()
    kl = [h["kl_to_start"] for h in trainer.state.log_history if "kl_to_start" in h]
    assert len(kl) == 4 and abs(kl[0]) < 1e-5 and kl[-1] > 1e-3, kl
