"""WebShop reward parity with the reference's ``get_reward``, measured on whole generated catalogs.

The reference formula is written out here from its specification (title nouns from spaCy, the
``r_type`` overrides, fuzzy attribute and colour-normalised option matches), and fed spaCy's own
noun tags for two catalogs the default tagger's weights were not learnt from (catalog seed 0 with
1,000 products, seed 1007 with 300; recorded by scripts/build_webshop_nouns.py, which learns from
seeds 1-100). Every purchase of ``tests/webshop/parity.py`` (right, partly right and wrong options on
the target, a same-category and a random product) is scored both ways.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evolver_gym.webshop.catalog import load_catalog
from evolver_gym.webshop.env import WebShopEnv
from evolver_gym.webshop.normalize import COLOR_SET, normalize_color, token_set_ratio
from evolver_gym.webshop.pages import option_name_of_click
from evolver_gym.webshop.policies import option_clicks
from evolver_gym.webshop.reward import NounTagger, get_option_reward, get_reward
from evolver_gym.webshop.world import get_world

from .parity import purchases

DATA = Path(__file__).parent / "data"
TAGS = json.loads((DATA / "spacy_nouns_seed0.json").read_text())
UNSEEN = json.loads((DATA / "spacy_nouns_unseen_seed1007.json").read_text())


def spec_reward(product, goal, price, options, nouns) -> float:
    """The reference's purchase reward, from its specification; ``nouns(title)`` are spaCy's tags."""
    bought, wanted = nouns(product["name"]), nouns(goal["name"])
    title_score = len(set(bought) & set(wanted)) / len(wanted) if wanted else 0.2
    crumbs = [{c.strip() for c in x["product_category"].split("›")} for x in (product, goal)]
    matched = product["query"] == goal["query"] or len(crumbs[0] & crumbs[1]) >= 2 or title_score > 0.2
    r_type = 0.0 if title_score == 0 else 0.1 if title_score < 0.1 else 1.0 if matched else 0.5
    texts = (product["Title"].lower(), " ".join(product["BulletPoints"]).lower(), product["Description"].lower())
    n_att = sum(
        any(token_set_ratio(have, want) > 85 for have in product["Attributes"]) or any(want in t for t in texts)
        for want in goal["attributes"]
    )
    wanted_opts = goal["goal_options"]
    wanted_opts = list(wanted_opts.items()) if isinstance(wanted_opts, dict) else wanted_opts
    chosen = [normalize_color(v) for v in options.values()]
    n_opt = sum(any(token_set_ratio(c, normalize_color(w)) > 85 for c in chosen) for w in wanted_opts)
    r_price = goal["price_upper"] > 0 and price <= goal["price_upper"]
    return r_type * (n_att + n_opt + r_price) / (len(goal["attributes"]) + len(wanted_opts) + 1)


@pytest.fixture(scope="module")
def world():
    return get_world(num_products=1000, seed=0)


@pytest.fixture(scope="module")
def rows(world):
    return purchases(world.catalog, seed=0)


@pytest.fixture(scope="module")
def unseen():
    return load_catalog(num_products=300, seed=1007)


def test_recorded_tags_cover_the_catalogs(world, unseen):
    for catalog, tags in ((world.catalog, TAGS), (unseen, UNSEEN)):
        missing = {p["name"] for p in catalog.products} - set(tags["nouns"])
        assert not missing, f"titles changed; rerun scripts/build_webshop_nouns.py: {sorted(missing)[:3]}"


def test_purchases_cover_right_partial_and_wrong_choices(world, rows):
    """9 purchases per goal; on the target the right options all match, the partly right ones miss
    one, the wrong ones match none; the second product is of the goal's category."""
    catalog = world.catalog
    assert len(rows) == 9 * len(catalog.goals)
    tagger = world.tagger
    score = [get_reward(catalog.by_asin[a], g, catalog.prices[a], o, tagger)[1] for g, a, o in rows[:900]]
    right, partial, wrong = score[0::9], score[1::9], score[2::9]
    assert all(r.get("r_option", 1.0) == 1.0 for r in right)
    with_options = [i for i, r in enumerate(right) if "r_option" in r and r["r_option"] == 1.0]
    assert all(partial[i]["r_option"] < 1.0 for i in with_options)
    assert all(wrong[i]["r_option"] == 0.0 for i in with_options)
    same_category = {catalog.by_asin[rows[9 * k + 3][1]]["category"] == rows[9 * k][0]["category"] for k in range(100)}
    assert same_category == {True}


def _parity(catalog, rows, tagger, tags):
    same, worst = 0, 0.0
    for goal, asin, options in rows:
        product, price = catalog.by_asin[asin], catalog.prices[asin]
        ours = get_reward(product, goal, price, options, tagger)[0]
        theirs = spec_reward(product, goal, price, options, tags["nouns"].__getitem__)
        same += abs(ours - theirs) < 1e-9
        worst = max(worst, abs(ours - theirs))
    return same, worst


