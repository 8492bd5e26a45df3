"""The SFT warm start: demonstrations, experience blocks in a share of them, and the tokenizer they need."""

from __future__ import annotations

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_train.envs import shape_environment
from evolver_train.errors import ConfigError
from evolver_train.sft import IdRelabeller, SFTConfig, add_experience_context, collect_demonstrations, train_sft
from wrappers.navigation import EXP_CLOSE, EXP_OPEN

ENV_KWARGS = {"num_products": 200, "max_steps": 8, "goals": "synthetic"}


@pytest.fixture(scope="module")
def demonstrations():
    env = shape_environment(gym.make("evolver/WebShop-v0", **ENV_KWARGS), ["drop_repeated_instruction"])
    demos = collect_demonstrations(env, env.unwrapped.tasks("train"), 60, imperfect_share=0.35, seed=0)
    env.close()
    return demos


def test_experience_blocks_go_in_front_of_the_first_observation_of_a_share(demonstrations):
    out = add_experience_context(demonstrations, 0.5, max_chars=300, seed=1)
    chosen = [(d, o) for d, o in zip(demonstrations, out) if o.metadata.get("experience")]
    assert 15 <= len(chosen) <= 45
    for before, after in chosen:
        first = after.steps[0].observation
        assert first.startswith(EXP_OPEN) and first.endswith(before.steps[0].observation)
        block = first[: len(first) - len(before.steps[0].observation)]
        assert EXP_CLOSE in block and len(block) <= 300
        assert before.task.task_id not in block  # written from another demonstration
        assert after.actions == before.actions and after.score == before.score
        assert [s.observation for s in after.steps[1:]] == [s.observation for s in before.steps[1:]]
    untouched = [o for o in out if not o.metadata.get("experience")]
    assert all(EXP_OPEN not in o.steps[0].observation for o in untouched if o.steps)
    assert not any(EXP_OPEN in d.steps[0].observation for d in demonstrations if d.steps)  # inputs not mutated


def test_experience_blocks_are_seeded(demonstrations):
    first = [d.steps[0].observation for d in add_experience_context(demonstrations, 0.3, seed=4)]
    again = [d.steps[0].observation for d in add_experience_context(demonstrations, 0.3, seed=4)]
    other = [d.steps[0].observation for d in add_experience_context(demonstrations, 0.3, seed=5)]
    assert first == again and first != other
    assert add_experience_context(demonstrations, 0.0) == list(demonstrations)


def test_bad_experience_settings_are_rejected(demonstrations):
    with pytest.raises(ValueError, match="share must be in \\[0, 1\\], got 1.5"):
        add_experience_context(demonstrations, 1.5)
    with pytest.raises(ValueError, match="experience_share must be in \\[0, 1\\], got -0.1"):
        SFTConfig(experience_share=-0.1)
    with pytest.raises(ValueError, match="experience_max_chars must be >= 80, got 10"):
        SFTConfig(experience_max_chars=10)


def test_warm_start_with_experience_knows_the_block_vocabulary(tmp_path, demonstrations):
    config = SFTConfig(output_dir=str(tmp_path / "sft"), env_kwargs=ENV_KWARGS, max_steps=1, max_minutes=0,
                       hidden_size=32, num_hidden_layers=1, num_attention_heads=2, experience_share=0.5,
                       observation_shaping=["drop_repeated_instruction"])
    from evolver_train.policy import load_policy

    _, tokenizer = load_policy(train_sft(config, demonstrations=list(demonstrations)))
    ids = tokenizer("Some related experience to help you complete the task: Advice", add_special_tokens=False)
    assert tokenizer.unk_token_id not in ids["input_ids"]
    plain = SFTConfig(**{**config.__dict__, "experience_share": 0.0, "output_dir": str(tmp_path / "plain")})
    _, tokenizer = load_policy(train_sft(plain, demonstrations=list(demonstrations)))
    assert tokenizer.unk_token_id in tokenizer("Advice", add_special_tokens=False)["input_ids"]


