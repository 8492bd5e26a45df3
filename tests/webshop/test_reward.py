"""Hand-computed WebShop reward cases: every component and every quirk."""

from __future__ import annotations

import pytest

from evolver_gym.webshop.normalize import COLOR_SET, full_process, normalize_color, token_set_ratio
from evolver_gym.webshop.reward import (
    NounTagger,
    get_attribute_reward,
    get_option_reward,
    get_reward,
    get_type_reward,
)

LEX = NounTagger("lexicon")

PRODUCT = {
    "asin": "B0TEST0001",
    "name": "Lumora Sulfate Free Shampoo for Dry Hair, 16 Fl Oz",
    "Title": "Lumora Sulfate Free Shampoo for Dry Hair, 16 Fl Oz",
    "query": "shampoos",
    "product_category": "Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos",
    "Description": "A gentle daily wash with argan oil.",
    "BulletPoints": ["COLOR SAFE: keeps dyed hair bright.", "Made in small batches."],
    "Attributes": ["paraben free", "essential oils", "cruelty free"],
    "options": {"scent": ["lavender", "navy blue"], "size": ["8 fl oz", "16 fl oz"]},
}


def goal(**changes):
    base = {
        "asin": "B0TEST0001",
        "query": "shampoos",
        "name": PRODUCT["name"],
        "product_category": PRODUCT["product_category"],
        "attributes": ["paraben free"],
        "goal_options": [],
        "price_upper": 20.0,
    }
    return {**base, **changes}


def test_fuzzy_matching_semantics():
    assert token_set_ratio("essential oil", "essential oils") > 85  # upstream test_goal case
    assert token_set_ratio("powder snow", "cool powder snow") == 100  # subset of tokens
    assert token_set_ratio("Sulfate-Free!", "sulfate free") == 100  # full_process: punctuation, case
    assert full_process("Café  Crème") == "caf  crme"  # thefuzz deletes Latin-1 code points
    assert token_set_ratio("sulfate free", "paraben free") <= 85
    assert token_set_ratio(None, "x") == 0
    assert isinstance(token_set_ratio("a b", "a c"), int)


def test_color_set_and_normalize_quirks():
    assert len(COLOR_SET) == 102 and list(COLOR_SET) == sorted(COLOR_SET)
    assert normalize_color("navy blue") == "blue"  # alphabetical: blue before navy
    assert normalize_color("dark blue") == "blue"
    assert normalize_color("rose gold") == "gold"
    assert normalize_color("standard") == "tan"  # substring hit
    assert normalize_color("washable") == "ash"
    assert normalize_color("z2-pink") == "pink"
    assert normalize_color("16 fl oz") == "16 fl oz"
    assert normalize_color(("color", "black")) == "black"  # tuple membership: exact element
    assert normalize_color(("size", "large")) == ("size", "large")


def test_attribute_reward_fuzzy_then_substring():
    # "essential oil" fuzzy-matches "essential oils"; "color safe" only by substring of the bullets;
    # "argan oil" only in the description; "sulfate free" in the title; "vegan" nowhere.
    assert get_attribute_reward(PRODUCT, ["essential oil"]) == (1.0, 1)
    assert get_attribute_reward(PRODUCT, ["color safe"]) == (1.0, 1)
    assert get_attribute_reward(PRODUCT, ["argan oil", "sulfate free"]) == (1.0, 2)
    assert get_attribute_reward(PRODUCT, ["vegan", "paraben free"]) == (0.5, 1)
    # Substring is literal: the fallback does not tolerate a missing letter.
    assert get_attribute_reward(PRODUCT, ["colour safe"]) == (0.0, 0)


def test_option_reward_lists_and_quirks():
    assert get_option_reward(["z2-pink", "8"], ["pink", "8"]) == (1.0, 2)  # upstream loafers example
    assert get_option_reward(["navy blue"], ["dark blue"]) == (1.0, 1)  # both normalise to "blue"
    assert get_option_reward(["black"], ["white"]) == (0.0, 0)
    assert get_option_reward([], ["white"]) == (0.0, 0)
    assert get_option_reward(["x"], []) == (None, 0)
    # One purchased option can satisfy several goal options (no consumption), as upstream.
    assert get_option_reward(["large"], ["large", "large"]) == (1.0, 2)


def test_option_reward_synthetic_tuples():
    # Synthetic goals compare (name, value) tuples: "size large" contains "large" -> 100.
    assert get_option_reward(["large", "black"], [("size", "large"), ("color", "black")]) == (1.0, 2)
    # ("color", "navy blue") is not normalised (not an element), but "blue" ⊂ "color navy blue".
    assert get_option_reward(["navy blue"], [("color", "navy blue")]) == (1.0, 1)


