"""scripts/constraints.txt pins every package scripts/setup.sh installs, within pyproject.toml's ranges."""

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
INSTALLED_EXTRAS = ("all", "dev", "docs")  # what scripts/setup.sh installs: `.[all,dev,docs]`


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "scripts" / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _requirements() -> list[Requirement]:
    """The project's own requirements and those of the extras setup.sh installs (self-references expanded)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras, found = list(INSTALLED_EXTRAS), [Requirement(r) for r in project["dependencies"]]
    while extras:
        for requirement in map(Requirement, project["optional-dependencies"][extras.pop()]):
            if canonicalize_name(requirement.name) == canonicalize_name(project["name"]):
                extras += sorted(requirement.extras)
            else:
                found.append(requirement)
    return [r for r in found if r.marker is None or r.marker.evaluate()]


def test_every_installed_requirement_but_torch_is_pinned_inside_its_range():
    pins = _pins()
    requirements = _requirements()
    assert {"transformers", "trl", "gymnasium", "pymilvus"} <= {canonicalize_name(r.name) for r in requirements}
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        if name == "torch":
            continue
        assert name in pins, f"{requirement} has no pin in scripts/constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"the pin {name}=={pins[name]} is outside pyproject.toml's {requirement}")


def test_torch_is_left_to_torch_spec():
    # A pinned torch would fight TORCH_SPEC (a CUDA build on a GPU machine).
    assert "torch" not in _pins()
