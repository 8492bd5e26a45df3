"""WebShop's shapers: numbered_results (products by position, click[N], the oracle replayed through it) and
mark_chosen_options."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401 - registers the environment ids
from evolver_gym.webshop.shaping import MarkChosenOptions, NumberedResults
from evolver_train.envs import express_action, shape_environment
from evolver_train.policy import environment_texts
from evolver_train.sft import collect_demonstrations

NUMBERED = ["drop_repeated_instruction", "top_results=5", "numbered_results"]
ID = re.compile(r"\bb0[a-z0-9]{8}\b", re.IGNORECASE)


def _shop(shaping=NUMBERED, **kwargs):
    return shape_environment(gym.make("evolver/WebShop-v0", num_products=200, max_steps=8, **kwargs), shaping)


def _results_page(env, task):
    env.reset(seed=0, options={"task": task})
    return env.step(env.unwrapped.oracle(task)[0])


def test_a_results_page_shows_positions_and_click_n_opens_the_nth_product():
    env, plain = _shop(), _shop(["drop_repeated_instruction", "top_results=5"])
    task = env.unwrapped.tasks("dev")[0]
    obs, _, _, _, info = _results_page(env, task)
    plain_obs, *_ = _results_page(plain, task)
    assert not ID.search(obs)  # no id left to copy
    groups = obs.split(" [SEP] ")
    assert [p for p in groups if p.isdigit()] == ["1", "2", "3", "4", "5"]
    ids = [p for p in plain_obs.split(" [SEP] ") if ID.fullmatch(p)]
    # the same page otherwise: each id replaced by its position
    assert obs == plain_obs.replace(ids[0], "1").replace(ids[1], "2").replace(ids[2], "3") \
        .replace(ids[3], "4").replace(ids[4], "5")
    obs, _, _, _, info = env.step("click[3]")
    plain_obs, *_ = plain.step(f"click[{ids[2].lower()}]")
    assert info["action_valid"] and obs == plain_obs and "Buy Now" in obs


def test_a_number_is_a_position_only_on_a_results_page():
    env = _shop()
    task = env.unwrapped.tasks("dev")[0]
    _results_page(env, task)
    _, _, _, _, info = env.step("click[6]")  # not shown: passed through as it is, and invalid
    assert info["action_valid"] is False
    item, *_ = env.step("click[1]")
    clickables = env.step("click[nothing]")[4]["available_actions"]["clickables"]
    assert "Buy Now" in item and "2" not in clickables
    obs, _, _, _, info = env.step("click[2]")  # on an item page "2" is not product 2
    assert info["action_valid"] is False and obs.startswith(item)


def test_an_id_click_still_works_and_the_invalid_action_feedback_names_positions():
    env = _shop()
    task = env.unwrapped.tasks("dev")[0]
    _, _, _, _, info = _results_page(env, task)
    assert not any(ID.fullmatch(c) for c in info["available_actions"]["clickables"])  # listed by position
    products = env.unwrapped._state.page_results()[:5]
    obs, _, _, _, info = env.step("click[nothing like this]")
    assert info["action_valid"] is False and "Invalid action" in obs and not ID.search(obs)
    obs, _, _, _, info = env.step(f"click[{products[-1]}]")
    assert info["action_valid"] is True and "Buy Now" in obs


@pytest.mark.parametrize("action", [None, 3, "", "click[]", "click[ 1 ]x", "click[" + "9" * 500 + "]"])
def test_model_output_never_crashes_it(action):
    env = _shop()
    _results_page(env, env.unwrapped.tasks("dev")[0])
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and reward == 0.0 and not terminated and info["action_valid"] is False


def test_the_oracle_replayed_in_the_shaped_interface_solves_its_tasks_by_position():
    env = _shop()
    tasks = env.unwrapped.tasks("train")
    demos = collect_demonstrations(env, tasks, 40, imperfect_share=0.0, seed=0)
    assert all(d.success for d in demos)
    product_clicks = [s.action for d in demos for s in d.steps[1:2]]
    by_position = [a for a in product_clicks if re.fullmatch(r"click\[[1-5]\]", a)]
    # the target is shown in the top five for most goals; otherwise the oracle clicks its id
    assert len(by_position) >= 30 and all(a in by_position or ID.search(a) for a in product_clicks)
    assert any(a == "click[1]" for a in by_position) and len(set(by_position)) > 1
    texts = environment_texts(env, tasks, episodes=8)
    assert any(re.fullmatch(r"click\[[1-5]\]", t) for t in texts)


def test_express_action_rewrites_only_ids_on_the_page():
    env = _shop()
    task = env.unwrapped.tasks("dev")[0]
    assert express_action(env, "click[b0aaaaaaaa]") == "click[b0aaaaaaaa]"  # no page yet
    _, _, _, _, info = _results_page(env, task)
    first = env.unwrapped._state.page_results()[0]
    assert express_action(env, f"click[{first.upper()}]") == "click[1]"
    assert express_action(env, "search[x]") == "search[x]"
    assert express_action(_shop(["top_results=5"]), "click[b0aaaaaaaa]") == "click[b0aaaaaaaa]"


def test_shaper_order_and_arguments_are_checked():
    with pytest.raises(ValueError, match="top_results must come before numbered_results"):
        _shop(["numbered_results", "top_results=5"])
    with pytest.raises(ValueError, match="'numbered_results=2'"):
        _shop(["numbered_results=2"])
    with pytest.raises(ValueError, match="separator must be a non-empty string, got ' '"):
        NumberedResults(gym.make("evolver/WebShop-v0", num_products=200), separator=" ")


def test_mark_chosen_options_marks_what_is_chosen_and_nothing_else():
    env, plain = _shop([*NUMBERED, "mark_chosen_options"]), _shop()
    task = next(t for t in env.unwrapped.tasks("dev") if len(t.goal["goal_options"]) >= 2)
    options = task.goal["goal_options"]  # a list in this shop's goals, a dict in the synthetic ones
    first, second = (f"click[{v}]" for v in list(options.values() if isinstance(options, dict) else options)[:2])
    for e in (env, plain):
        e.reset(seed=0, options={"task": task})
    item = None
    for action in (express_action(plain, a) for a in task.reference[:-1]):
        if action in (first, second):
            break
        item, *_ = env.step(action)
        plain.step(action)
    assert "(chosen)" not in item  # nothing chosen yet: the page is the plain one
    obs, _, _, _, info = env.step(first)
    plain_obs, *_ = plain.step(first)
    value = first[len("click["):-1]
    assert info["action_valid"]
    assert obs == plain_obs.replace(f" [SEP] {value} [SEP] ", f" [SEP] {value} (chosen) [SEP] ")
    obs, _, _, _, info = env.step(second)
    assert info["action_valid"] and obs.count("(chosen)") == 2
    # the marks follow the environment, which forgets the choices when the item page is left
    obs, *_ = env.step("click[< prev]")
    assert "(chosen)" not in obs
    # model output never crashes it; the mark is not part of a value
    env.reset(seed=0, options={"task": task})
    env.step(task.reference[0])
    env.step(express_action(env, task.reference[1]))  # the item page again
    for action in (None, "", "click[]", f"click[{value} (chosen)]"):
        obs, reward, terminated, _, info = env.step(action)
        assert isinstance(obs, str) and reward == 0.0 and not terminated and info["action_valid"] is False
    with pytest.raises(ValueError, match="mark must be a non-empty string, got ''"):
        MarkChosenOptions(_shop([]), mark="")
    with pytest.raises(ValueError, match="MarkChosenOptions needs an env with chosen_options, got CartPoleEnv"):
        MarkChosenOptions(gym.make("CartPole-v1"))


def test_rule_baseline_buys_the_same_product_through_numbered_results():
    from evolver_gym.webshop import rule_baseline

    task = _shop().unwrapped.tasks("dev")[0]
    bought = []
    for shaping in (["top_results=5"], NUMBERED):
        env = _shop(shaping)
        obs, info = env.reset(seed=0, options={"task": task})
        for _ in range(4):
            obs, _, terminated, _, info = env.step(rule_baseline(obs, info))
            if terminated:
                break
        assert terminated
        bought.append(info["evaluation"]["purchased"]["asin"])
    assert bought[0] == bought[1]