def test_type_reward_overrides_in_order():
    same = get_type_reward(PRODUCT, goal(), LEX)
    assert same == {"r_type": 1.0, "query_match": True, "category_match": True, "title_score": 1.0}
    other = {
        **PRODUCT,
        "name": "Voltix Usb Cable",
        "query": "usb cables",
        "product_category": "Electronics › Computers & Accessories › Cables › USB Cables",
    }
    assert get_type_reward(other, goal(), LEX)["r_type"] == 0.0  # no shared noun -> 0 overall
    # Nouns of the goal name, as spaCy tags it: lumora, sulfate, free, shampoo, dry, hair, fl, oz (8).
    # A conditioner for dry hair shares "dry" and "hair": 2/8 > 0.2, so r_type stays 1.0 even with
    # another query and a one-segment breadcrumb overlap.
    cond = {
        **PRODUCT,
        "name": "Velisse Conditioner for Dry Hair",
        "query": "conditioners",
        "product_category": "Beauty & Personal Care › Skin Care",
    }
    info = get_type_reward(cond, goal(), LEX)
    assert info["title_score"] == pytest.approx(2 / 8) and info["r_type"] == 1.0
    # 1 of 5 goal nouns shared -> title_score 0.2: not > 0.2 and no other match -> 0.5.
    goal5 = goal(name="Lumora Shampoo Hair Conditioner Wig")  # lumora shampoo hair conditioner wig
    wig = {**PRODUCT, "name": "Kindra Wig", "query": "wigs", "product_category": "X › Y"}
    info = get_type_reward(wig, goal5, LEX)
    assert info["title_score"] == pytest.approx(0.2) and info["r_type"] == 0.5
    # Duplicates count in the denominator: goal nouns [shampoo, shampoo, lumora, hair, wig, wig, ...].
    dup = goal(name="Shampoo Shampoo Shampoo Shampoo Shampoo Shampoo Shampoo Shampoo Shampoo Shampoo Wig")
    info = get_type_reward(wig, dup, LEX)
    assert info["title_score"] == pytest.approx(1 / 11) and info["r_type"] == 0.1
    # A goal name with no noun at all scores 0.2.
    assert get_type_reward(PRODUCT, goal(name="For & With"), LEX)["title_score"] == 0.2


def test_full_reward_formula_and_breakdown():
    g = goal(attributes=["paraben free", "vegan"], goal_options=["lavender", "16 fl oz"], price_upper=20.0)
    # 1 attribute + 2 options + price ok = 4 of 5.
    r, info = get_reward(PRODUCT, g, 15.0, {"scent": "lavender", "size": "16 fl oz"}, LEX)
    assert r == pytest.approx(4 / 5)
    assert info["r_att"] == 0.5 and info["r_option"] == 1.0 and info["r_price"] is True
    assert info["w_att"] == pytest.approx(2 / 5) and info["w_option"] == pytest.approx(2 / 5)
    assert info["w_price"] == pytest.approx(1 / 5)
    # Over budget: price term is 0; price equal to the bound still counts (<=).
    assert get_reward(PRODUCT, g, 20.01, {"scent": "lavender", "size": "16 fl oz"}, LEX)[0] == pytest.approx(
        3 / 5
    )
    assert get_reward(PRODUCT, g, 20.0, {"scent": "lavender", "size": "16 fl oz"}, LEX)[0] == pytest.approx(
        4 / 5
    )
    # No options chosen.
    assert get_reward(PRODUCT, g, 15.0, {}, LEX)[0] == pytest.approx(2 / 5)
    # r_type multiplies: a 0.5 type match halves the reward.
    wig = {**PRODUCT, "name": "Kindra Wig", "query": "wigs", "product_category": "X › Y"}
    g5 = {**g, "name": "Lumora Shampoo Hair Conditioner Wig"}
    r, info = get_reward(wig, g5, 15.0, {}, LEX)
    assert info["r_type"] == 0.5 and r == pytest.approx(0.5 * 2 / 5)


def test_goal_without_options_has_no_option_keys():
    r, info = get_reward(PRODUCT, goal(), 10.0, {"scent": "lavender"}, LEX)
    assert r == 1.0 and "r_option" not in info and "w_option" not in info


def test_synthetic_dict_goal_options_full_reward():
    g = goal(goal_options={"scent": "lavender", "size": "16 fl oz"})
    r, info = get_reward(PRODUCT, g, 10.0, {"scent": "lavender", "size": "16 fl oz"}, LEX)
    assert r == 1.0
    r, _ = get_reward(PRODUCT, g, 10.0, {"scent": "lavender", "size": "8 fl oz"}, LEX)
    # ("size", "16 fl oz") vs "8 fl oz": tokens {fl, oz} shared but 16 vs 8 differs -> <= 85.
    assert r == pytest.approx(3 / 4)


def test_fallback_tagger_is_flagged():
    r, info = get_reward(PRODUCT, goal(), 10.0, {}, NounTagger("fallback"))
    assert info["noun_tagger"] == "fallback" and r == 1.0
