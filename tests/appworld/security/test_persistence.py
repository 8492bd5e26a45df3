"""Nothing a cell does survives reset(): every episode runs in a fresh interpreter from a clean zygote."""

from __future__ import annotations

import os
import random

import pytest

from .conftest import answers_next_step

random.seed(1)
_FIRST_RANDOM = random.random()
# name -> (the patch an episode makes with allowed syntax, a probe, what the probe prints in a clean interpreter)
PERSISTENCE = {
    "math constant": ("import math\nmath.pi = 3", "import math\nprint(math.pi)", "3.141592653589793"),
    "decimal context": (
        "import decimal\ndecimal.getcontext().prec = 2",
        "import decimal\nprint(decimal.Decimal(1) / decimal.Decimal(3))",
        "0.3333333333333333333333333333",
    ),
    "Counter.most_common": (
        "import collections\ncollections.Counter.most_common = lambda self, n=None: [('forged', 1)]",
        "import collections\nprint(collections.Counter('aab').most_common(1))",
        '[["a", 2]]',
    ),
    "JSONEncoder.encode forging replies": (
        "import json\njson.JSONEncoder.encode = lambda self, o: '\"forged\"'",
        "import json\nprint(json.dumps({'a': 1}), 'phone' in [a['name'] for a in apis.api_docs."
        "show_app_descriptions()])",
        '{"a": 1} True',
    ),
    "JSONDecoder.decode": (
        "import json\njson.JSONDecoder.decode = lambda self, s, _w=None: 'forged'",
        "import json\nprint(json.loads('[1]'))",
        "[1]",
    ),
    "calendar first weekday": (
        "import calendar\ncalendar.setfirstweekday(6)",
        "import calendar\nprint(calendar.firstweekday())",
        "0",
    ),
    "random function": (
        "import random\nrandom.random = lambda: 0.5",
        "import random\nrandom.seed(1)\nprint(random.random())",
        repr(_FIRST_RANDOM),
    ),
    "Fraction method": (
        "import fractions\nfractions.Fraction.limit_denominator = lambda self, m=None: 'forged'",
        "import fractions\nprint(fractions.Fraction(1, 3).limit_denominator(10))",
        "1/3",
    ),
    "TextWrapper method": (
        "import textwrap\ntextwrap.TextWrapper.wrap = lambda self, text: ['forged']",
        "import textwrap\nprint(textwrap.wrap('a b', 1))",
        '["a", "b"]',
    ),
    "statistics function": (
        "import statistics\nstatistics.mean = lambda data: -1",
        "import statistics\nprint(statistics.mean([1, 3]))",
        "2",
    ),
    "a variable": ("backdoor = 'installed'", "print(backdoor)", None),
}


@pytest.fixture(scope="module")
def env(flavour):
    e = flavour.make(split="train", timeout_s=2.0)
    yield e
    e.close()


@pytest.mark.parametrize("name", sorted(PERSISTENCE))
def test_patch_does_not_survive_reset(env, name):
    patch, probe, clean = PERSISTENCE[name]
    env.reset(options={"split": "train", "index": 0})
    obs, *_, info = env.step(patch)
    assert info["action_valid"], obs
    answers_next_step(env)  # the patched interpreter still talks to the host correctly
    env.reset(options={"split": "train", "index": 1})
    obs, *_ = env.step(probe)
    if clean is None:
        assert "NameError" in obs, obs
    else:
        assert obs == clean + "\n", obs
    answers_next_step(env)


def test_all_patches_at_once_then_reset(env):
    env.reset(options={"split": "train", "index": 0})
    for patch, _, _ in PERSISTENCE.values():
        env.step(patch)
    env.reset(options={"split": "train", "index": 0})
    for name, (_, probe, clean) in PERSISTENCE.items():
        obs, *_ = env.step(probe)
        assert ("NameError" in obs) if clean is None else obs == clean + "\n", (name, obs)


def test_each_episode_has_its_own_process(env):
    env.reset(options={"split": "train", "index": 0})
    first = env._sandbox.pid
    env.reset(options={"split": "train", "index": 0})
    assert env._sandbox.pid != first
    assert not os.path.exists(f"/proc/{first}") or open(f"/proc/{first}/stat").read().split(")")[1].split()[0] == "Z"


def test_set_order_follows_the_seed(flavour):
    """The hash seed comes from the episode seed: two envs (two zygotes) print sets in the same order."""
    code = "print(list({'alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'}))"
    outs = []
    for _ in range(2):
        e = flavour.make(split="train")
        e.reset(options={"split": "train", "index": 0})
        outs.append(e.step(code)[0])
        e.close()
    assert outs[0] == outs[1]
    from evolver_gym.appworld.sandbox import Sandbox

    sb = Sandbox()
    orders = set()
    for seed in (100, 7, 100):
        sb.reset(seed=seed)
        orders.add(sb.execute(code, lambda *a: (404, {})).output)
    sb.close()
    assert outs[0] in orders and len(orders) == 2  # seed 7 hashes differently, seed 100 as before
