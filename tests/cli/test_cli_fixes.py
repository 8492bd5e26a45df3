"""The commands as documented: one flag style (old spellings work, with one deprecation line), what
``experience search`` prints, ``arena tournament`` with its defaults, the CPU-torch hint of a missing extra."""

from __future__ import annotations

import json

import pytest

from evolver_train.cli import main


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVOLVER_DEBUG", raising=False)
    return tmp_path


SMALL = '{"num_products": 100}'


def _deprecations(err: str) -> list[str]:
    return [line for line in err.splitlines() if "is deprecated; use" in line]


def test_eval_takes_env_id_and_the_old_env_flag_with_one_deprecation_line(workdir, capsys):
    args = ["--checkpoint", "oracle", "--env-kwargs", SMALL, "--num-tasks", "2", "--k", "1", "--quiet"]
    assert main(["eval", "--env-id", "evolver/WebShop-v0", *args]) == 0
    new = capsys.readouterr()
    assert _deprecations(new.err) == []
    assert main(["eval", "--env", "evolver/WebShop-v0", *args]) == 0
    old = capsys.readouterr()
    assert _deprecations(old.err) == ["evolver eval: --env is deprecated; use --env-id"]
    report = json.loads(old.out)
    assert report["env_id"] == "evolver/WebShop-v0" and report["num_tasks"] == 2
    assert report["success_rate"] == json.loads(new.out)["success_rate"] == 1.0


def test_play_takes_env_id_and_the_old_env_flag(workdir, capsys):
    assert main(["play", "--env-id", "evolver/WebShop-v0", "--num-products", "100", "--n", "2", "--json"]) == 0
    new = capsys.readouterr()
    assert main(["play", "--env", "evolver/WebShop-v0", "--num_products", "100", "--n", "2", "--json"]) == 0
    old = capsys.readouterr()
    assert json.loads(old.out) == json.loads(new.out) and json.loads(new.out)["oracle"]["success_rate"] == 1.0
    assert _deprecations(new.err) == []
    assert _deprecations(old.err) == ["evolver play: --env is deprecated; use --env-id",
                                      "evolver play: --num_products is deprecated; use --num-products"]


def test_questions_synthesize_takes_env_id_and_the_old_env_flag(workdir, capsys):
    common = ["--env-kwargs", SMALL, "--n", "0", "--no-embeddings", "--quiet"]
    assert main(["questions", "synthesize", "--env-id", "evolver/WebShop-v0", *common, "--out", "a"]) == 0
    assert _deprecations(capsys.readouterr().err) == []
    assert main(["questions", "synthesize", "--env", "evolver/WebShop-v0", *common, "--out", "b"]) == 0
    assert _deprecations(capsys.readouterr().err) == ["evolver questions: --env is deprecated; use --env-id"]
    assert json.loads((workdir / "b" / "report.json").read_text())["env"] == "evolver/WebShop-v0"


def test_train_and_sft_take_dashed_flags_and_warn_once_for_their_own_old_spellings(workdir, capsys):
    from evolver_train import sft as sft_module
    from evolver_train.train_cli import parse_config

    recipe = workdir / "r.yaml"
    recipe.write_text("model_name_or_path: tiny\nreport_to: none\n")
    run = parse_config(["--config", str(recipe), "--env-id", "evolver/WebShop-v0", "--env-kwargs", SMALL,
                        "--num-train-tasks", "5", "--max-steps", "3", "--output-dir", "o"])
    assert (run.train.env_kwargs, run.train.num_train_tasks, run.train.max_steps) == ({"num_products": 100}, 5, 3)
    assert capsys.readouterr().err == ""
    run = parse_config(["--config", str(recipe), "--env_id", "evolver/WebShop-v0", "--env_kwargs", SMALL,
                        "--num_train_tasks", "5", "--max_steps", "3", "--output_dir", "o",
                        "--wrappers", "navigation", "--experience_top_k=2"])
    assert (run.train.num_train_tasks, run.mechanisms["navigation"].experience_top_k) == (5, 2)
    # TRL's own options (max_steps, output_dir) keep their documented spelling without a warning.
    assert _deprecations(capsys.readouterr().err) == [
        "evolver train: --env_id is deprecated; use --env-id",
        "evolver train: --env_kwargs is deprecated; use --env-kwargs",
        "evolver train: --num_train_tasks is deprecated; use --num-train-tasks",
        "evolver train: --experience_top_k is deprecated; use --experience-top-k"]
    # A setting of a mechanism that is not enabled is refused in either spelling.
    with pytest.raises(ValueError, match="experience_share is a setting of mechanism 'navigation'"):
        parse_config(["--config", str(recipe), "--experience-share", "0.5"])

    config = sft_module.parse_sft_config(["--env-id", "evolver/WebShop-v0", "--num-demonstrations", "7",
                                          "--output-dir", "s"])
    assert config.num_demonstrations == 7 and capsys.readouterr().err == ""
    config = sft_module.parse_sft_config(["--env_id", "evolver/WebShop-v0", "--num_demonstrations", "7",
                                          "--output_dir", "s"])
    assert config.num_demonstrations == 7
    assert _deprecations(capsys.readouterr().err) == [
        "evolver sft: --env_id is deprecated; use --env-id",
        "evolver sft: --num_demonstrations is deprecated; use --num-demonstrations"]
    assert not (workdir / "o").exists() and not (workdir / "s").exists()


