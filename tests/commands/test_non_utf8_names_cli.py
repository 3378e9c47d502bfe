"""A partition dir whose name is not UTF-8 (and a file so named inside a partition dir): no Kafka
topic has such a name (topic names are [a-zA-Z0-9._-]; the JVM reads the bytes as U+FFFD, so
the broker loads the log under a name nobody asks for). storage.names parses it as such a dir
(PartitionDirKind.NOT_UTF8): every command leaves it alone with one `kafkalog: note:` line, as
-delete and -stray dirs, never "internal error: UnicodeEncodeError"."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES

BAD = os.fsdecode(b"codec-n\xffne-0")
COMMANDS = [
    (["export", "{d}", "{out}.parquet", "--to", "parquet"], (0,)),
    (["export", "{d}", "{out}.jsonl", "--to", "jsonl"], (0,)),
    (["describe", "{d}"], (0,)),
    (["get-offsets", "{d}"], (0,)),
    (["verify-crc", "{d}"], (0,)),
    (["dump-index", "{d}"], (0,)),
    (["recover", "--dry-run", "{d}"], (0,)),
    (["retain", "--dry-run", "--assume-kafka-defaults", "{d}"], (0, 1)),
    (["compact", "--dry-run", "--assume-kafka-defaults", "{d}"], (0, 1)),
    (["roll", "--dry-run", "{d}"], (0, 1)),
    (["recover", "{d}"], (0,)),
]


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / "codec-none-0").rename(d / BAD)
    (d / "multi-segment-0" / os.fsdecode(b"junk-\xfe.log")).write_bytes(b"x")
    return d


def state(d: Path) -> dict[str, bytes]:
    return {
        os.fsencode(p.relative_to(d)).hex(): p.read_bytes()
        for p in d.rglob("*")
        if p.is_file() and p.name != ".lock"
    }


@pytest.mark.parametrize("args,codes", COMMANDS, ids=[" ".join(a[:2]) for a, _ in COMMANDS])
def test_a_dir_with_a_non_utf8_name_is_left_with_a_note(args, codes, logdir, tmp_path):
    bad = state(logdir / BAD)
    r = CliRunner().invoke(cli, [a.format(d=logdir, out=tmp_path / "out") for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code in codes, (r.exit_code, r.stderr)
    notes = [ln for ln in r.stderr.splitlines() if "is not UTF-8" in ln]
    assert len(notes) == 1 and notes[0].startswith("kafkalog: note: "), r.stderr
    assert state(logdir / BAD) == bad


def test_doctor_notes_it(logdir):
    r = CliRunner().invoke(cli, ["doctor", str(logdir)])
    assert "internal error" not in r.stderr, r.stderr
    assert "name is not UTF-8" in r.stdout, r.stdout
    # junk-\xfe.log ends in .log: LocalLog.offsetFromFileName fails on it, the broker exits
    assert r.exit_code == 8 and "NumberFormatException" in r.stdout, r.stdout


def test_files_with_non_utf8_names_in_a_partition_dir(logdir, tmp_path):
    """Leftovers recover removes (an interrupted write, a .deleted file) with non-UTF-8 names: the
    plan names them escaped (\\udcff), the run removes them into the quarantine, restore puts the
    same bytes back under the same names."""
    part = logdir / "multi-segment-0"
    names = [
        os.fsdecode(b"00000000000000000300.index\xff.kafkalog-tmp"),
        os.fsdecode(b"0000000000000000\xff300.log.deleted"),
    ]
    for n in names:
        (part / n).write_bytes(b"leftover")
    before = state(logdir)
    r = CliRunner().invoke(cli, ["recover", "--quarantine", str(tmp_path / "q"), str(logdir)])
    assert r.exit_code == 0, (r.stderr, r.stdout)
    assert "internal error" not in r.stderr
    assert all(
        f"{part}/{n}".encode("utf-8", "backslashreplace").decode() in r.stdout for n in names
    ), r.stdout
    assert not any((part / n).exists() for n in names)
    folder = next((tmp_path / "q").iterdir())
    r = CliRunner().invoke(cli, ["quarantine", "restore", str(folder)])
    assert r.exit_code == 0, r.output
    after = state(logdir)
    assert {k: v for k, v in after.items() if k in before} == before
