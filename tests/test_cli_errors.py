"""Bad input through the real ``evolver`` command: one line naming the bad value, a non-zero exit,
and no file left behind.

Each case runs ``evolver_train.cli.main(argv)`` (the console script's function) in a fresh working
folder; a few run the installed entry point in a subprocess, as a user would.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evolver_gym.core.llm.testing import Fault
from evolver_train.cli import main

ROOT = Path(__file__).resolve().parent.parent
WEBSHOP = ["--env-id", "evolver/WebShop-v0"]
SMALL = ["--env-kwargs", '{"num_products": 100}']

# A valid small recipe (the cases below change one setting of it).
RECIPE = """\
model_name_or_path: tiny
env_id: evolver/WebShop-v0
env_kwargs: {num_products: 100}
max_steps: 1
per_device_train_batch_size: 4
num_generations: 2
report_to: none
"""

# (argv, a fragment the error line must contain). Files named here are never created by the test.
CASES = [
    # train / sft: the dispatcher's generic handler (config errors themselves are validated by train)
    (["train", "--config", "missing.yaml"], "'missing.yaml'"),
    (["train", "--config", "bad.yaml"], "YAML"),
    (["train", "--no_such_flag", "3"], "--no_such_flag"),
    (["sft", "--max_steps", "abc"], "'abc'"),
    (["sft", "--learning_rate", "fast"], "'fast'"),
    # eval
    (["eval", "--checkpoint", "oracle", "--env-id", "evolver/Nope-v0"], "Nope"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--k", "0"], "--k must be positive, got 0"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--num-tasks", "-3"], "--num-tasks must be positive, got -3"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--top-p", "2"], "--top-p must be in (0, 1], got 2.0"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--temperature", "-1"], "--temperature must be >= 0"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--config", "missing.yaml"], "'missing.yaml'"),
    (["eval", "--checkpoint", "no_such_ckpt", *WEBSHOP], "'no_such_ckpt'"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--experience", "on"], "--experience-uri"),
    (["eval", "--checkpoint", "oracle", "--k", "many"], "'many'"),
    (["eval", "--checkpoint", "oracle", "--env-id", "arena:evolver/AvalonSeat-v0", "--num-tasks", "1"],
     "has no reference actions"),
    # play
    (["play", "--env-id", "evolver/Nope-v0"], "Nope"),
    (["play", "--n", "200"], "--n 200 is more than the 140 tasks"),
    (["play", "--n", "0"], "--n must be positive, got 0"),
    (["play", "--split", "nosuch"], "'nosuch'"),
    # experience
    (["experience", "stats", "--uri", "missing.db"], "'missing.db'"),
    (["experience", "search", "--uri", "missing.db", "any query"], "'missing.db'"),
    (["experience", "export", "--uri", "missing.db", "--out", "x.jsonl"], "'missing.db'"),
    (["experience", "import", "--uri", "pool.db", "--in", "missing.jsonl"], "'missing.jsonl'"),
    (["experience", "build", "--uri", "pool.db", "--env-id", "evolver/Nope-v0"], "Nope"),
    (["experience", "build", "--uri", "pool.db", "--env-kwargs", "{bad"], "'{bad'"),
    (["experience", "build", "--uri", "pool.db", "--rollouts", "0"], "--rollouts must be positive, got 0"),
    (["experience", "build", "--uri", "pool.db", "--limit", "-2"], "--limit must be positive, got -2"),
    # questions
    (["questions", "synthesize", "--env-id", "evolver/Nope-v0", "--n", "5", "--out", "out"], "Nope"),
    (["questions", "synthesize", *WEBSHOP, "--n", "-1", "--out", "out"], "--n must be >= 0, got -1"),
    (["questions", "synthesize", *WEBSHOP, "--n", "5", "--out", "out", "--env-kwargs", "[1]"], "'[1]'"),
    (["questions", "synthesize", *WEBSHOP, *SMALL, "--n", "5", "--batch", "0"], "--batch must be positive"),
    (["questions", "synthesize", *WEBSHOP, "--n", "5", "--llm-proposer", "--llm-config", "no.yaml"], "'no.yaml'"),
    (["questions", "stats", "missing.sqlite"], "missing.sqlite"),
    # arena
    (["arena", "tournament", "--entrants", "rule,nosuch", "--games", "3", "--out", "out/r.jsonl"], "'nosuch'"),
    (["arena", "tournament", "--entrants", "rule", "--games", "0", "--out", "out"], "--games must be positive"),
    (["arena", "tournament", "--entrants", "rule", "--games", "abc"], "'abc'"),
    (["arena", "play", "--players", "3"], "3"),
    (["arena", "play", "--seats", "rule,rule"], "--seats lists 2 players"),
    # settings read from a recipe or a flag, checked against what they may be (issue 49, item 8)
    (["train", "--config", "recipe.yaml", "--env-kwargs", '{"num_product": 10}'],
     "env_kwargs: evolver/WebShop-v0 takes no argument 'num_product' (did you mean 'num_products'?)"),
    (["train", "--config", "unknown_kwarg.yaml"], "takes no argument 'colour'"),
    (["train", "--config", "recipe.yaml", "--num-generations", "0"], "num_generations must be >= 2, got 0"),
    (["train", "--config", "zero_generations.yaml"], "num_generations must be >= 2, got 0"),
    (["train", "--config", "cold.yaml"], "temperature must be >= 0, got -1.0"),
    (["train", "--config", "recipe.yaml", "--top-p", "1.5"], "top_p must be in (0, 1], got 1.5"),
    (["train", "--config", "recipe.yaml", "--seed", "-1"], "seed must be in [0, 4294967295], got -1"),
    (["train", "--config", "recipe.yaml", "--use-peft", "true", "--lora-r", "0"], "lora_r must be >= 1, got 0"),
    (["sft", "--env-kwargs", '{"colour": 1}'], "takes no argument 'colour'"),
    (["sft", "--env-kwargs", "[1, 2]"], "[1, 2]"),
    (["questions", "stats", "notdb.sqlite"], "'notdb.sqlite' is not a task pool: not a SQLite database"),
    (["questions", "stats", "other.sqlite"], "'other.sqlite' is not a task pool: a SQLite database without"),
    (["questions", "synthesize", *WEBSHOP, "--n", "5", "--out", "out", "--env-kwargs", '{"colour": 1}'],
     "takes no argument 'colour'"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--env-kwargs", "[1, 2]"],
     "--env-kwargs must be a JSON object of keyword arguments, got '[1, 2]' (a list)"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--env-kwargs", "{bad json"],
     "--env-kwargs must be a JSON object, got '{bad json'"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--env-kwargs", '{"colour": 1}'], "takes no argument 'colour'"),
    (["eval", "--checkpoint", "oracle", *WEBSHOP, "--config", "list.yaml"], "must hold a YAML mapping"),
    (["arena", "view", "--live", "--port", "-1"], "--port must be a port number in 0-65535, got -1"),
    (["arena", "view", "--live", "--port", "70000"], "--port must be a port number in 0-65535, got 70000"),
    # the dispatcher itself
    (["nosuchcommand"], "'nosuchcommand'"),
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVOLVER_DEBUG", raising=False)
    (tmp_path / "bad.yaml").write_text("a: [1,\nb")
    (tmp_path / "list.yaml").write_text("- 1\n")
    (tmp_path / "recipe.yaml").write_text(RECIPE)
    (tmp_path / "unknown_kwarg.yaml").write_text(RECIPE.replace("num_products: 100", "num_products: 100, colour: red"))
    (tmp_path / "zero_generations.yaml").write_text(RECIPE + "num_generations: 0\n")
    (tmp_path / "cold.yaml").write_text(RECIPE + "temperature: -1\n")
    (tmp_path / "notdb.sqlite").write_text("not a database\n")
    other = sqlite3.connect(tmp_path / "other.sqlite")
    other.execute("CREATE TABLE notes (x TEXT)")
    other.commit()
    other.close()
    return tmp_path


def run(argv):
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own exit
        return exc.code


@pytest.mark.parametrize("argv,fragment", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_is_one_line_nonzero_and_writes_nothing(workdir, capsys, argv, fragment):
    before = sorted(p.name for p in workdir.iterdir())
    code = run(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert "Traceback" not in err, err
    # One error line; an argparse error adds one short usage line before it.
    body = lines[1:] if lines and lines[0].startswith("usage:") else lines
    if argv[0] != "nosuchcommand":  # an unknown command also lists the commands
        assert len(body) == 1 and len(lines) <= 2, err
        assert len(lines[0]) <= 420, err  # one line (an unknown key or recipe lists the known ones)
    assert fragment in err, err
    assert sorted(p.name for p in workdir.iterdir()) == before  # nothing created


def test_debug_shows_the_traceback(workdir):
    with pytest.raises(FileNotFoundError):
        main(["--debug", "experience", "stats", "--uri", "missing.db"])


def _entry_point(args, cwd, **env):
    code = "import sys; from evolver_train.cli import main; raise SystemExit(main(sys.argv[1:]))"
    full_env = {key: v for key, v in os.environ.items() if key != "EVOLVER_DEBUG"}
    full_env.update({"PYTHONPATH": str(ROOT), **env})
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          env=full_env, timeout=300)


def test_entry_point_error_and_debug_env_var(workdir):
    out = _entry_point(["arena", "play", "--seats", "rule,rule"], workdir)
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0 and "--seats lists 2" in out.stderr
    out = _entry_point(["experience", "stats", "--uri", "missing.db"], workdir, EVOLVER_DEBUG="1")
    assert out.returncode != 0 and "Traceback" in out.stderr and "FileNotFoundError" in out.stderr
    assert not (workdir / "missing.db").exists()


def test_missing_extra_names_the_extra_to_install(workdir):
    """Without trl (the `train` extra), `evolver train` says which extra to install."""
    code = ("import sys; sys.modules['trl'] = None; from evolver_train.cli import main; "
            "raise SystemExit(main(['train', '--config', 'x.yaml']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        "evolver train: error: needs `trl`, which is not installed: "
        "install the `train` extra: pip install 'evolver-gym[train]' (without a GPU, first pip install "
        "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu: else pip fetches the multi-GB CUDA build)"
    )


def test_experience_build_with_a_failing_llm_summarizer_says_why_and_leaves_no_pool(workdir, capsys, llm_server):
    llm_server.fail_next(Fault.http(500), times=1000)
    (workdir / "roles.yaml").write_text(
        f"defaults:\n  base_url: {llm_server.url}\n  model: m\n  api_key: k\n  max_retries: 0\n"
    )
    argv = ["experience", "build", "--uri", "pool.db", *SMALL, "--limit", "1", "--rollouts", "1",
            "--summarizer", "llm", "--llm-config", "roles.yaml"]
    before = sorted(p.name for p in workdir.iterdir())
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "no experience added" in err and "HTTP 500" in err
    assert sorted(p.name for p in workdir.iterdir()) == before  # no pool left behind


def test_arena_tournament_creates_its_out_folder(workdir, capsys):
    assert main(["arena", "tournament", "--entrants", "rule,random", "--games", "2", "--out", "runs/t1"]) == 0
    assert (workdir / "runs" / "t1" / "results.jsonl").is_file()
    assert (workdir / "runs" / "t1" / "results.jsonl.summary.json").is_file()
    assert "tournament" in capsys.readouterr().err  # the progress bar


def test_questions_synthesize_writes_to_a_default_folder(workdir, capsys):
    """The README's `evolver questions synthesize --env evolver/WebShop-v0 --n ...` needs no --out."""
    argv = ["questions", "synthesize", *WEBSHOP, *SMALL, "--n", "0", "--no-embeddings", "--quiet"]
    assert main(argv) == 0
    out = workdir / "runs" / "questions" / "evolver-WebShop-v0"
    assert (out / "tasks.jsonl").is_file() and (out / "report.json").is_file()
