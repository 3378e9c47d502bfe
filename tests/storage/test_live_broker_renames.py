"""Issue 26, point 14: read-only commands on a live broker's log dir. A segment the broker renames
to .deleted (retention), or deletes, between kafkalog's listing and its opening the files is
followed to its new name, or reported on stderr as removed by the broker; the command goes on and
exits 0 for it. Reproduced deterministically: the files are moved right after the listing, or
right before the open."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage import live_files, logdir, partition
from tests.helpers.paths import EXAMPLES

BASE = "00000000000000000300"
COMMANDS = [
    ["verify-crc", "--jobs", "1"],
    ["dump-log"],
    ["dump-log", "--format", "json", "--deep-iteration"],
    ["dump-index"],
    ["dump-index", "--format", "json"],
    ["describe"],
    ["export", "-", "--to", "jsonl", "--jobs", "1"],
]


def _broker(d: Path, how: str) -> None:
    for f in sorted(d.glob(BASE + ".*")):
        if how == "rename":
            os.rename(f, f"{f}.deleted")
        else:
            f.unlink()


@pytest.fixture(autouse=True)
def _forget_listings():
    yield
    live_files._LISTED.clear()


@pytest.mark.parametrize("how", ["rename", "delete"])
@pytest.mark.parametrize("when", ["after-listing", "before-open"])
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_segment_the_broker_moves_is_followed_or_reported(tmp_path, monkeypatch, args, how, when):
    data = tmp_path / "data"
    shutil.copytree(EXAMPLES, data)
    part = data / "multi-segment-0"
    before = CliRunner().invoke(cli, [args[0], str(EXAMPLES), *args[1:]])
    done = []

    def broker_acts():
        if not done:
            done.append(True)
            _broker(part, how)

    if when == "after-listing":
        real = live_files.listed

        def listed(paths):
            paths = list(paths)
            real(paths)
            if any(Path(p).parent == part for p in paths):
                broker_acts()

        monkeypatch.setattr(live_files, "listed", listed)
        monkeypatch.setattr(logdir, "listed", listed, raising=False)
        monkeypatch.setattr(partition, "listed", listed)
    else:
        real_followed = live_files.followed

        def followed(path):
            # a file read after a listing found it (not a read of its own, like the version scan's)
            if (
                Path(path).parent == part
                and Path(path).name.startswith(BASE)
                and live_files.was_listed(path)
            ):
                broker_acts()
            return real_followed(path)

        monkeypatch.setattr(live_files, "followed", followed)
    r = CliRunner().invoke(cli, [args[0], str(data), *args[1:]])
    assert done, "the broker's rename never happened: the test would prove nothing"
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    moved = [
        line for line in r.stderr.splitlines() if "by the broker while this command ran" in line
    ]
    assert moved and all(line.startswith("kafkalog: note: ") for line in moved)
    if how == "rename":
        assert "renamed to " + BASE in moved[0] and ".deleted" in moved[0]
        # followed: what was read is what was there
        if args[0] in ("dump-log", "verify-crc", "export"):
            assert r.stdout.replace(str(data), "X").count("\n") == before.stdout.replace(
                str(EXAMPLES), "X"
            ).count("\n")
    else:
        assert "removed by the broker" in moved[0]


def test_a_missing_file_the_user_names_is_still_an_error(tmp_path):
    r = CliRunner().invoke(cli, ["dump-log", str(tmp_path / f"{BASE}.log")])
    assert r.exit_code == 4 and "no such file" in r.stderr