def test_train_help_shows_the_dashed_flags_and_the_documented_ranges(capsys):
    from evolver_train.train_cli import parse_config

    with pytest.raises(SystemExit):
        parse_config(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--env-id ENV_ID, --env_id ENV_ID" in text and "[--env-kwargs ENV_KWARGS]" in text
    assert "(range: >= 2)" in text and "(range: in (0, 1])" in text  # num_generations, top_p


def test_experience_search_prints_the_similarity_not_the_episode_score(workdir, capsys):
    from wrappers.navigation import Embedder

    records = [
        {"when_to_use": "buying waterproof mascara", "content": "search the brand, then pick the black option",
         "env_id": "evolver/WebShop-v0", "score": 1.0},
        {"when_to_use": "buying running shoes of a size", "content": "click the size before buy now",
         "env_id": "evolver/WebShop-v0", "score": 1.0},
        {"when_to_use": "buying a coffee table under a price", "content": "sort by price, read the dimensions",
         "env_id": "evolver/WebShop-v0", "score": 0.5},
    ]
    (workdir / "exp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["experience", "import", "--uri", "pool.db", "--in", "exp.jsonl"]) == 0
    capsys.readouterr()
    query = "i need a waterproof mascara"
    assert main(["experience", "search", "--uri", "pool.db", query, "--top-k", "3", "--threshold", "-1"]) == 0
    hits = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(hits) == 3 and "score" not in hits[0]
    assert hits[0]["when_to_use"] == "buying waterproof mascara"
    sims = [h["similarity"] for h in hits]
    assert sims == sorted(sims, reverse=True) and len(set(sims)) == 3 and sims[0] < 0.999
    # the similarity is the cosine of the query and the experience's when_to_use text
    embedder = Embedder()
    vectors = embedder.encode([query] + [h["when_to_use"] for h in hits])
    cosines = [float(vectors[0] @ v) for v in vectors[1:]]
    assert sims == pytest.approx(cosines, abs=2e-3)
    by_text = {r["when_to_use"]: r["score"] for r in records}
    assert [h["episode_score"] for h in hits] == [by_text[h["when_to_use"]] for h in hits]


def test_arena_tournament_runs_as_documented_with_default_entrants(workdir, capsys):
    assert main(["arena", "tournament", "--games", "6"]) == 0
    out = capsys.readouterr().out
    for kind in ("random", "rule", "rule_votes"):
        assert f"\n{kind} " in out, out
    with pytest.raises(SystemExit) as exc:
        main(["arena", "tournament", "--help"])
    assert exc.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "random, rule, rule_votes" in help_text and "llm:<model>@<base_url>" in help_text
    assert "(default: random,rule,rule_votes" in help_text


def test_every_missing_extra_message_says_how_to_get_the_cpu_build_of_torch():
    from evolver_gym.install_check import install_hint

    for extra in ("train", "memory", "all"):
        hint = install_hint(extra)
        assert hint.startswith(f"pip install 'evolver-gym[{extra}]'")
        assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in hint
    assert install_hint("arena") == "pip install 'evolver-gym[arena]'"  # no torch in that extra


def test_experience_takes_env_id_and_the_old_env_flag(workdir, capsys):
    common = ["--env-kwargs", SMALL, "--limit", "2", "--rollouts", "1"]
    assert main(["experience", "build", "--uri", "a.db", "--env-id", "evolver/WebShop-v0", *common]) == 0
    assert _deprecations(capsys.readouterr().err) == []
    assert main(["experience", "build", "--uri", "b.db", "--env", "evolver/WebShop-v0", *common]) == 0
    assert _deprecations(capsys.readouterr().err) == ["evolver experience: --env is deprecated; use --env-id"]
    assert main(["experience", "export", "--uri", "b.db", "--env-id", "evolver/WebShop-v0", "--out", "b.jsonl"]) == 0
    assert (workdir / "b.jsonl").read_text().count("\n") > 0