def test_lora_warm_start_trains_only_the_adapted_modules_and_saves_a_merged_checkpoint(tmp_path, demonstrations):
    import torch

    from evolver_train.policy import load_policy

    common = dict(env_kwargs=ENV_KWARGS, max_minutes=0, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                  observation_shaping=["drop_repeated_instruction"], learning_rate=1e-2, batch_size=8)
    # the same initialisation (same seed), then LoRA steps from it on the attention projections only
    lora_dir = train_sft(SFTConfig(output_dir=str(tmp_path / "lora"), max_steps=4, lora_r=4,
                                   lora_target_modules=["q_proj", "v_proj"], **{**common, "learning_rate": 1e-1}),
                         demonstrations=list(demonstrations))
    assert not any(p.name.startswith("adapter") for p in lora_dir.iterdir())  # merged, a plain checkpoint
    merged, _ = load_policy(lora_dir)
    init, _ = load_policy(train_sft(SFTConfig(output_dir=str(tmp_path / "init"), max_steps=1,
                                              **{**common, "learning_rate": 1e-12}),
                                    demonstrations=list(demonstrations)))
    changed = {name for name, p in merged.state_dict().items()
               if not torch.allclose(p, init.state_dict()[name], atol=1e-6)}
    assert changed and all(name.endswith(("q_proj.weight", "v_proj.weight")) for name in changed), changed
    assert init.state_dict().keys() == merged.state_dict().keys()
    with pytest.raises(ValueError, match="lora_r must be an int >= 0, got -1"):
        SFTConfig(lora_r=-1)


WEBSHOP_ID = r"b0([a-z0-9]{8})"


def _ids(trajectory) -> list[str]:
    import re

    text = " ".join(s.observation + " " + s.action for s in trajectory.steps)
    return sorted({m.lower() for m in re.findall(r"\bb0[a-z0-9]{8}\b", text, flags=re.IGNORECASE)})


def test_relabel_ids_gives_every_id_one_fresh_value_per_demonstration(demonstrations):
    import re

    import numpy as np

    relabeller = IdRelabeller.from_demonstrations(WEBSHOP_ID, demonstrations)
    demo = next(d for d in demonstrations if any(s.action.startswith("click[b0") for s in d.steps))
    new = relabeller.relabel(demo, np.random.default_rng(0))
    old_ids, new_ids = _ids(demo), _ids(new)
    assert len(new_ids) == len(old_ids) > 1 and not set(new_ids) & set(old_ids)  # one new value per id
    mask = re.compile(WEBSHOP_ID, re.IGNORECASE)
    for before, after in zip(demo.steps, new.steps):  # only the ids changed, and their length did not
        assert mask.sub("ID", before.observation) == mask.sub("ID", after.observation)
        assert mask.sub("ID", before.action) == mask.sub("ID", after.action)
        assert len(after.observation) == len(before.observation)
    # the clicked id is still on the page it was clicked from (in the page's upper case): it can be copied
    clicks = [step for step in new.steps if step.action.startswith("click[b0")]
    assert clicks and all(step.action[6:16].upper() in step.observation for step in clicks)
    again = relabeller.relabel(demo, np.random.default_rng(1))
    assert _ids(again) != new_ids  # fresh values every time a demonstration is batched
    assert _ids(relabeller.relabel(demo, np.random.default_rng(0))) == new_ids  # seeded
    assert demo.steps[0].observation == demonstrations[demonstrations.index(demo)].steps[0].observation


def test_warm_start_with_relabelled_ids_trains_and_bad_patterns_are_refused(tmp_path, demonstrations):
    common = dict(env_kwargs=ENV_KWARGS, max_minutes=0, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                  observation_shaping=["drop_repeated_instruction"], batch_size=8, max_steps=2)
    out = train_sft(SFTConfig(output_dir=str(tmp_path / "r"), relabel_ids=WEBSHOP_ID, **common),
                    demonstrations=list(demonstrations))
    assert (out / "model.safetensors").exists()
    assert '"relabel_ids": "b0([a-z0-9]{8})"' in (out / "sft_config.json").read_text()
    with pytest.raises(ConfigError, match=r"relabel_ids is not a regular expression .*got 'b0\(\['"):
        SFTConfig(relabel_ids="b0([")
    with pytest.raises(ValueError, match="relabel_ids 'zz9q' matches no id"):
        train_sft(SFTConfig(output_dir=str(tmp_path / "none"), relabel_ids="zz9q", **common),
                  demonstrations=list(demonstrations))
    assert not (tmp_path / "none").exists()  # refused before anything is written


def test_warm_start_with_whole_word_min_count_saves_a_tokenizer_that_spells_rare_words(tmp_path, demonstrations):
    from evolver_train.policy import build_policy

    common = dict(env_kwargs=ENV_KWARGS, max_minutes=0, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                  observation_shaping=["drop_repeated_instruction"], batch_size=8, max_steps=2)
    out = train_sft(SFTConfig(output_dir=str(tmp_path / "w"), whole_word_min_count=30, **common),
                    demonstrations=list(demonstrations))
    _, tokenizer = build_policy(out)  # the checkpoint folder alone rebuilds it
    pieces = tokenizer.convert_ids_to_tokens(tokenizer("search[zyxwvbookcase]", add_special_tokens=False)["input_ids"])
    assert tokenizer.unk_token not in pieces and len(pieces) > 4
    assert tokenizer.decode(tokenizer("search[zyxwvbookcase]", add_special_tokens=False)["input_ids"]) == \
        "search[zyxwvbookcase]"
    with pytest.raises(ConfigError, match="whole_word_min_count must be an int >= 0, got -2"):
        SFTConfig(whole_word_min_count=-2)


