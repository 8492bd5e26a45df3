"""The tiny policy's tokenizer: an unseen product's id is made of pieces the policy trained on."""

from __future__ import annotations

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_train.policy import build_environment_tokenizer, build_word_tokenizer
from evolver_train.sft import collect_demonstrations


def test_mixed_letters_and_digits_are_spelled_while_words_stay_whole():
    tok = build_word_tokenizer(["search[red shoes]", "click[b0868kf3zb]", "z2-pink 16oz bottle, price lower than"])
    pieces = tok.convert_ids_to_tokens(tok("click[b0aq7zz1xy] red shoes", add_special_tokens=False)["input_ids"])
    assert pieces == ["click", "[", "b", "0", "a", "q", "7", "z", "z", "1", "x", "y", "]", "▁red", "▁shoes"]
    assert tok.unk_token not in pieces
    for text in ["click[b0aq7zz1xy]", "click[z2-pink]", "a 16oz bottle, price lower than 50.00"]:
        assert tok.decode(tok(text)["input_ids"]) == text.lower()


def test_the_click_on_a_held_out_product_uses_only_tokens_of_train_demonstrations():
    # Under the product split no dev product appears in a train goal. With one token per product id
    # the id of a dev product never occurs in training, so its embedding stays untrained and the
    # policy cannot copy it; spelled out, every piece of it does occur.
    env = gym.make("evolver/WebShop-v0", num_products=200, max_steps=8, goals="synthetic", split_scheme="product")
    train, dev = env.unwrapped.tasks("train"), env.unwrapped.tasks("dev")
    tok = build_environment_tokenizer(env, train, episodes=8)

    def ids(text):
        return tok(text, add_special_tokens=False)["input_ids"]

    seen = {i for d in collect_demonstrations(env, train, 60, imperfect_share=0.0, seed=0) for s in d.steps
            for i in ids(s.action)}
    clicks = [s.action for d in collect_demonstrations(env, dev, 20, imperfect_share=0.0, seed=0) for s in d.steps
              if s.action.startswith("click[b0")]
    env.close()
    assert len(clicks) >= 10
    unseen = {a: [t for t in tok.convert_ids_to_tokens(ids(a)) if tok.convert_tokens_to_ids(t) not in seen]
              for a in clicks}
    assert not any(unseen.values()), unseen


def test_spell_ids_false_keeps_one_token_per_product_id_for_recipes_measured_with_it():
    texts = ["search[red shoes]", "click[b0868kf3zb]", "z2-pink 16oz bottle"]
    whole = build_word_tokenizer(texts, spell_ids=False)
    assert whole.convert_ids_to_tokens(whole("click[b0868kf3zb]", add_special_tokens=False)["input_ids"]) == [
        "click", "[", "b0868kf3zb", "]"]
    # an id it never saw is one unknown token: the reason spelled ids are the default
    assert whole.unk_token in whole.convert_ids_to_tokens(whole("click[b0aq7zz1xy]")["input_ids"])
    spelled = build_word_tokenizer(texts)
    assert spelled.unk_token not in spelled.convert_ids_to_tokens(spelled("click[b0aq7zz1xy]")["input_ids"])


def test_the_quickstarts_spell_product_ids_to_reach_held_out_products():
    from pathlib import Path

    from evolver_train.train_cli import parse_config

    root = Path(__file__).resolve().parents[2]
    from evolver_train.sft import SFTConfig

    quickstart = parse_config(["--config", str(root / "configs" / "quickstart.yaml")]).train.sft
    product = parse_config(["--config", str(root / "configs" / "quickstart_product.yaml")]).train.sft
    assert SFTConfig(**quickstart).spell_ids is True and SFTConfig(**product).spell_ids is True


def test_whole_word_texts_make_other_words_of_known_pieces_and_decode_exactly():
    tok = build_word_tokenizer(["search[red bookcases]", "walnut bookcases"], whole_word_texts=["search[red book]"])
    pieces = tok.convert_ids_to_tokens(tok("search[red bookcases] walnut", add_special_tokens=False)["input_ids"])
    # "bookcases" is not a whole token: the longest known prefix, then letters; nothing is <unk>
    assert pieces[:4] == ["search", "[", "red", "▁book"] and tok.unk_token not in pieces
    assert "▁bookcases" not in tok.get_vocab() and "▁walnut" not in tok.get_vocab()
    for text in ["search[red bookcases]", "walnut bookcases, 16oz"]:
        assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text


def test_whole_word_min_count_leaves_no_untrained_token_in_a_held_out_instruction():
    # Under the product split a dev goal's noun can be a word no train goal uses. With a token per
    # vocabulary word it gets one whose embedding training never touches, and the policy never copies
    # it into its search (0 of 53 such words kept over 150 dev searches). Counted from the training
    # texts, every dev instruction is made of tokens that train instructions and pages contain.
    env = gym.make("evolver/WebShop-v0", num_products=200, max_steps=8, goals="synthetic", split_scheme="product")
    train, dev = env.unwrapped.tasks("train"), env.unwrapped.tasks("dev")
    demos = collect_demonstrations(env, train, 200, imperfect_share=0.0, seed=0)
    untrained = {}
    for count in (0, 30):
        tok = build_environment_tokenizer(env, train, episodes=8, whole_word_min_count=count)

        def ids(text, tok=tok):
            return tok(text, add_special_tokens=False)["input_ids"]

        seen = {i for d in demos for s in d.steps for i in [*ids(s.observation), *ids(s.action)]}
        untrained[count] = {t for task in dev for t in tok.convert_ids_to_tokens(ids(task.instruction))
                            if tok.convert_tokens_to_ids(t) not in seen}
    env.close()
    assert len(untrained[0]) >= 5, untrained[0]  # the whole-word tokenizer: dev-only words (the failure)
    assert not untrained[30], untrained[30]
    with pytest.raises(ValueError, match="whole_word_min_count must be >= 0, got -1"):
        build_environment_tokenizer(env, train, episodes=1, whole_word_min_count=-1)
