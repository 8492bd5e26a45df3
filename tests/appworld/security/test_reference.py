"""The reference solution, the tests and the world live in the host: no reward without solving."""

from __future__ import annotations

import importlib

import pytest

from .conftest import answers_next_step


@pytest.fixture(scope="module")
def env(flavour):
    e = flavour.make(split="train", timeout_s=2.0, max_steps=10**6)
    yield e
    e.close()


ATTEMPTS = [
    "import evolver_gym",
    "from evolver_gym.appworld import tasks",
    "apis.supervisor.show_reference()",
    "apis.admin.show_tests()",
    "print(apis.supervisor.show_active_task())",
    "print(apis.api_docs.show_api_descriptions(app_name='supervisor'))",
]


def test_worker_holds_no_reference_or_tests(env):
    """Scan every string in the worker's memory (as an escaped cell could) for the task's reference and tests."""
    env.reset(options={"split": "train", "index": 0})
    task = env._task
    needles = [line for line in task.reference[-1].splitlines() if len(line) > 25][:3]
    needles += [str(t.get("where") or t.get("label")) for t in task.goal["tests"]][:3]
    needles = [n for n in needles if len(n) > 12]
    assert needles
    reversed_needles = [n[::-1] for n in needles]  # reversed, so the probe's own code holds no copy
    out = env._sandbox._execute_unguarded(
        f"import gc\nwanted = {{n[::-1] for n in {reversed_needles!r}}}\n"
        "found = [o for o in gc.get_objects() if isinstance(o, (dict, list, tuple)) "
        "for s in (o.values() if isinstance(o, dict) else o) if isinstance(s, str) and s in wanted]\n"
        "print(len(found))",
        env._handler,
    ).output
    assert out == "0\n", out
    answers_next_step(env)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_no_reward_without_solving(env, index):
    env.reset(options={"split": "train", "index": index})
    for code in ATTEMPTS:
        obs, reward, terminated, *_ = env.step(code)
        assert reward == 0.0 and not terminated
    env.step("print('the task:', apis.supervisor.show_active_task()['instruction'])")
    *_, info = env.step("apis.supervisor.complete_task(answer='forged')")
    assert info["success"] is False and info["score"] == 0.0

def test_reference_files_unreadable_from_an_escaped_cell(env):
    env.reset(options={"split": "train", "index": 0})
    tasks_module = importlib.import_module(type(env).__module__.rsplit(".", 1)[0] + ".tasks")  # its scenarios

    out = env._sandbox._execute_unguarded(f"print(open({tasks_module.__file__!r}).read()[:50])", env._handler).output
    assert "PermissionError" in out
    answers_next_step(env)
