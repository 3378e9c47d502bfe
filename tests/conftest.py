"""Shared fixtures: the copied corpus (tests/fixtures/corpus) and a CLI runner."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers.paths import CORPUS


def restore_preallocated(root: Path) -> None:
    """Give the broker's preallocated index files back their real length (stored trimmed)."""
    for note in root.glob("broker/*/*/PREALLOCATED.txt"):
        for line in note.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                length, rel = line.split(" ", 1)
                f = note.parent / rel
                if f.exists() and f.stat().st_size < int(length):
                    os.truncate(f, int(length))


# the quarantine registry (storage.quarantine_registry) of every run in the tests, never the
# user's: this for session fixtures, a dir of each test's own below
os.environ["KAFKALOG_STATE_DIR"] = tempfile.mkdtemp(prefix="kafkalog-state-")


@pytest.fixture(autouse=True)
def state_dir(tmp_path_factory, monkeypatch) -> Path:
    """$KAFKALOG_STATE_DIR: a test's own, so registries never mix (subprocesses inherit it)."""
    d = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("KAFKALOG_STATE_DIR", str(d))
    return d


@pytest.fixture(scope="session")
def corpus_copy(tmp_path_factory) -> Path:
    """A writable copy of tests/fixtures/corpus with preallocated index lengths restored."""
    root = tmp_path_factory.mktemp("corpus")
    shutil.copytree(CORPUS, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("goldens"))
    for p in root.rglob("*"):
        if p.is_file():
            p.chmod(0o644)
    restore_preallocated(root)
    return root


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def base():
    """A directory every user may traverse (pytest's tmp_path is root's alone): a broker or a
    command run as another uid must reach the log dir inside it."""
    d = Path(tempfile.mkdtemp(prefix="kafkalog-base-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# The slow tier, by kind: a test that starts a Kafka broker (*_broker.py, broker_order/,
# differential/), kills or crashes a command (crash/), runs the campaign, runs the installed script
# (e2e, the man pages' examples, the FIFO guards that wait on it), starts Spark or the S3 server
# (these fixtures, Spark from the shell), or a long property run (more than Hypothesis's default
# 100 examples). The fast tier, `-m "not slow"`, is everything else; a single slow test elsewhere
# carries @pytest.mark.slow itself.
SLOW_DIRS = ("broker_order", "crash", "differential")
SLOW_FILES = (
    "test_campaign.py",
    "test_man_examples.py",
    "commands/test_fifo_in_a_files_place.py",
    "spark/test_session.py",
)
SLOW_FIXTURES = {"spark", "pushdown", "s3", "cluster", "shared"}
LONG_PROPERTY = 100


def _long_property(item) -> bool:
    settings = getattr(getattr(item, "obj", None), "_hypothesis_internal_use_settings", None)
    return settings is not None and settings.max_examples > LONG_PROPERTY


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = item.nodeid.split("::", 1)[0]  # tests/<dir>/.../test_x.py
        parts = path.split("/")
        if (
            parts[1] in SLOW_DIRS
            or path.endswith(SLOW_FILES)
            or parts[-1].endswith("_broker.py")
            or not SLOW_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))
            or "e2e" in item.keywords
            or _long_property(item)
        ):
            item.add_marker(pytest.mark.slow)


def pytest_report_header(config):
    """The broker the broker tests run against (KAFKA_HOME), or that they are skipped."""
    from tests.helpers.kafka_dist import describe

    return f"kafka broker: {describe()}"
