"""roll against real Kafka 3.3.1 and 3.9.0-rc3 brokers' own rolls (tests/differential found the live case):
a dir copied while the broker ran is closed as the running broker closes it, a cleanly shut down
one as the restarted broker does. Fixture: tests/fixtures/broker/roll-in-session, made by the
differential harness (generate.py): `live` copied after producing, `live-rolled` the broker's
files after it rolled in that session, `clean` after its clean shutdown, `clean-rolled` after a
restarted broker rolled it."""

import os
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import BROKER

FIX = BROKER / "roll-in-session"
NOW = 1795460000000


def prepared(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(FIX / name, d)
    for line in (FIX / "PREALLOCATED.txt").read_text().splitlines():
        length, rel = line.split()
        if rel.startswith(name + "/"):
            os.truncate(tmp_path / rel, int(length))
    return d


def closed_files(d: Path, base: int, snapshot: int) -> dict[str, bytes]:
    return {
        f"{base:020d}{s}": (d / f"{base:020d}{s}").read_bytes()
        for s in (".log", ".index", ".timeindex")
    } | {f"{snapshot:020d}.snapshot": (d / f"{snapshot:020d}.snapshot").read_bytes()}


def roll(*paths):
    r = CliRunner().invoke(cli, ["roll", "--now", str(NOW), "--no-quarantine", *map(str, paths)])
    assert r.exit_code == 0, r.output
    return r


@pytest.mark.parametrize("tp, new_base", [("g-idem-0", 82), ("g-zstd-0", 98)])
def test_live_dir_is_closed_as_the_running_broker_closes_it(tmp_path, tp, new_base):
    d = prepared(tmp_path, "live")
    roll(d / tp)
    assert closed_files(d / tp, 0, new_base) == closed_files(FIX / "live-rolled" / tp, 0, new_base)


def test_uncompressed_batch_final_entry_is_the_first_record_holding_the_max(tmp_path):
    # g-idem-0's last batch (offsets 79..81, uncompressed) has its max timestamp on record 80;
    # recovery would index the batch's last offset, 81; the running broker tracked 80
    d = prepared(tmp_path, "live")
    roll(d / "g-idem-0")
    ts, rel = struct.unpack(">qi", (d / "g-idem-0" / f"{0:020d}.timeindex").read_bytes()[-12:])
    assert (ts, rel) == (1795458095205, 80)


@pytest.mark.parametrize("tp, base, new_base", [("g-idem-0", 82, 100), ("g-zstd-0", 98, 122)])
def test_clean_dir_is_closed_as_the_restarted_broker_closes_it(tmp_path, tp, base, new_base):
    d = prepared(tmp_path, "clean")
    roll(d / tp)
    assert closed_files(d / tp, base, new_base) == closed_files(
        FIX / "clean-rolled" / tp, base, new_base
    )


# ------------------------------------------------------------------ Kafka 3.8+: the batch's last offset
# tests/fixtures/broker/roll-in-session-3.9: g-none-0 copied while a 3.9.0-rc3 broker ran (`live`,
# with the log dir's meta.properties and bootstrap.checkpoint, metadata.version 3.9-IV0) and the
# files that broker left after rolling it in that session (`live-rolled`), from the differential
# harness (generate.py, seed 4). Its last batch, offsets 105..112 uncompressed, holds its max
# timestamp on records 109 and 111; 3.9 indexes the batch's last offset, 112 (LogValidator
# shallowOffsetOfMaxTimestamp = offsetCounter.value - 1, KAFKA-16310), 3.3.1 the first record's.
FIX39 = BROKER / "roll-in-session-3.9"


def prepared39(tmp_path: Path) -> Path:
    d = tmp_path / "live"
    shutil.copytree(FIX39 / "live", d)
    for line in (FIX39 / "PREALLOCATED.txt").read_text().splitlines():
        length, rel = line.split()
        os.truncate(tmp_path / rel, int(length))
    return d


def test_a_3_9_live_dir_is_closed_as_the_3_9_broker_closes_it(tmp_path):
    d = prepared39(tmp_path)
    r = roll(d / "g-none-0")
    assert "depends on the Kafka version" not in r.output  # the dir proves 3.9: decided
    assert closed_files(d / "g-none-0", 0, 113) == closed_files(
        FIX39 / "live-rolled" / "g-none-0", 0, 113
    )
    ts, rel = struct.unpack(">qi", (d / "g-none-0" / f"{0:020d}.timeindex").read_bytes()[-12:])
    assert (ts, rel) == (1795773390499, 112)


def test_a_dir_that_proves_no_version_takes_the_oldest_rule_and_says_so(tmp_path):
    d = prepared(tmp_path, "live")
    r = roll(d / "g-idem-0")
    assert (
        "g-idem-0: the closing time-index entry's offset depends on the Kafka version" in r.output
    )
    assert "81 from 3.8 on, 80 before; took 3.3's" in r.output
    assert struct.unpack(">qi", (d / "g-idem-0" / f"{0:020d}.timeindex").read_bytes()[-12:]) == (
        1795458095205,
        80,
    )


@pytest.mark.parametrize("version, offset", [("3.7", 80), ("3.8", 81), ("3.9.0-rc3", 81)])
def test_kafka_version_decides_the_closing_entry_where_the_dir_does_not(tmp_path, version, offset):
    d = prepared(tmp_path, "live")
    r = CliRunner().invoke(
        cli,
        [
            "roll",
            "--now",
            str(NOW),
            "--no-quarantine",
            "--kafka-version",
            version,
            str(d / "g-idem-0"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "depends on the Kafka version" not in r.output
    assert struct.unpack(">qi", (d / "g-idem-0" / f"{0:020d}.timeindex").read_bytes()[-12:]) == (
        1795458095205,
        offset,
    )


def test_kafka_version_older_than_the_dir_proves_is_refused(tmp_path):
    d = prepared39(tmp_path)
    r = CliRunner().invoke(
        cli,
        [
            "roll",
            "--now",
            str(NOW),
            "--no-quarantine",
            "--kafka-version",
            "3.3",
            str(d / "g-none-0"),
        ],
    )
    assert r.exit_code == 2 and "the log dir needs Kafka 3.9 or later" in r.output
