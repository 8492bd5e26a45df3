"""``evolver train`` / ``evolver sft`` settings: every one checked before work starts, one-line errors,
no files left behind, grouped help, the old ``wrapper_kwargs`` form migrated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evolver_train import sft as sft_module
from evolver_train import train_cli
from evolver_train.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "configs" / "quickstart.yaml")
BASIC = str(ROOT / "configs" / "basic.yaml")


def _train_error(tmp_path, capsys, *args, config=BASIC):
    out = tmp_path / "run"
    rc = train_cli.main(["--config", config, "--output_dir", str(out), *args])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists() and not list(tmp_path.iterdir())  # nothing written
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("evolver train: "), err
    return lines[0]


@pytest.mark.parametrize("args, needle", [
    (["--max_steps", "0"], "max_steps must be >= 1 (GRPO steps to run), got 0"),
    (["--max_steps", "-5"], "max_steps must be >= 1 (GRPO steps to run), got -5"),
    (["--num-train-tasks", "-3"], "num_train_tasks must be >= 1 or None (all), got -3"),
    (["--learning_rate", "-0.1"], "learning_rate must be >= 0, got -0.1"),
    (["--max_steps", "many"], "--max-steps/--max_steps: invalid int value: 'many'"),
    (["--max_stepz", "3"], "not used by the HfArgumentParser: ['--max_stepz', '3']"),
    (["--env-id", "evolver/WebShop-v9"], "no environment registered as 'evolver/WebShop-v9'"),
    (["--model_name_or_path", "runs/no_such_sft"], "model_name_or_path: no such folder 'runs/no_such_sft'"),
    (["--model_name_or_path", "./runs/no_such_sft"], "model_name_or_path: no such file or folder './runs/no_such_sft'"),
    (["--experience-share", "0.5"], "experience_share is a setting of mechanism 'navigation', which is not enabled"),
    (["--wrappers", "questioning", "navigaton"], "unknown mechanism 'navigaton'"),
    (["--sft", '{"max_step": 3}'], "sft: unknown option 'max_step' (did you mean 'max_steps'"),
    (["--sft", '{"max_steps": -1}'], "sft: max_steps must be >= 1, got -1"),
    (["--allowed-actions-only", "true", "--use_vllm", "true"], "allowed_actions_only needs the local sampler"),
])
def test_bad_command_line_setting_is_one_line_naming_it_and_writes_nothing(tmp_path, capsys, args, needle):
    assert needle in _train_error(tmp_path, capsys, *args)


@pytest.mark.parametrize("yaml_text, needle", [
    ("max_steps: -1\n", "max_steps must be >= 1"),
    ("max_steps: lots\n", "max_steps must be of type int, got 'lots'"),
    ("max_steps: 2.5\n", "max_steps must be an integer, got 2.5"),
    ("learning_rate: [1, 2]\n", "learning_rate must be a single value"),
    ("num_train_tasks: -10\n", "num_train_tasks must be >= 1 or None (all), got -10"),
    ("max_turnz: 3\n", "unknown option 'max_turnz' (did you mean 'max_turns'"),
    ("use_peft: maybe\n", "use_peft must be of type"),
    ("wrappers: [navigation]\nexperience_top_k: 0\n", "experience_top_k must be a positive int or None, got 0"),
    ("wrappers: [attribution]\nattributor: psychic\n", "attributor must be one of"),
    ("wrappers: [questioning]\nquestioning_synthesis: {batchsize: 3}\n", "questioning_synthesis has unknown keys"),
    ("- a list\n", "must hold a YAML mapping"),
])
def test_bad_yaml_setting_is_one_line_naming_it_and_writes_nothing(tmp_path, capsys, yaml_text, needle):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model_name_or_path: tiny\n" + yaml_text if not yaml_text.startswith("-") else yaml_text)
    out = tmp_path / "run"
    rc = train_cli.main(["--config", str(recipe), "--output_dir", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists() and len(err.splitlines()) == 1, err
    assert needle in err


def test_missing_config_file_is_named(tmp_path, capsys):
    line = _train_error(tmp_path, capsys, config=str(tmp_path / "nope.yaml"))
    assert "no such file" in line and "nope.yaml" in line


def test_old_wrapper_kwargs_form_loads_with_a_warning_that_shows_the_new_form(tmp_path):
    recipe = tmp_path / "old.yaml"
    recipe.write_text("model_name_or_path: tiny\nwrappers: [navigation, attribution]\n"
                      "wrapper_kwargs:\n  navigation: {top_k: 2, max_chars: 300}\n"
                      "  attribution: {attributor: rules}\n")
    with pytest.warns(FutureWarning, match="experience_top_k: 2") as record:
        run = train_cli.parse_config(["--config", str(recipe), "--output_dir", str(tmp_path / "o")])
    assert "attributor: \"rules\"" in str(record[0].message)
    assert run.mechanisms["navigation"].experience_top_k == 2
    assert run.mechanisms["navigation"].experience_max_chars == 300
    assert run.mechanisms["attribution"].attributor == "rules"
    recipe.write_text("model_name_or_path: tiny\nwrappers: [navigation]\nwrapper_kwargs: {navigation: {x: 1}}\n")
    with pytest.raises(ConfigError, match="wrapper_kwargs.navigation.x has no equivalent option"):
        train_cli.parse_config(["--config", str(recipe)])


def test_old_name_valid_actions_only_sets_allowed_actions_only_with_one_deprecation_line(tmp_path, capsys):
    out = ["--output_dir", str(tmp_path / "o")]
    assert train_cli.parse_config(["--config", BASIC, *out]).train.allowed_actions_only is False
    run = train_cli.parse_config(["--config", BASIC, "--allowed-actions-only", "true", *out])
    assert run.train.allowed_actions_only is True
    assert "deprecated" not in capsys.readouterr().err
    recipe = tmp_path / "old.yaml"
    recipe.write_text("model_name_or_path: tiny\nvalid_actions_only: true\n")
    assert train_cli.parse_config(["--config", str(recipe), *out]).train.allowed_actions_only is True
    assert capsys.readouterr().err.splitlines() == [
        f"{recipe}: valid_actions_only is deprecated; use allowed_actions_only"]
    for flag in ("--valid-actions-only", "--valid_actions_only"):
        assert train_cli.parse_config(["--config", BASIC, flag, "true", *out]).train.allowed_actions_only is True
        assert capsys.readouterr().err.splitlines() == [
            f"evolver train: {flag} is deprecated; use --allowed-actions-only"]
    recipe.write_text("model_name_or_path: tiny\nvalid_actions_only: true\nallowed_actions_only: false\n")
    with pytest.raises(ConfigError, match="valid_actions_only is the old name of allowed_actions_only"):
        train_cli.parse_config(["--config", str(recipe), *out])


def test_help_is_grouped_with_a_section_per_mechanism_and_short(capsys):
    with pytest.raises(SystemExit) as exc:
        train_cli.parse_config(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for section in ("training: GRPO, environment", "model and LoRA (trl.ModelConfig",
                    "self-questioning (wrappers: questioning)", "self-navigating (wrappers: navigation)",
                    "self-attributing (wrappers: attribution)"):
        assert section in text, section
    assert "--experience_top_k" in text and "--num_generations" in text
    assert "--adam_beta2" not in text  # a TRL option only --help-all lists
    assert len(text.splitlines()) < 650, len(text.splitlines())  # 1,427 lines with every TRL option
    with pytest.raises(SystemExit):
        train_cli.parse_config(["--help-all"])
    assert "--adam_beta2" in capsys.readouterr().out


def test_sft_help_prints_and_bad_sft_settings_are_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        sft_module.main(["--help"])
    assert exc.value.code == 0 and "cosine decay to 10%" in capsys.readouterr().out
    out = tmp_path / "sft"
    for args, needle in ((["--max_steps", "0"], "max_steps must be >= 1, got 0"),
                         (["--learning_rate", "-1"], "learning_rate must be > 0, got -1.0"),
                         (["--batch-size", "x"], "--batch_size: invalid int value: 'x'"),
                         (["--env-id", "evolver/Nope-v0"], "no environment registered as 'evolver/Nope-v0'")):
        assert sft_module.main([*args, "--output_dir", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err
    recipe = tmp_path / "sft.yaml"
    recipe.write_text("max_step: 3\n")
    assert sft_module.main(["--config", str(recipe), "--output_dir", str(out)]) == 2
    assert "unknown option 'max_step' (did you mean 'max_steps'" in capsys.readouterr().err
    assert not out.exists()


def test_sft_switches_read_true_and_false_from_flags_and_yaml(tmp_path, capsys):
    assert sft_module.parse_sft_config(["--spell-ids", "false"]).spell_ids is False
    assert sft_module.parse_sft_config(["--spell-ids", "True"]).spell_ids is True
    recipe = tmp_path / "sft.yaml"
    recipe.write_text("spell_ids: false\n")
    assert sft_module.parse_sft_config(["--config", str(recipe)]).spell_ids is False
    out = tmp_path / "sft"
    assert sft_module.main(["--spell-ids", "maybe", "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--spell_ids" in err and "maybe" in err, err
    recipe.write_text("spell_ids: maybe\n")
    assert sft_module.main(["--config", str(recipe), "--output_dir", str(out)]) == 2
    assert "spell_ids must be of type bool, got 'maybe'" in capsys.readouterr().err
    assert not out.exists()


def test_importing_the_package_needs_no_training_extra():
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('torch', 'trl', 'transformers', 'peft'):\n"
            "            raise ImportError('blocked ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import evolver_train\n"
            "assert 'EvolverGRPOTrainer' in evolver_train.__all__\n"
            "assert evolver_train.ConfigError.__name__ == 'ConfigError'\n"
            "try:\n"
            "    evolver_train.EvolverGRPOConfig\n"
            "except ImportError as exc:\n"
            "    print('needs', exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "needs blocked" in proc.stdout


def test_settings_can_be_parsed_from_several_threads_at_once(tmp_path):
    # TRL's parser rewrites the dataclass fields while it builds; a caller that parses from several
    # threads (a launcher, the study's shared-warm-start test) must get every config whole.
    import threading

    callers, parsed, failed = 6, [], []
    start = threading.Barrier(callers)

    def parse(i):
        start.wait()
        try:
            for _ in range(5):
                parsed.append(train_cli.parse_config(["--config", BASIC, "--output_dir", str(tmp_path / f"r{i}")]))
        except Exception as exc:  # noqa: BLE001 - every failure is collected and shown
            failed.append(repr(exc))

    threads = [threading.Thread(target=parse, args=(i,)) for i in range(callers)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so that a race shows on every run
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert failed == [] and len(parsed) == 5 * callers
    alone = train_cli.parse_config(["--config", BASIC]).train
    assert {(run.train.num_generations, run.train.learning_rate) for run in parsed} == {
        (alone.num_generations, alone.learning_rate)}
