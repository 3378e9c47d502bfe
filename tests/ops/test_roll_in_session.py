"""roll against a real Kafka 3.3.1 broker's own rolls (tests/differential found the live case):
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

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "broker" / "roll-in-session"
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
    return {f"{base:020d}{s}": (d / f"{base:020d}{s}").read_bytes() for s in (".log", ".index", ".timeindex")} | \
        {f"{snapshot:020d}.snapshot": (d / f"{snapshot:020d}.snapshot").read_bytes()}


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
    assert closed_files(d / tp, base, new_base) == closed_files(FIX / "clean-rolled" / tp, base, new_base)
