""".ci/floors.txt pins each direct dependency at pyproject.toml's lower bound, the versions the
floors run (.ci/floors) installs: the two cannot drift apart."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.helpers.paths import REPO as ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11 on


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return reqs


def _lower_bound(req: Requirement) -> Version:
    lows = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert len(lows) == 1, f"pyproject.toml: {req} has no single >= lower bound"
    return lows[0]


def _pins() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and name.strip() and version.strip(), f".ci/floors.txt: not a pin: {line!r}"
            assert canonicalize_name(name) not in pins, f".ci/floors.txt: {name} pinned twice"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_direct_dependency_is_pinned_at_its_lower_bound():
    floors = {}
    for req in _requirements():
        name, low = canonicalize_name(req.name), _lower_bound(req)
        # a package in two extras (pyspark in test and spark) has one floor
        assert floors.setdefault(name, low) == low, (
            f"pyproject.toml: {req.name} has two lower bounds"
        )
    assert _pins() == floors


def test_the_floors_run_checks_pinned_packages():
    import runpy

    runs = runpy.run_path(str(ROOT / ".ci" / "floors"), run_name="floors")["RUNS"]
    # each run installs its packages at their floors together (the Spark stack in one run)
    packages = [canonicalize_name(name) for run in runs for name in run]
    assert len(packages) == len(set(packages)), "a package in two floors runs"
    assert {"moto", "pyarrow", "pyspark", "pandas", "hypothesis"} <= set(packages) <= set(_pins())
    assert all(runs.values()), "a floors run without tests"
