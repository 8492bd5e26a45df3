"""EvolverGRPOTrainer end to end on CPU: LoRA training, masking, experience clip, checkpoints."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from peft import LoraConfig  # noqa: E402

from evolver_train.config import EvolverGRPOConfig  # noqa: E402
from evolver_train.trainer import PLUGIN_STATE_FILE, EvolverGRPOTrainer, TrainingHooks  # noqa: E402
from wrappers.attribution import AttributionConfig  # noqa: E402
from wrappers.attribution.plugin import training_hooks as attribution_hooks  # noqa: E402
from wrappers.navigation import NavigationConfig  # noqa: E402
from wrappers.navigation.plugin import training_hooks as navigation_hooks  # noqa: E402

from .fixtures import GuessEnv, HintWrapper, LabelWrapper, tiny_policy  # noqa: E402


def _config(tmp_path, **kw):
    params = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_generations=4, max_steps=2,
                  learning_rate=5e-2, max_turns=4, max_episode_tokens=200, max_turn_tokens=6, report_to="none",
                  save_strategy="no", rollout_seed=3, disable_tqdm=True)
    params.update(kw)
    return EvolverGRPOConfig(**params)


def _trainer(tmp_path, env_factory=GuessEnv, hooks=None, **kw):
    model, tok = tiny_policy()
    return EvolverGRPOTrainer(model, _config(tmp_path, **kw), env_factory, tasks=GuessEnv().tasks(), hooks=hooks,
                              processing_class=tok, peft_config=LoraConfig(r=4, lora_alpha=8,
                                                                            target_modules=["q_proj", "v_proj"]))


def _lora(trainer):
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora" in n and p.requires_grad}


def test_two_step_lora_run_overall_mode(tmp_path):
    hooks = [navigation_hooks(NavigationConfig(experience_share=0.5)),
             attribution_hooks(AttributionConfig(attribution_alpha=0.2))]
    trainer = _trainer(tmp_path, env_factory=lambda: LabelWrapper(HintWrapper(GuessEnv())), hooks=hooks,
                       report_to="tensorboard", gigpo_omega=1.0, save_strategy="steps", save_steps=2)
    before = _lora(trainer)
    trainer.train()
    after = _lora(trainer)
    assert trainer.model.training  # back in train mode after rollouts
    assert any(not torch.equal(before[n], after[n]) for n in before)
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logs) == 2
    for key in ("env/success_rate", "env/invalid_action_rate", "env/truncated_rate", "adv/attribution_share",
                "adv/anchor_share", "attr/good_rate", "exp/injection_rate", "exp/stripped_rate"):
        assert key in logs[0], key
    assert logs[0]["exp/injection_rate"] == 0.5 and logs[0]["attr/labelled_rate"] == 1.0
    assert logs[0]["adv/attribution_share"] > 0
    ckpt = tmp_path / "out" / "checkpoint-2"
    assert (ckpt / "adapter_model.safetensors").exists()
    state = json.loads((ckpt / PLUGIN_STATE_FILE).read_text())
    assert state["plugin"]["episodes"] == 16 and state["global_step"] == 2
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    events = EventAccumulator(glob.glob(str(tmp_path / "out" / "runs" / "*"))[0])
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train/env/success_rate", "train/loss", "train/adv/outcome_share"} <= tags


def test_env_only_advantages_give_zero_gradient(tmp_path):
    trainer = _trainer(tmp_path)
    original = EvolverGRPOTrainer._generate_and_score_completions

    def env_only(self, inputs):
        out = original(self, inputs)
        mask = out["completion_mask"] * out["tool_mask"]
        out["advantages"] = (1 - mask).float() * 5.0  # advantage only where tokens come from the environment
        assert out["advantages"].abs().sum() > 0
        return out

    trainer._generate_and_score_completions = env_only.__get__(trainer)
    before = _lora(trainer)
    trainer.train()
    after = _lora(trainer)
    assert all(torch.equal(before[n], after[n]) for n in before)
    assert all(h["grad_norm"] == 0.0 for h in trainer.state.log_history if "grad_norm" in h)


def test_stripped_experience_rows_use_the_boosted_clip(tmp_path):
    trainer = _trainer(tmp_path, max_steps=1)
    b, t = 2, 3
    inputs = {"prompt_ids": torch.tensor([[5, 6], [5, 6]]), "prompt_mask": torch.ones(b, 2, dtype=torch.long),
              "completion_ids": torch.tensor([[7, 8, 9], [7, 8, 9]]),
              "completion_mask": torch.ones(b, t, dtype=torch.long),
              "advantages": torch.ones(b, t), "num_items_in_batch": torch.tensor(6.0)}
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
            torch.ones(b, 5, dtype=torch.long), t)
    inputs["old_per_token_logps"] = logps - 0.4  # ratio e^0.4 = 1.49: clipped at 1 + 0.2, not at 1 + 0.6
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); this test calls the loss directly
    plain = trainer._compute_loss(trainer.model, dict(inputs)).item()
    boosted = trainer._compute_loss(trainer.model, {**inputs, "clip_high": torch.tensor([0.6, float("nan")])}).item()
    ratio = torch.exp(torch.tensor(0.4)).item()
    # dapo: -(sum of min(r A, clip(r) A)) / tokens; row 0 moves from 1.2 to 1.49 per token
    assert plain == pytest.approx(-1.2 * 6 / 6, rel=1e-4)
    assert boosted == pytest.approx(-(ratio * 3 + 1.2 * 3) / 6, rel=1e-4)
    assert trainer.epsilon_high == 0.2  # restored


class CountingPool:
    """A stateful hook standing in for a task pool: it counts what it served."""

    def __init__(self):
        self.served = 0

    def sample(self, n, seed):
        self.served += n
        return [GuessEnv().tasks()[(seed + i) % 10].to_dict() for i in range(n)]

    def state_dict(self):
        return {"served": self.served}

    def load_state_dict(self, state):
        self.served = state["served"]


def test_task_slots_questioning_cycle_and_experience_sink(tmp_path):
    pool, cycles, sunk = CountingPool(), [], []
    hooks = TrainingHooks(task_sampler=pool.sample, on_step_end=lambda step: cycles.append(step) or
                          {"tasks/generated": 3, "tasks/accepted": 1},
                          on_episodes=lambda trajs: sunk.extend(trajs) or {"exp/added": len(trajs)},
                          stateful={"pool": pool})
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, _config(tmp_path), GuessEnv, hooks=hooks, processing_class=tok)
    trainer.train()
    assert pool.served == 4  # 2 groups per step, 2 steps
    assert cycles == [1, 2] and trainer.plugin_state["totals"]["tasks/generated"] == 6
    assert len(sunk) == 16 and sunk[0].tokens is not None and sunk[0].steps
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert logs[-1]["tasks/accepted"] == 1.0 and logs[-1]["exp/added"] == 8.0


_RESUME_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from transformers import TrainerCallback
    from tests.train.test_trainer import CountingPool, _config, GuessEnv
    from tests.train.fixtures import tiny_policy
    from evolver_train.trainer import EvolverGRPOTrainer, TrainingHooks
    from pathlib import Path

    class Kill(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 3:
                os.kill(os.getpid(), signal.SIGKILL)

    pool = CountingPool()
    model, tok = tiny_policy()
    cfg = _config(Path({tmp!r}), max_steps=4, save_strategy="steps", save_steps=2)
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, hooks=TrainingHooks(task_sampler=pool.sample,
                                 stateful={{"pool": pool}}), processing_class=tok, callbacks=[Kill()])
    trainer.train()
""")


