"""The recipes of configs/ by name: from this clone, and from a wheel installed somewhere else."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from evolver_train.errors import ConfigError, read_yaml
from evolver_train.recipe import recipe_dir, recipe_names, resolve_config

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_of_configs_is_a_recipe_by_name():
    on_disk = sorted(p.relative_to(ROOT / "configs").with_suffix("").as_posix()
                     for p in (ROOT / "configs").rglob("*.yaml"))
    assert recipe_names() == on_disk and "quickstart" in on_disk
    for name in on_disk:
        assert Path(resolve_config(name)).read_bytes() == (ROOT / "configs" / f"{name}.yaml").read_bytes()


def test_names_paths_and_refusals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not a clone: configs/ is not here
    packaged = str(recipe_dir() / "quickstart.yaml")
    assert resolve_config("quickstart") == resolve_config("quickstart.yaml") == packaged
    assert resolve_config("configs/quickstart.yaml") == resolve_config("./configs/quickstart.yaml") == packaged
    assert resolve_config("gpu/overall") == str(recipe_dir() / "gpu" / "overall.yaml")
    own = tmp_path / "quickstart"
    own.write_text("seed: 3\n")
    assert resolve_config("quickstart") == "quickstart"  # a file of that name wins
    assert read_yaml("quickstart") == {"seed": 3}
    for bad in ("nope", "../configs/quickstart", "/etc/quickstart.yaml", ""):
        with pytest.raises(FileNotFoundError, match="no packaged recipe of that name; recipes: .*quickstart"):
            resolve_config(bad)
    with pytest.raises(ConfigError, match="--config: no such file 'nope'.*recipes: accelerate/deepspeed_zero2"):
        read_yaml("nope")


@pytest.mark.slow  # builds a wheel and imports TRL: ~30 s
def test_evolver_train_reads_a_recipe_from_an_installed_wheel(tmp_path):
    # Build the wheel from a copy of the sources (the clone stays untouched), unpack it as site-packages would
    # hold it, and parse `--config quickstart` from another folder with that copy first on the path.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("evolver_gym", "evolver_train", "arena", "wrappers", "configs"):
        shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=skip)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist")], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("*.whl"))
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    assert (site / "evolver_train" / "recipes" / "quickstart.yaml").is_file()
    assert not (site / "evolver_train" / "recipes").is_symlink()
    code = ("import evolver_train, evolver_train.train_cli as t; r = t.parse_config(['--config', 'quickstart']); "
            "print(evolver_train.__file__); print(r.train.output_dir, r.train.env_id, r.train.wrappers)")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    where, parsed = done.stdout.strip().splitlines()[-2:]
    assert where.startswith(str(site))
    assert parsed == "runs/quickstart evolver/WebShop-v0 ['questioning', 'navigation', 'attribution']"


def test_evolver_eval_reads_a_recipe_by_name(tmp_path, monkeypatch, capsys):
    from evolver_train.cli import main

    monkeypatch.chdir(tmp_path)  # not a clone: only the packaged recipe can answer
    out = tmp_path / "report.json"
    assert main(["eval", "--checkpoint", "oracle", "--config", "basic", "--k", "1", "--num-tasks", "1", "--quiet",
                 "--out", str(out)]) == 0
    assert '"env_id": "evolver/WebShop-v0"' in out.read_text()
    assert main(["eval", "--checkpoint", "oracle", "--config", "nope"]) == 2
    assert "no packaged recipe of that name; recipes: " in capsys.readouterr().err
