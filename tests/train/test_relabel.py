"""Relabelled demonstrations: the instruction's content words get other words, consistently, so they must be copied."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_train.envs import shape_environment
from evolver_train.errors import ConfigError
from evolver_train.policy import environment_vocabulary
from evolver_train.relabel import WordRelabeller
from evolver_train.sft import SFTConfig, collect_demonstrations, train_sft

ENV_KWARGS = {"num_products": 200, "max_steps": 8, "goals": "synthetic"}
SHAPING = ["drop_repeated_instruction", "numbered_results"]
TOKEN = re.compile(r"[a-z0-9]+|[^a-z0-9]", re.IGNORECASE)


@pytest.fixture(scope="module")
def shop():
    env = shape_environment(gym.make("evolver/WebShop-v0", **ENV_KWARGS), SHAPING)
    demos = collect_demonstrations(env, env.unwrapped.tasks("train"), 80, imperfect_share=0.0, seed=0)
    vocabulary = environment_vocabulary(env)
    env.close()
    return demos, vocabulary


def _text(demo) -> str:
    return "\n".join(s.observation + "\n" + s.action for s in demo.steps)


def _swaps(before: str, after: str) -> dict[str, set[str]]:
    """old word -> the words it became; the two texts must differ in whole words only."""
    old, new = TOKEN.findall(before), TOKEN.findall(after)
    assert len(old) == len(new)
    swaps: dict[str, set[str]] = {}
    for a, b in zip(old, new):
        if a != b:
            assert a.lower() != b.lower()  # a swapped word is a different word, not a case change
            swaps.setdefault(a.lower(), set()).add(b.lower())
    return swaps


def test_every_content_word_of_the_instruction_gets_one_new_word_throughout(shop):
    demos, vocabulary = shop
    relabeller = WordRelabeller.from_demonstrations(demos, vocabulary, share=1.0)
    assert {"search", "buy", "now", "price", "lower", "than", "dollars", "with", "and"} <= relabeller.structural
    swapped = 0
    for demo in demos:
        new = relabeller.relabel(demo, np.random.default_rng(0))
        content = {w.lower() for w in re.findall(r"[a-z]{3,}", demo.task.instruction, flags=re.IGNORECASE)
                   if re.fullmatch(r"[a-z]{3,}", w, flags=re.IGNORECASE)} - relabeller.structural
        swaps = _swaps(_text(demo), _text(new))
        assert set(swaps) <= content  # only the instruction's content words change ...
        assert all(len(v) == 1 for v in swaps.values())  # ... each into one word, everywhere it occurs
        assert len({next(iter(v)) for v in swaps.values()}) == len(swaps)  # two words never merge
        already = set(re.findall(r"[a-z]+", _text(demo).lower()))
        for (replacement,) in swaps.values():  # a vocabulary word the demonstration did not hold: no ambiguity
            assert replacement in relabeller.pool and replacement not in already
        swapped += len(swaps)
        # the copy is still there to learn: the search repeats the instruction on the first page,
        # and each option click names a value on the page it is clicked from
        assert new.steps[0].action.lower().removeprefix("search[").rstrip("]") in new.steps[0].observation.lower()
        for step in new.steps[1:]:
            value = step.action[len("click["):-1]
            assert value.lower() in step.observation.lower()
        assert [s.action for s in new.steps][-1] == "click[buy now]"
    assert swapped > 2 * len(demos)


def test_relabelling_is_seeded_fresh_per_batch_and_leaves_its_input_alone(shop):
    demos, vocabulary = shop
    relabeller = WordRelabeller.from_demonstrations(demos, vocabulary, share=0.5)
    demo = max(demos, key=lambda d: len(d.task.instruction))
    before = _text(demo)
    first = _text(relabeller.relabel(demo, np.random.default_rng(3)))
    assert first == _text(relabeller.relabel(demo, np.random.default_rng(3)))
    others = {_text(relabeller.relabel(demo, np.random.default_rng(seed))) for seed in range(10)}
    assert len(others) > 5  # fresh words each time the demonstration is batched
    assert _text(demo) == before
    # a share of 0.5 swaps about half of the content words that a share of 1 swaps
    every = WordRelabeller.from_demonstrations(demos, vocabulary, share=1.0)
    half = [len(_swaps(_text(d), _text(relabeller.relabel(d, np.random.default_rng(i))))) for i, d in enumerate(demos)]
    full = [len(_swaps(_text(d), _text(every.relabel(d, np.random.default_rng(i))))) for i, d in enumerate(demos)]
    assert 0.3 < sum(half) / sum(full) < 0.7


def test_bad_shares_are_refused_with_the_value():
    with pytest.raises(ValueError, match=r"share must be in \(0, 1\], got 0"):
        WordRelabeller(["violet"], share=0)
    with pytest.raises(ValueError, match="no word of three or more letters"):
        WordRelabeller(["ab", "b0123", "red"], share=0.5, structural=["red"])
    with pytest.raises(ConfigError, match=r"relabel_words must be in \[0, 1\], got 1.5"):
        SFTConfig(relabel_words=1.5)


def test_warm_start_with_relabelled_words_trains_and_records_it(tmp_path, shop):
    demos, _ = shop
    out = train_sft(SFTConfig(output_dir=str(tmp_path / "w"), env_kwargs=ENV_KWARGS, max_minutes=0, hidden_size=32,
                              num_hidden_layers=1, num_attention_heads=2, observation_shaping=SHAPING,
                              batch_size=8, max_steps=2, relabel_words=0.5),
                    demonstrations=list(demos))
    assert (out / "model.safetensors").exists()
    assert '"relabel_words": 0.5' in (out / "sft_config.json").read_text()
