"""Page rendering: upstream's exact text strings, clickables, and the other observation modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolver_gym.webshop import WebShopEnv

FIXTURE = Path(__file__).parent / "fixtures" / "real_schema"
INSTR = "i need a pair of pink loafers for teen girls. they should be size eight"


@pytest.fixture()
def env():
    env = WebShopEnv(data_dir=str(FIXTURE))
    task = next(t for t in env.tasks("train") if t.goal["asin"] == "B0FIX00001")
    obs, info = env.reset(options={"task": task})
    env.instruction = info["instruction"]
    assert info["instruction"].startswith(INSTR)
    return env


def test_text_pages_exact(env):
    i = env.instruction
    assert env.step("click[search]")[4]["action_valid"] is False  # upstream: clicking search does nothing
    obs, _, _, _, info = env.step("search[pink loafers memory foam]")
    assert obs.startswith(f"Instruction: [SEP] {i} [SEP] Back to Search [SEP] Page 1 (Total results: ")
    assert (
        " [SEP] Next > [SEP] B0FIX00001 [SEP] Trailwise Women's Slip-On Loafers Memory Foam Comfort Flats"
        " [SEP] $17.99 to $25.99" in obs
    )
    assert info["available_actions"]["clickables"][:2] == ["back to search", "next >"]
    assert "b0fix00001" in info["available_actions"]["clickables"]
    obs, _, _, _, info = env.step("click[B0FIX00001]")  # arguments are lower-cased
    assert obs == (
        f"Instruction: [SEP] {i} [SEP] Back to Search [SEP] < Prev [SEP] color [SEP] z2-pink [SEP] "
        "black | white [SEP] size [SEP] 7 [SEP] 8 [SEP] Trailwise Women's Slip-On Loafers Memory Foam "
        "Comfort Flats [SEP] Price: $17.99 to $25.99 [SEP] Rating: N.A. [SEP] Description [SEP] "
        "Features [SEP] Reviews [SEP] Buy Now"
    )
    assert info["available_actions"] == {
        "has_search_bar": False,
        "clickables": [
            "back to search",
            "< prev",
            "description",
            "features",
            "reviews",
            "buy now",
            "z2-pink",
            "black | white",
            "7",
            "8",
        ],
    }
    obs2, *_ = env.step("click[z2-pink]")
    assert obs2 == obs  # text mode does not show the chosen option
    obs, _, _, _, info = env.step("click[features]")
    assert (
        obs
        == f"Instruction: [SEP] {i} [SEP] Back to Search [SEP] < Prev [SEP] Memory foam insole"
        " [SEP] Rubber sole for grip"
    )
    assert info["available_actions"]["clickables"] == ["back to search", "< prev"]  # no Buy Now on sub-pages
    assert not env.step("click[buy now]")[4]["action_valid"]
    obs, *_ = env.step("click[< prev]")
    assert obs == obs2 and env.unwrapped._state.options == {"color": "z2-pink"}  # options survive sub-pages
    obs, *_ = env.step("click[description]")
    assert obs.endswith("< Prev [SEP] Soft loafers for all-day walking.")
    env.step("click[< prev]")
    env.step("click[8]")
    obs, reward, terminated, _, info = env.step("click[buy now]")
    assert terminated and reward == 1.0
    assert obs.startswith("Thank you for shopping with us!") and obs.endswith(
        "Your score (min 0.0, max 1.0) [SEP] 1.0"
    )


def test_search_works_on_any_page_and_navigation(env):
    env.step("search[loafers]")
    env.step("click[b0fix00001]")
    obs, _, _, _, info = env.step("search[usb charger]")  # from an item page
    assert info["action_valid"] and "B0FIX00005" in obs
    obs, _, _, _, info = env.step("click[next >]")
    assert "Page 2" in obs and info["available_actions"]["clickables"][:3] == [
        "back to search",
        "< prev",
        "next >",
    ]
    obs, *_ = env.step("click[< prev]")
    assert "Page 1" in obs
    obs, _, _, _, info = env.step("click[back to search]")
    assert obs.startswith("WebShop [SEP] Instruction:") and info["available_actions"]["has_search_bar"]


def test_text_rich_url_html_modes():
    env = WebShopEnv(data_dir=str(FIXTURE), observation_mode="text_rich")
    task = next(t for t in env.tasks("train") if t.goal["asin"] == "B0FIX00001")
    env.reset(options={"task": task})
    env.step("search[loafers]")
    env.step("click[b0fix00001]")
    obs, *_ = env.step("click[z2-pink]")
    assert obs.startswith("You have clicked z2-pink.\n")
    assert "[clicked button] z2-pink [clicked button_]" in obs and "  [button] 8 [button_]" in obs
    assert "[button] Buy Now [button_]" in obs
    obs, *_ = env.step("click[< prev]")
    assert "[clicked button] B0FIX00001 [clicked button_]" in obs  # visited products are marked

    url = WebShopEnv(data_dir=str(FIXTURE), observation_mode="url")
    url.reset(options={"task": task})
    url.step("search[loafers]")
    obs, *_ = url.step("click[b0fix00001]")
    assert obs.startswith("http://127.0.0.1:3000/item_page/") and "/B0FIX00001/" in obs

    html = WebShopEnv(data_dir=str(FIXTURE), observation_mode="html")
    obs, _ = html.reset(options={"task": task})
    assert 'id="search_input"' in obs and 'id="instruction-text"' in obs
    html.step("search[loafers]")
    obs, *_ = html.step("click[b0fix00001]")
    assert '<input type="radio" name="option" value="z2-pink">' in obs and 'class="btn"' in obs


def test_silent_invalid_actions_when_feedback_disabled():
    env = WebShopEnv(num_products=200, invalid_action_feedback=False)
    obs, _ = env.reset(seed=0)
    obs2, _, _, _, info = env.step("click[nothing here]")
    assert obs2 == obs and not info["action_valid"] and "nothing here" in info["error"]
