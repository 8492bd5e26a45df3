"""``evolver models``: bad input is one line naming the bad value; a failed fetch leaves no files."""

from __future__ import annotations

import dataclasses

import pytest

from evolver_train import models
from evolver_train.cli import main as evolver


def test_unknown_model_is_one_line_naming_it(tmp_path, capsys):
    assert evolver(["models", "fetch", "gpt-17", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'gpt-17'" in err and "smollm2-135m-instruct" in err
    assert list(tmp_path.iterdir()) == []


def test_list_names_licence_source_and_state(tmp_path, capsys):
    assert evolver(["models", "list", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m-instruct" in out and "Apache-2.0" in out and "HuggingFaceTB/SmolLM2-135M-Instruct" in out
    assert "not fetched" in out


def test_checksum_mismatch_is_refused_and_leaves_no_folder(tmp_path, monkeypatch):
    spec = models.MODELS["smollm2-135m-instruct"]
    if models._installed_file(spec) is None:
        pytest.skip(f"{spec.package} is not installed")
    monkeypatch.setitem(models.MODELS, spec.name, dataclasses.replace(spec, sha256="0" * 64))
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        models.fetch_model(spec.name, tmp_path, install=False, log=lambda *_: None)
    assert list(tmp_path.iterdir()) == []