def test_checkpoint_kill_resume_keeps_plugin_state(tmp_path):
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run([sys.executable, "-c", _RESUME_SCRIPT.format(root=root, tmp=str(tmp_path))],
                          capture_output=True, text=True, timeout=300, cwd=root)
    assert proc.returncode == -9, proc.stderr[-2000:]  # killed at step 3, after the step-2 checkpoint
    ckpt = tmp_path / "out" / "checkpoint-2"
    saved = json.loads((ckpt / PLUGIN_STATE_FILE).read_text())
    assert saved["hooks"]["pool"]["served"] == 4 and saved["plugin"]["episodes"] == 16

    pool = CountingPool()
    model, tok = tiny_policy()
    trainer = EvolverGRPOTrainer(model, _config(tmp_path, max_steps=4, save_strategy="steps", save_steps=2), GuessEnv,
                                 hooks=TrainingHooks(task_sampler=pool.sample, stateful={"pool": pool}),
                                 processing_class=tok)
    trainer.train(resume_from_checkpoint=str(ckpt))
    assert trainer.state.global_step == 4
    assert pool.served == 8  # restored 4, then 2 more steps of 2 groups
    assert trainer.plugin_state["episodes"] == 32
    final = json.loads((tmp_path / "out" / "checkpoint-4" / PLUGIN_STATE_FILE).read_text())
    assert final["hooks"]["pool"]["served"] == 8


def test_left_aligned_logps_equal_trls_masked_computation(tmp_path):
    """The log-probs read from left-aligned rows (no padding mask) equal TRL's masked forward."""
    from trl import GRPOTrainer

    trainer = _trainer(tmp_path, max_steps=1)
    pad = trainer.processing_class.pad_token_id
    prompt = torch.tensor([[pad, pad, 5, 6, 7], [pad, 5, 6, 8, 9], [4, 5, 6, 7, 8]])
    prompt_mask = (prompt != pad).long()
    completion = torch.tensor([[10, 11, 12, pad], [13, 14, pad, pad], [15, 16, 17, 18]])
    completion_mask = (completion != pad).long()
    ids, mask = torch.cat([prompt, completion], 1), torch.cat([prompt_mask, completion_mask], 1)
    trainer.model.eval()
    with torch.no_grad():
        ours, ours_ent, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, 4,
                                                                       compute_entropy=True)
        ref, ref_ent, _ = GRPOTrainer._get_per_token_logps_and_entropies(trainer, trainer.model, ids, mask, 4,
                                                                         compute_entropy=True)
    keep = completion_mask.bool()
    assert ours.shape == ref.shape == (3, 4)
    torch.testing.assert_close(ours[keep], ref[keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours_ent[keep], ref_ent[keep], atol=1e-5, rtol=1e-5)


def test_a_group_of_rows_must_be_one_task(tmp_path):
    """Advantages are normalised within a group, so rows of different tasks in one group are refused."""
    trainer = _trainer(tmp_path, max_steps=1)
    a, b = trainer.train_dataset[0]["prompt"], trainer.train_dataset[1]["prompt"]
    rows = trainer._row_specs([a] * 4 + [b] * 4, "train")
    assert [r.group for r in rows] == [0] * 4 + [1] * 4 and rows[0].task == rows[3].task != rows[4].task
    with pytest.raises(RuntimeError, match="rows of group 0 carry different prompts.*num_generations=4"):
        trainer._row_specs([a, a, b, a] + [b] * 4, "train")
