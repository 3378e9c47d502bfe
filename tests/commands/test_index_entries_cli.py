"""An offset- or time-index entry Kafka never writes (a negative or out-of-file position, an offset
below the base or out of order) in the active segment under a clean-shutdown marker: every
command answers as Kafka would, never "internal error". The broker loads such a segment without
recovering it; LogSegment.readNextOffset reads from max(entry position, 0)
(LogSegment.translateOffset) and finds no batch at or after the entry's offset, so its log end is
the base offset. recover rebuilds the index; describe and doctor name it; get-offsets answers
what the broker serves, with a warning naming the index."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES

ACTIVE = "multi-segment-0/00000000000000000300"
# an internal topic too: its newest batches are read for the Kafka version (config.versions)
ACTIVES = [ACTIVE, "__consumer_offsets-0/00000000000000000000"]
BAD_ENTRIES = {
    "position -1": struct.pack(">ii", 0x7FFFFFFF, -1),
    "a negative position": struct.pack(">ii", 0x7FFFFFF0, -(1 << 30)),
}


def copy(tmp_path: Path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    return d


def last_entry(d: Path, entry: bytes, active: str = ACTIVE) -> Path:
    idx = d / f"{active}.index"
    data = idx.read_bytes()
    idx.write_bytes(data[:-8] + entry)
    return idx


def invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    return r


def files(d: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(d)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


@pytest.mark.parametrize("active", ACTIVES)
@pytest.mark.parametrize("kind", BAD_ENTRIES)
def test_recover_rebuilds_the_index(kind, active, tmp_path):
    d = copy(tmp_path)
    idx = last_entry(d, BAD_ENTRIES[kind], active)
    r = invoke("recover", d)
    assert r.exit_code == 0, r.output
    assert "rebuild index" in r.stdout and str(idx) in r.stdout
    assert idx.read_bytes() == (EXAMPLES / f"{active}.index").read_bytes()
    again = invoke("recover", "--dry-run", d)
    assert (again.exit_code, ": 0 change(s)" in again.stdout) == (0, True), again.stdout


@pytest.mark.parametrize(
    "entry", [*BAD_ENTRIES.values(), struct.pack(">ii", -5, 0), struct.pack(">ii", 250, 1 << 30)]
)
def test_recover_repair_rebuilds_the_index(entry, tmp_path):
    d = copy(tmp_path)
    idx = last_entry(d, entry)
    assert invoke("recover", "--repair", d).exit_code == 0
    assert idx.read_bytes() == (EXAMPLES / f"{ACTIVE}.index").read_bytes()


def test_an_entry_below_the_base_the_broker_reads_past_is_kept_and_named(tmp_path):
    """(offset 295, position 0) in segment 300: readNextOffset reads from byte 0 for the first batch
    reaching offset 295 and walks to the end, so the broker serves every offset: recover keeps the
    index as the broker does and says so; get-offsets answers the log end."""
    d = copy(tmp_path)
    idx = last_entry(d, struct.pack(">ii", -5, 0))
    before = files(d)
    r = invoke("recover", d)
    assert r.exit_code == 0 and ": 0 change(s)" in r.stdout and str(idx) in r.stdout, r.stdout
    assert "multi-segment:0:600" in invoke("get-offsets", d).stdout
    assert files(d) == before


@pytest.mark.parametrize("active", ACTIVES)
@pytest.mark.parametrize("kind", BAD_ENTRIES)
def test_read_commands_name_the_index_and_change_nothing(kind, active, tmp_path):
    d = copy(tmp_path)
    idx = last_entry(d, BAD_ENTRIES[kind], active)
    before = files(d)
    desc = invoke("describe", d)
    assert desc.exit_code == 3
    lines = [ln for ln in desc.stderr.splitlines() if ln.startswith("kafkalog: ")]
    assert len(lines) == 1 and str(idx) in lines[0], desc.stderr
    doc = invoke("doctor", d)
    assert doc.exit_code == 1 and "WARNING" in doc.stdout and str(idx) in doc.stdout, doc.stdout
    for args in (
        ["get-offsets", d],
        ["get-offsets", "--time", "-2", d],
        ["recover", "--dry-run", d],
        ["dump-index", "--verify-index-only", idx],
        ["verify-crc", d],
    ):
        r = invoke(*args)
        assert r.exit_code in (0, 1, 3), (args, r.exit_code, r.stderr)
        if r.exit_code == 3:
            assert len([ln for ln in r.stderr.splitlines() if ln.startswith("kafkalog: ")]) == 1, (
                r.stderr
            )
    got = invoke("get-offsets", d)
    # the broker serves the segment from its base offset: readNextOffset finds no batch
    topic, _, base = active.partition("/")
    assert f"{topic[:-2]}:0:{int(base)}" in got.stdout, got.stdout
    assert str(idx) in got.stderr
    assert files(d) == before


@pytest.mark.parametrize(
    "entry", [struct.pack(">qi", 1_700_000_000_000, -7), struct.pack(">qi", -1, 0x7FFFFFFF)]
)
def test_a_time_index_entry_kafka_never_writes(entry, tmp_path):
    d = copy(tmp_path)
    tidx = d / f"{ACTIVE}.timeindex"
    tidx.write_bytes(tidx.read_bytes()[:-12] + entry)
    before = files(d)
    for args in (
        ["describe", d],
        ["get-offsets", "--time", "1700000000000", d],
        ["doctor", d],
        ["dump-index", "--verify-index-only", tidx],
    ):
        r = invoke(*args)
        assert r.exit_code in (0, 1, 3), (args, r.exit_code, r.stderr)
    assert files(d) == before
    assert invoke("recover", "--repair", d).exit_code == 0
    assert invoke("recover", "--dry-run", "--repair", d).exit_code == 0