def test_the_checkpoint_records_the_action_budget_that_evolver_eval_then_uses(tmp_path, demonstrations):
    """A WebShop search action is longer than the evaluation's default of 32 tokens: the SFT record says how
    long the demonstrated actions were, and ``evolver eval`` caps actions there, not at 32."""
    import json

    from evolver_train.cli import main as evolver_main
    from evolver_train.policy import load_policy
    from evolver_train.sft import ACTION_TOKEN_MARGIN

    config = SFTConfig(output_dir=str(tmp_path / "sft"), env_kwargs=ENV_KWARGS, max_steps=1, max_minutes=0,
                       hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                       observation_shaping=["drop_repeated_instruction"])
    folder = train_sft(config, demonstrations=list(demonstrations))
    _, tokenizer = load_policy(folder)
    longest = max(len(tokenizer(s.action, add_special_tokens=False)["input_ids"]) + 1
                  for d in demonstrations for s in d.steps)
    assert longest > 32  # the default would cut the longest demonstrated search
    rollout = json.loads((folder / "sft_config.json").read_text())["rollout"]
    assert rollout == {"longest_action_tokens": longest, "max_turn_tokens": longest + ACTION_TOKEN_MARGIN}
    out = tmp_path / "report.json"
    assert evolver_main(["eval", "--checkpoint", str(folder), "--k", "1", "--num-tasks", "2", "--max-turns", "2",
                         "--out", str(out), "--quiet"]) == 0
    report = json.loads(out.read_text())
    assert report["rollout"]["max_turn_tokens"] == longest + ACTION_TOKEN_MARGIN
    assert report["observation_shaping"] == ["drop_repeated_instruction"] and report["env_kwargs"] == ENV_KWARGS


def test_a_time_budget_that_cuts_training_says_so_and_is_recorded(tmp_path, demonstrations, capsys):
    import json

    from evolver_train.sft import finished_sft_mismatch

    assert SFTConfig().max_minutes == 0  # by default the step budget alone ends training: any machine, same weights
    config = SFTConfig(output_dir=str(tmp_path / "sft"), env_kwargs=ENV_KWARGS, max_steps=50, max_minutes=1e-9,
                       hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                       observation_shaping=["drop_repeated_instruction"])
    folder = train_sft(config, demonstrations=list(demonstrations))
    assert "warning: max_minutes=1e-09 stopped training at step 1 of max_steps=50" in capsys.readouterr().err
    record = json.loads((folder / "sft_config.json").read_text())
    assert record["steps"] == 1 and record["stopped_by"] == "max_minutes"
    assert finished_sft_mismatch(folder, config) == f"{folder} stopped at step 1 of 50"  # never reused as finished

    full = SFTConfig(**{**config.__dict__, "max_steps": 2, "max_minutes": 0, "output_dir": str(tmp_path / "full")})
    folder = train_sft(full, demonstrations=list(demonstrations))
    assert "warning" not in capsys.readouterr().err
    record = json.loads((folder / "sft_config.json").read_text())
    assert record["steps"] == 2 and record["stopped_by"] == "max_steps"
    assert finished_sft_mismatch(folder, full) is None


@pytest.mark.parametrize("lora", [False, True])
def test_the_action_token_loss_and_its_gradients_equal_the_models_own(lora):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from evolver_train.sft import action_token_loss

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=True))
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    input_ids = torch.randint(3, 50, (3, 12))
    labels = torch.full_like(input_ids, -100)
    labels[0, 4:7], labels[1, 9:12], labels[2, 2:3] = input_ids[0, 4:7], input_ids[1, 9:12], input_ids[2, 2:3]
    params = [p for p in model.parameters() if p.requires_grad]

    def value_and_grads(loss):
        return loss.item(), [g.clone() for g in torch.autograd.grad(loss, params)]

    expected, expected_grads = value_and_grads(model(input_ids=input_ids, labels=labels).loss)
    got, got_grads = value_and_grads(action_token_loss(model, input_ids, labels))
    assert got == pytest.approx(expected, rel=1e-6)
    assert all(torch.allclose(g, e, atol=1e-6) for g, e in zip(got_grads, expected_grads, strict=True))
    # an unlabelled row contributes nothing, as in the model's loss
    labels[2] = -100
    assert action_token_loss(model, input_ids, labels).item() == pytest.approx(
        model(input_ids=input_ids, labels=labels).loss.item(), rel=1e-6)
