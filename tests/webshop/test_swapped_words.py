"""``SwappedWords``: a swapped episode is the same shop in other words; a plain one is untouched."""

from __future__ import annotations

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_gym.webshop.shaping import NumberedResults, SwappedWords, TopResults, observation_shaper

KWARGS = {"num_products": 200, "max_steps": 10}


def _env():
    return SwappedWords(NumberedResults(TopResults(gym.make("evolver/WebShop-v0", **KWARGS), k=5)))


def _plain():
    return NumberedResults(TopResults(gym.make("evolver/WebShop-v0", **KWARGS), k=5))


def _express(env, action):
    return env.env.express_action(action) if hasattr(env.env, "express_action") else action


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_a_swapped_episode_is_the_plain_one_in_other_words(index):
    env, plain = _env(), _plain()
    task = env.unwrapped.tasks("dev")[index]
    obs, info = env.reset(seed=3, options={"task": task, "swap_words": True})
    ref_obs, ref_info = plain.reset(seed=3, options={"task": task})
    assert info["swapped_words"] and obs != ref_obs
    assert env.swap(obs) == ref_obs and env.swap(info["instruction"]) == ref_info["instruction"]
    swapped = {a for pair in info["swapped_words"] for a in pair}
    instruction_words = swapped & set(ref_info["instruction"].lower().split())
    assert instruction_words and not (instruction_words & set(info["instruction"].lower().split()))
    for action in env.unwrapped.oracle(task):
        action = _express(plain, action)
        obs, reward, terminated, _, info = env.step(env.swap(action))  # the policy writes in the swapped words
        ref_obs, ref_reward, _, _, ref_info = plain.step(action)
        assert env.swap(obs) == ref_obs and reward == ref_reward
        if "available_actions" in ref_info:
            assert [env.swap(c) for c in info["available_actions"]["clickables"]] == \
                ref_info["available_actions"]["clickables"]
            # The allowed actions are the swapped clicks, the ones this episode's policy writes.
            assert info["allowed_actions"] == (None if ref_info["allowed_actions"] is None else
                                               [f"click[{c}]" for c in info["available_actions"]["clickables"]])
            assert info["allowed_actions"] is None or [env.swap(a) for a in info["allowed_actions"]] == \
                ref_info["allowed_actions"]
    assert terminated and reward == ref_reward


def test_without_the_option_nothing_changes_and_the_same_seed_swaps_the_same_words():
    env, plain = _env(), _plain()
    task = env.unwrapped.tasks("train")[5]
    obs, info = env.reset(seed=1, options={"task": task})
    assert (obs, "swapped_words" in info) == (plain.reset(seed=1, options={"task": task})[0], False)
    assert env.step("search[red shoes]")[0] == plain.step("search[red shoes]")[0]
    first = env.reset(seed=7, options={"task": task, "swap_words": True})[1]["swapped_words"]
    other = env.reset(seed=8, options={"task": task, "swap_words": True})[1]["swapped_words"]
    again = env.reset(seed=7, options={"task": task, "swap_words": True})[1]["swapped_words"]
    assert first == again and first != other


def test_model_output_never_crashes_a_swapped_episode():
    env = _env()
    env.reset(seed=0, options={"split": "dev", "index": 0, "swap_words": True})
    for action in ["", "click[]", "search[" + "x" * 500 + "]", "\x00\u202e", "click[Back to Search]", "buy"]:
        obs, _, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and "action_valid" in info
        if terminated or truncated:
            env.reset(seed=0, options={"split": "dev", "index": 0, "swap_words": True})


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="min_length must be an int >= 1, got 0"):
        SwappedWords(gym.make("evolver/WebShop-v0", **KWARGS), min_length=0)
    with pytest.raises(ValueError, match="needs a WebShop environment with a catalog"):
        SwappedWords(gym.make("CartPole-v1"))
    assert isinstance(observation_shaper("swap_words")(gym.make("evolver/WebShop-v0", **KWARGS)), SwappedWords)


def test_rollout_options_reach_training_rows_only(tmp_path):
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from evolver_train.config import EvolverGRPOConfig
    from evolver_train.trainer import EvolverGRPOTrainer
    from tests.train.fixtures import GuessEnv, tiny_policy

    model, tok = tiny_policy()
    cfg = EvolverGRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=4, max_steps=1,
                            report_to="none", rollout_options='{"swap_words": true}', save_strategy="no")
    trainer = EvolverGRPOTrainer(model, cfg, GuessEnv, tasks=GuessEnv().tasks(), processing_class=tok)
    prompts = [trainer.train_dataset[0]["prompt"]] * 4
    assert all(row.reset_options()["swap_words"] is True for row in trainer._row_specs(prompts, "train"))
    assert not any("swap_words" in row.reset_options() for row in trainer._row_specs(prompts, "eval"))
