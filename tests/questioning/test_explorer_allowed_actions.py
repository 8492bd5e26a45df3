"""``RandomExplorer`` explores among ``info["allowed_actions"]`` where the environment lists them."""

from __future__ import annotations

import numpy as np

from evolver_gym.core import Task, UnicodeText
from wrappers.questioning.explorer import RandomExplorer

TASK = Task(task_id="t/0", env_id="t", instruction="switch on the lamp")


def _explorer(space=None):
    explorer = RandomExplorer(action_space=space)
    explorer.reset(TASK, np.random.default_rng(0))
    return explorer


def test_it_plays_each_listed_action_once_before_repeating_one():
    listed = ["toggle[0]", "toggle[1]", "submit"]
    explorer = _explorer(UnicodeText(20, examples=("never this",)))
    first = [explorer("", {"allowed_actions": listed}) for _ in range(3)]
    assert sorted(first) == sorted(listed)  # unseen actions first
    assert explorer("", {"allowed_actions": listed}) in listed


def test_free_text_samples_the_space_and_the_old_list_name_is_still_read():
    space = UnicodeText(20, examples=("say[hi]",))
    assert _explorer(space)("", {"allowed_actions": None}) == "say[hi]"  # free text: the action space
    assert _explorer(space)("", {"available_actions": ["toggle[0]"]}) == "toggle[0]"  # deprecated until 0.2
