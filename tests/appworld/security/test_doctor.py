"""``evolver appworld doctor`` prints every OS layer, its state and a probe that checks it holds."""

from __future__ import annotations

from evolver_gym.appworld.sandbox import LAYERS
from evolver_train.cli import main


def test_doctor_prints_active_layers(capsys):
    assert main(["appworld", "doctor"]) == 0
    out = capsys.readouterr().out
    for name in LAYERS:
        line = next(x for x in out.splitlines() if x.strip().startswith(name))
        assert " on " in line and "probe: holds" in line, line
    assert f"{len(LAYERS)} of {len(LAYERS)} OS layers active" in out
