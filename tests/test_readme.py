"""The README: its Python examples run as written and do what they say; its commands, links and extras are real."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)

# The two commands a newcomer runs, exactly as the README must show them.
MAIN_JOB = "bash scripts/setup.sh && .venv/bin/evolver train --config configs/quickstart.yaml"
TESTS = "bash scripts/test.sh"


def _block(marker: str) -> str:
    found = [b for b in BLOCKS if marker in b]
    assert len(found) == 1, f"expected one README example containing {marker!r}, found {len(found)}"
    return found[0]


def _run(block: str, tmp_path, monkeypatch) -> dict:
    monkeypatch.chdir(tmp_path)  # files an example writes (an experience pool) land here
    namespace = {"__name__": "readme_example"}
    exec(compile(block, "README.md", "exec"), namespace)
    return namespace


def test_readme_has_the_three_examples():
    assert len(BLOCKS) == 3, [b.splitlines()[0] for b in BLOCKS]


def test_gym_make_example(tmp_path, monkeypatch, capsys):
    ns = _run(_block('gym.make("evolver/WebShop-v0", num_products=200)'), tmp_path, monkeypatch)
    assert ns["info"]["action_valid"] is True  # the search was a legal action
    assert ns["info"]["available_actions"]["clickables"], "a search lists results to click"
    assert capsys.readouterr().out.startswith("True ")


def test_wrappers_example_synthesises_tasks_learns_experience_and_labels_steps(tmp_path, monkeypatch, capsys):
    ns = _run(_block("SelfQuestioning"), tmp_path, monkeypatch)
    env = ns["env"]
    questioning = env.get_wrapper_attr("proposals")
    assert questioning >= 1, "the wrapper ran a synthesis cycle of its own"
    origins = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert len(origins) == 4 and "synthetic" in origins, origins  # a proposed task was played
    assert ns["info"]["attribution"]["labels"], "the last episode's steps are labelled"
    assert {step["label"] for step in ns["info"]["attribution"]["labels"]} <= {"GOOD", "BAD"}
    pool = env.get_wrapper_attr("pool")  # the outermost pool attribute: ExperienceContext's
    assert len(pool) >= 1, "the finished episodes were summarised into the experience pool"
    assert (tmp_path / "experience.db").exists()


def test_parallel_arena_example(tmp_path, monkeypatch, capsys):
    ns = _run(_block("avalon_v0.parallel_env"), tmp_path, monkeypatch)
    assert not ns["env"].agents, "the game ran to its end"
    rewards = ns["rewards"]
    assert sorted(rewards.values()) in ([-1.0, -1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, 1.0, 1.0, 1.0])
    assert ns["infos"]["player_0"]["winner"] in ("good", "evil")


def test_the_two_commands_are_shown_exactly():
    bash = "\n".join(re.findall(r"```bash\n(.*?)```", README, re.S))
    assert MAIN_JOB in bash.splitlines()
    assert TESTS in bash.splitlines()
    for path in ("scripts/setup.sh", "scripts/test.sh", "configs/quickstart.yaml"):
        assert (ROOT / path).is_file(), path


def test_every_extra_has_an_install_line():
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra in extras:
        assert re.search(rf'pip install -e "\.\[[a-z,]*\b{extra}\b[a-z,]*\]"', README), f"no install line for [{extra}]"
    assert "pip install -e .  " in README, "what a plain install gives"
    assert "download.pytorch.org/whl/cpu" in README, "how to get the CPU build of torch"


def test_relative_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to a missing file: {target}"


def test_short_and_free_of_commit_hashes():
    assert len(README.split()) < 1000
    # a commit hash: 7-40 hex characters with at least one digit and one letter, as a word of its own
    hashes = [w for w in re.findall(r"\b[0-9a-f]{7,40}\b", README) if re.search(r"\d", w) and re.search(r"[a-f]", w)]
    assert not hashes, hashes


def test_credits_are_in_the_readme_and_the_notice():
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")
    for name in ("AgentEvolver", "WebShop", "AppWorld", "AvalonBench", "BFCL"):
        assert name in README and name in notice, name
    assert "Apache License" in notice and "Affero" in notice
