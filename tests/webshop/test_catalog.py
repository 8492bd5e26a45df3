"""Loader semantics on a hand-written fixture in WebShop's real file schema, and the generator."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evolver_gym.webshop import WebShopEnv
from evolver_gym.webshop.catalog import Catalog, load_catalog, read_raw, tokenize
from evolver_gym.webshop.generator import FILE_NAMES, generate_raw, write_raw
from evolver_gym.webshop.goals import split_goals

FIXTURE = Path(__file__).parent / "fixtures" / "real_schema"


def test_loader_filters_and_derives_fields():
    catalog = Catalog(read_raw(FIXTURE), seed=0, goals="human", generated=False)
    assert [p["asin"] for p in catalog.products] == ["B0FIX00001", "B0FIX00002", "B0FIX00003", "B0FIX00005"]
    loafers, oils, bottle, charger = catalog.products
    assert loafers["query"] == "women's loafers & slip-ons"  # lower-cased and stripped
    assert loafers["pricing"] == [17.99, 25.99] and loafers["Price"] == "$17.99 to $25.99"
    assert loafers["options"] == {"color": ["z2-pink", "black | white"], "size": ["7", "8"]}
    assert loafers["option_to_image"]["z2-pink"] == "https://img.invalid/p.jpg"
    assert loafers["Attributes"] == ["memory foam", "rubber sole", "teen girls"]
    assert oils["BulletPoints"] == ["Therapeutic grade, 100% pure"] and oils["options"] == {}
    assert oils["Price"] == "$12.5"  # upstream formats the float as is
    assert bottle["pricing"] == [100.0] and bottle["Price"] == "$100.0"  # empty pricing means $100
    assert bottle["options"] == {"size": ["32 oz"]}  # a null option list is skipped
    assert bottle["Attributes"] == ["DUMMY_ATTR"]  # no items_ins_v2 record
    assert charger["options"]["style"] == ["1-pack", "2-pack"]
    assert 17.99 <= catalog.prices["B0FIX00001"] <= 25.99 and catalog.prices["B0FIX00002"] == 12.5
    assert "seller_id" not in loafers and loafers["Reviews"] == [] and loafers["Rating"] == "N.A."


def test_human_goals_from_real_schema():
    catalog = Catalog(read_raw(FIXTURE), seed=0, goals="human", generated=False)
    assert len(catalog.goals) == 4  # the instruction without attributes is skipped
    loafer = next(g for g in catalog.goals if g["asin"] == "B0FIX00001")
    assert re.fullmatch(
        r"i need a pair of pink loafers for teen girls\. they should be size eight"
        r", and price lower than \d+\.00 dollars",
        loafer["instruction_text"],
    )
    price = catalog.prices["B0FIX00001"]
    assert price < loafer["price_upper"] <= price + 40
    assert loafer["goal_options"] == ["pink", "8"] and loafer["attributes"] == ["teen girls"]
    assert loafer["name"].startswith("Trailwise") and loafer["query"] == "women's loafers & slip-ons"
    assert all(g["weight"] == 1 for g in catalog.goals)


def test_synthetic_goals_expand_option_combinations():
    catalog = Catalog(read_raw(FIXTURE), seed=0, goals="synthetic", generated=False)
    assert len(catalog.goals) == 4 + 2  # loafers: 2 colours x 2 sizes; charger: 2 styles
    first = catalog.goals[0]
    assert first["goal_options"] == {"color": "z2-pink", "size": "7"}
    assert first["instruction_text"].startswith(
        "Find me slip-on loafers with memory foam with color: z2-pink, and size: 7"
    )
    assert first["weight"] == pytest.approx(1 / 4)
    assert catalog.goals[-1]["weight"] == pytest.approx(1 / 2)


def test_env_on_real_files_solves_goals():
    env = WebShopEnv(data_dir=str(FIXTURE), num_products=1000)
    assert env.world.tagger.mode in {"fallback", "spacy"}
    for task in env.tasks("train"):
        env.reset(options={"task": task})
        for action in env.oracle(task):
            obs, reward, terminated, truncated, info = env.step(action)
        assert reward == 1.0, (task.goal, info["evaluation"])
        assert info["evaluation"]["noun_tagger"] == env.world.tagger.mode


def test_missing_files_name_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        read_raw(tmp_path)


def test_generator_writes_real_schema_and_round_trips(tmp_path):
    raw = generate_raw(120, seed=3)
    paths = write_raw(raw, tmp_path)
    assert {p.name for p in paths.values()} == set(FILE_NAMES.values())
    products = json.loads(paths["products"].read_text())
    for p in products:
        assert {
            "asin",
            "name",
            "full_description",
            "small_description",
            "pricing",
            "images",
            "customization_options",
            "category",
            "query",
            "product_category",
        } <= p.keys()
        assert len(p["asin"]) == 10
    human = json.loads(paths["human"].read_text())
    for records in human.values():
        for r in records:
            assert {
                "asin",
                "instruction",
                "instruction_attributes",
                "instruction_options",
                "attributes",
                "options",
                "assignment_id",
                "worker_id",
            } <= r.keys()
    from_files = Catalog(read_raw(tmp_path), seed=3)
    direct = load_catalog(num_products=120, seed=3)
    assert [g["instruction_text"] for g in from_files.goals] == [g["instruction_text"] for g in direct.goals]


def test_generator_is_seeded_and_diverse():
    a, b, c = generate_raw(300, seed=5), generate_raw(300, seed=5), generate_raw(300, seed=6)
    assert a.products == b.products and a.human == b.human
    assert a.products != c.products
    assert len({p["category"] for p in a.products}) == 5
    assert len({p["query"] for p in a.products}) >= 40  # ~65 families of 4-5 products


def test_generator_hard_negatives_exist():
    catalog = load_catalog(num_products=1000, seed=0)
    by_type: dict[str, list] = {}
    for p in catalog.products:
        by_type.setdefault(p["query"], []).append(p)
    # Near-duplicate titles: products of one type whose titles differ only in brand.
    dup = 0
    for products in by_type.values():
        stripped = [" ".join(p["Title"].split()[1:]) for p in products]
        dup += len(stripped) - len(set(stripped))
    assert dup >= 20


def test_splits_follow_upstream_shape():
    goals = [{"i": i} for i in range(12087)]
    splits = split_goals(goals)
    assert [len(splits[k]) for k in ("test", "dev", "train")] == [500, 1000, 10587]
    small = split_goals(goals[:300])
    assert [len(small[k]) for k in ("test", "dev", "train")] == [30, 60, 210]


def test_vocabulary_covers_observations():
    env = WebShopEnv(num_products=200)
    vocab = set(env.unwrapped.catalog.vocabulary())
    obs, info = env.reset(seed=0, options={"split": "dev", "index": 0})
    seen = [obs]
    for action in env.oracle(info["task"])[:-1] + ["click[description]", "click[< prev]", "click[features]"]:
        obs, *_ = env.step(action)
        seen.append(obs)
    missing = {t for o in seen for t in tokenize(o)} - vocab
    assert not missing, missing
