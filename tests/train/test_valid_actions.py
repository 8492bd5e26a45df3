"""Sampling restricted to the actions the environment lists, ``info["allowed_actions"]`` (``allowed_actions_only``)."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_train.generation import generate_turn
from evolver_train.rollout import (
    ChatCodec,
    IncrementalSampler,
    RowSpec,
    allowed_actions_in,
    allowed_next_tokens,
    play_episodes,
)

from .fixtures import GuessEnv, tiny_policy

SHAPING = ["drop_repeated_instruction", "top_results=5", "numbered_results"]
WEBSHOP = {"num_products": 200, "max_steps": 8}


def test_allowed_next_tokens_follows_every_sequence_the_prefix_is_on():
    sequences = [[5, 6, 9], [5, 7, 9], [8, 9]]
    assert allowed_next_tokens(sequences, []) == {5, 8}
    assert allowed_next_tokens(sequences, [5]) == {6, 7}
    assert allowed_next_tokens(sequences, [5, 7]) == {9}
    assert allowed_next_tokens(sequences, [5, 7, 9]) == set()  # complete
    assert allowed_next_tokens(sequences, [4]) == set()  # off every sequence


def test_allowed_actions_in_reads_only_the_contract():
    assert allowed_actions_in({"allowed_actions": ["click[1]", "click[next >]"]}) == ["click[1]", "click[next >]"]
    assert allowed_actions_in({"allowed_actions": ("VOTE: approve",)}) == ["VOTE: approve"]
    assert allowed_actions_in({"allowed_actions": None}) is None  # free text
    assert allowed_actions_in({}) is None  # the environment does not say: any action
    assert allowed_actions_in({"allowed_actions": []}) is None  # no turn left: nothing to restrict
    # WebShop's own form is not read: only the contract's key is.
    assert allowed_actions_in({"available_actions": {"has_search_bar": False, "clickables": ["1"]}}) is None
    with pytest.raises(TypeError, match="list of action strings"):
        allowed_actions_in({"allowed_actions": "click[1]"})
    with pytest.raises(TypeError, match="list of action strings"):
        allowed_actions_in({"allowed_actions": [1, 2]})


def _sampler(model, tok, seed):
    return IncrementalSampler(model, eos_token_ids=[tok.eos_token_id], pad_token_id=tok.pad_token_id,
                              temperature=1.0, generator=torch.Generator().manual_seed(seed))


def test_restricted_rows_sample_only_allowed_actions_with_the_restricted_logprobs():
    model, tok = tiny_policy()
    model.eval()
    codec = ChatCodec(tok)
    allowed_texts = ["guess[3]", "guess[7]"]
    tasks = GuessEnv().tasks()[:6]
    rows = [RowSpec(task=t.to_dict(), seed=2, group=i) for i, t in enumerate(tasks)]
    sampler = _sampler(model, tok, 0)
    episodes = play_episodes([GuessEnv() for _ in rows], rows, sampler, codec, max_turns=4, max_episode_tokens=200,
                             max_turn_tokens=8, allowed_actions=lambda info: allowed_texts)
    actions = [step.action for ep in episodes for step in ep.steps]
    assert set(actions) <= set(allowed_texts) and len(set(actions)) == 2  # both sampled, nothing else
    for ep in episodes:  # the log-probs are the restricted policy's: renormalised over the allowed tokens
        rec = ep.tokens
        with torch.no_grad():
            logits = model(torch.tensor([rec.prompt_ids + rec.completion_ids])).logits[0, len(rec.prompt_ids) - 1: -1]
        logits = logits.float()
        for k, tokens in ep.restricted.items():
            logits[k, [t for t in range(logits.size(1)) if t not in tokens]] = float("-inf")
        ref = torch.log_softmax(logits, -1).gather(1, torch.tensor(rec.completion_ids).unsqueeze(1)).squeeze(1)
        model_pos = [k for k, m in enumerate(rec.env_mask) if m]
        assert set(ep.restricted) == set(model_pos)  # every sampled token was restricted
        torch.testing.assert_close(torch.tensor([rec.logprobs[k] for k in model_pos]), ref[model_pos],
                                   atol=1e-4, rtol=1e-4)
    # Without the restriction the same untrained policy says other things.
    free = play_episodes([GuessEnv() for _ in rows], rows, _sampler(model, tok, 0), codec, max_turns=4,
                         max_episode_tokens=200, max_turn_tokens=8)
    assert any(step.action not in allowed_texts for ep in free for step in ep.steps)


def test_unrestricted_rows_of_a_batch_are_sampled_as_before():
    model, tok = tiny_policy()
    model.eval()
    contexts = [[tok.convert_tokens_to_ids("<|user|>"), 20, 21], [tok.convert_tokens_to_ids("<|user|>"), 30]]
    plain = _sampler(model, tok, 5)(contexts, [6, 6])
    allowed = [[tok("guess[3]", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]], None]
    ids, _ = _sampler(model, tok, 5)(contexts, [6, 6], allowed=allowed)
    assert ids[0] == allowed[0][0]
    assert ids[1] == plain[0][1]  # the same generator draws: the free row is unchanged


def test_a_backend_that_cannot_restrict_is_refused():
    def generate(contexts, caps):
        return [[0] for _ in contexts], [[0.0] for _ in contexts]

    with pytest.raises(ValueError, match="allowed_actions_only"):
        generate_turn(generate, [[1]], [4], [0], allowed=[None])
    assert generate_turn(generate, [[1]], [4], [0]) == ([[0]], [[0.0]])


def _shaped_webshop():
    from evolver_train.envs import shape_environment

    return shape_environment(gym.make("evolver/WebShop-v0", **WEBSHOP), SHAPING)


def test_shaped_webshop_lists_the_clicks_it_shows_and_each_one_is_valid():
    env = _shaped_webshop()
    obs, info = env.reset(seed=0, options={"split": "dev", "index": 0})
    assert allowed_actions_in(info) is None  # the search page: the search text is free
    obs, _, _, _, info = env.step("search[" + info["instruction"] + "]")
    allowed = allowed_actions_in(info)
    assert [a for a in allowed if a[6:-1].isdigit()] == [f"click[{i}]" for i in range(1, 6)]  # by position, top 5
    assert not any(a.startswith("click[b0") for a in allowed)
    for action in allowed:  # every listed action is accepted from this page
        probe = _shaped_webshop()
        _, probe_info = probe.reset(seed=0, options={"split": "dev", "index": 0})
        probe.step("search[" + probe_info["instruction"] + "]")
        assert probe.step(action)[4]["action_valid"], action
        probe.close()
    env.close()


def test_tiny_webshop_policy_makes_no_invalid_click_when_restricted():
    """An untrained policy on the real shop: restricted, every action after the search is valid."""
    from evolver_train.policy import TinyPolicyConfig, build_policy

    env = _shaped_webshop()
    tasks = env.unwrapped.tasks("dev")[:8]
    model, tok = build_policy("tiny", env=env, tasks=env.unwrapped.tasks("train"),
                              size=TinyPolicyConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                    intermediate_size=64), seed=0)
    model.eval()
    env.close()
    codec = ChatCodec(tok, max_observation_tokens=256)
    rows = [RowSpec(task=t.to_dict(), seed=1, group=i) for i, t in enumerate(tasks)]

    def search_then_click(info):  # the search text is free for the policy; forced here to reach the pages
        listed = allowed_actions_in(info)
        return [f"search[{info['instruction']}]"] if listed is None else listed

    def play(allowed_actions):
        envs = [_shaped_webshop() for _ in rows]
        sampler = IncrementalSampler(model, eos_token_ids=[tok.eos_token_id], pad_token_id=tok.pad_token_id,
                                     temperature=1.0, generator=torch.Generator().manual_seed(0))
        episodes = play_episodes(envs, rows, sampler, codec, max_turns=6, max_episode_tokens=2000,
                                 max_turn_tokens=64, allowed_actions=allowed_actions)
        for e in envs:
            e.close()
        return episodes

    restricted = play(search_then_click)
    assert sum(len(ep.steps) for ep in restricted) > len(rows)  # past the search page
    assert all(step.info["action_valid"] for ep in restricted for step in ep.steps)
    assert sum(ep.invalid_actions for ep in play(None)) > 0  # the same policy, free, clicks what is not there


def test_trainer_samples_only_the_listed_actions_on_an_avalon_seat(tmp_path):
    """Restricted sampling reads only ``info["allowed_actions"]``: it works on a game as on a shop."""
    import arena  # noqa: F401 - registers evolver/AvalonSeat-v0
    from evolver_train.config import EvolverGRPOConfig
    from evolver_train.policy import TinyPolicyConfig, build_policy
    from evolver_train.trainer import EvolverGRPOTrainer

    kwargs = {"num_players": 5, "opponents": "random", "deal_key": "allowed-actions-test"}

    def make_env():
        return gym.make("evolver/AvalonSeat-v0", **kwargs)

    env = make_env()
    tasks = env.unwrapped.tasks("train")[:4]
    # No extra texts: the tiny tokenizer's corpus holds the env's listed actions (it has no oracle).
    model, tok = build_policy("tiny", env=env, tasks=tasks, seed=0,
                              size=TinyPolicyConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                    intermediate_size=64))
    env.close()

    def play(allowed_actions_only):
        config = EvolverGRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=4,
                                   max_steps=1, max_turns=10, max_episode_tokens=4000, max_turn_tokens=12,
                                   max_observation_tokens=48, report_to="none", save_strategy="no", rollout_seed=1,
                                   disable_tqdm=True, allowed_actions_only=allowed_actions_only)
        trainer = EvolverGRPOTrainer(model, config, make_env, tasks=tasks, processing_class=tok)
        trainer.model.eval()
        rows = trainer._row_specs([trainer.train_dataset[0]["prompt"]] * 4, "train")
        return trainer._play(rows, trainer._generate_fn(1.0, 0)), trainer.codec

    episodes, codec = play(True)
    restricted_steps = 0
    for ep in episodes:
        before = [ep.reset_info] + [step.info for step in ep.steps[:-1]]  # the info each action answered
        for info, step in zip(before, ep.steps):
            listed = info["allowed_actions"]
            if listed is None:  # discussion: any text is speech, sampling is free
                continue
            # The sampled tokens are exactly one listed action's (the tokenizer writes it in lower case).
            assert codec.action_ids(step.action) in [codec.action_ids(a) for a in listed], (step.action, listed)
            assert step.action in {a.lower() for a in listed} and step.info["action_valid"], step.action
            restricted_steps += 1
        assert ep.restricted  # the positions sampled under the restriction are recorded for the loss
    assert restricted_steps >= len(episodes)
    # The same untrained policy, free, says what the game does not accept.
    free, _ = play(False)
    assert sum(ep.invalid_actions for ep in free) > 0


def test_a_listed_action_the_tokenizer_cannot_spell_is_refused_by_name():
    model, tok = tiny_policy()
    codec = ChatCodec(tok)
    rows = [RowSpec(task=GuessEnv().tasks()[0].to_dict(), seed=0, group=0)]
    with pytest.raises(ValueError, match="'guess\\[zebra\\]', which the tokenizer cannot spell"):
        play_episodes([GuessEnv()], rows, _sampler(model, tok, 0), codec, max_turns=1, max_episode_tokens=100,
                      max_turn_tokens=8, allowed_actions=lambda info: ["guess[3]", "guess[zebra]"])