def test_default_reward_matches_the_reference_on_the_catalog(world, rows):
    """The figure recorded in benchmarks/RESULTS.md: exact matches of the default reward."""
    assert world.tagger.mode == "lexicon"
    same, worst = _parity(world.catalog, rows, world.tagger, TAGS)
    print(f"reward parity, seed 0: {same} / {len(rows)} exact ({100 * same / len(rows):.2f}%), largest {worst:.3f}")
    assert len(rows) > 6000 and same / len(rows) >= 0.999


def test_default_reward_matches_the_reference_on_an_unseen_small_catalog(unseen):
    """Seed 1007 (300 products), outside the tagger's training seeds: every purchase scores as the
    reference scores it. (The word list with one-token contexts used before missed 3 of these 1,899;
    over seeds 1002-1015 at 300 products it missed 16 purchases, the learnt tagger 4.)"""
    rows = purchases(unseen, seed=1007)
    same, worst = _parity(unseen, rows, NounTagger("lexicon"), UNSEEN)
    assert same == len(rows), f"{len(rows) - same} of {len(rows)} rewards differ, by up to {worst:.3f}"


def test_title_nouns_agree_with_spacy_on_unseen_titles():
    """Title by title, the offline tagger gives spaCy's noun list on at least 96% of the 837 unseen
    titles of both recorded catalogs (97.1%; the word list with one-token contexts used before: 93.1%)."""
    tagger = NounTagger("lexicon")
    titles = {**TAGS["nouns"], **UNSEEN["nouns"]}
    agree = sum(tagger(title) == nouns for title, nouns in titles.items())
    assert agree / len(titles) >= 0.96, (agree, len(titles))


def test_formula_is_the_specified_one_for_any_tagger(world, rows):
    """With the same noun tags on both sides the two formulas agree on every purchase."""
    tagger = NounTagger("fallback")
    by_asin, prices = world.catalog.by_asin, world.catalog.prices
    for goal, asin, options in rows[::7]:
        ours = get_reward(by_asin[asin], goal, prices[asin], options, tagger)[0]
        assert ours == pytest.approx(spec_reward(by_asin[asin], goal, prices[asin], options, tagger), abs=1e-12)


def test_default_tagger_counts_common_nouns(world):
    """The reference counts "men": the same audience gives a title overlap across product types."""
    goal = {"query": "a", "product_category": "x › y", "name": "Basic Jacket by Hollis for Men"}
    product = {"query": "b", "product_category": "x › z", "name": "Camdyn Relaxed Fit Hoodie for Men"}
    nouns = world.tagger
    assert "men" in nouns(goal["name"]) and "men" in nouns(product["name"])


def test_colour_list_is_the_references():
    assert {"dark", "light", "camo", "wine"} <= set(COLOR_SET) and "berry" not in COLOR_SET
    # "light grey" normalises to grey, "dark grey" to dark: a different colour, not a match.
    assert get_option_reward(["dark grey"], ["light grey"]) == (0.0, 0)
    assert get_option_reward(["light gray"], ["light grey"])[1] == 0  # gray and grey stay two words


PRODUCT_OPTIONS = {"Color": ["black", "white", "jet black"], "Pattern Name": ["black", "striped"]}


def test_a_click_goes_to_the_last_option_offering_the_value():
    assert option_name_of_click(PRODUCT_OPTIONS, "black") == "Pattern Name"
    assert option_name_of_click(PRODUCT_OPTIONS, "white") == "Color"
    assert option_name_of_click(PRODUCT_OPTIONS, "red") is None


def test_oracle_clicks_meet_goals_across_shared_values():
    """Black colour plus striped pattern: "black" would land in Pattern Name, so "jet black" is used."""
    clicks = option_clicks({"options": PRODUCT_OPTIONS}, {"Color": "black", "Pattern Name": "striped"})
    chosen = {}
    for click in clicks:
        value = click[len("click[") : -1]
        chosen[option_name_of_click(PRODUCT_OPTIONS, value)] = value
    assert chosen == {"Color": "jet black", "Pattern Name": "striped"}
    assert get_option_reward(list(chosen.values()), ["black", "striped"]) == (1.0, 2)


def test_env_stores_a_shared_value_under_the_last_option():
    """Generated catalogs never share a value across options, so one product is given such options."""
    env = WebShopEnv(num_products=50, seed=7)
    env.reset(seed=0, options={"split": "dev", "index": 0})
    product = env.unwrapped.catalog.by_asin[env.unwrapped._task.goal["asin"]]
    saved = product["options"]
    product["options"] = {name: list(values) for name, values in PRODUCT_OPTIONS.items()}
    try:
        state = env.unwrapped._state
        state.page, state.asin, state.options = "item", product["asin"], {}
        for value in ("white", "black", "jet black"):
            assert env.step(f"click[{value}]")[4]["action_valid"]
        assert env.unwrapped._state.options == {"Color": "jet black", "Pattern Name": "black"}
    finally:
        product["options"] = saved
        env.close()
