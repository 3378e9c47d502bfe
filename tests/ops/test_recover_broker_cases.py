"""recover against what a real Kafka 3.3.1 broker did with the same damage to examples/logdir: a
torn last batch and a cut active segment under the clean-shutdown marker, and a batch whose damaged
base offset overflows its segment (the broker splits the segment).

The broker's own results are committed in tests/fixtures/recover_broker (its partition dir after
loading, and its recovery-point entry); with KAFKA_HOME and KAFKA_PY set, each case is also run on
a live broker and compared file by file."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.producer_state import parse_producer_snapshot
from tests.differential import broker as live
from tests.differential.compare import epochs_match
from tests.helpers.paths import FIXTURES
from tests.helpers.recovery import CASES, OVERFLOW_BASE, damaged

EXPECTED = FIXTURES / "recover_broker"
NOW = 1795460000000


def recover(d: Path, *extra: str, code: int = 0):
    r = CliRunner().invoke(cli, ["recover", "--no-quarantine", "--now", str(NOW), *extra, str(d)])
    assert r.exit_code == code, r.output
    return r


def files(part: Path) -> dict[str, bytes]:
    return {
        f.name: f.read_bytes() for f in sorted(part.iterdir()) if f.name != "partition.metadata"
    }


def recovery_point(d: Path, part: str) -> str:
    topic = part.rsplit("-", 1)[0]
    return next(
        ln
        for ln in (d / "recovery-point-offset-checkpoint").read_text().splitlines()
        if ln.startswith(f"{topic} 0 ")
    )


def assert_as_the_broker_left_it(d: Path, part: str, case: str) -> None:
    want, got = files(EXPECTED / case / part), files(d / part)
    # the broker's leader-epoch-checkpoint also holds the leader election that followed its load
    assert epochs_match(want.pop("leader-epoch-checkpoint"), got.pop("leader-epoch-checkpoint"))
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name
    assert recovery_point(d, part) == (EXPECTED / case / "recovery-point").read_text().strip()


@pytest.mark.parametrize("case", sorted(CASES))
def test_recover_leaves_what_the_broker_leaves(case, tmp_path):
    d, part = damaged(tmp_path, case)
    recover(d)
    assert_as_the_broker_left_it(d, part, case)


def test_torn_transactional_batch_under_the_marker_keeps_the_open_transaction(tmp_path):
    d, part = damaged(tmp_path, "torn-txn-under-marker")
    r = recover(d)
    # the broker's snapshot at the log end (14): producer 1, its transaction open since offset 11
    snap = parse_producer_snapshot((d / part / f"{14:020d}.snapshot").read_bytes())
    assert [(e.producer_id, e.current_txn_first_offset) for e in snap.entries] == [(1, 11)]
    assert not (d / part / f"{15:020d}.snapshot").exists()
    out = " ".join(r.output.split())
    assert "52 bytes after the last complete batch (log end 14)" in out
    assert "`kafkalog recover --repair` recovers the segment instead" in out


def test_cut_active_segment_under_the_marker_says_what_the_broker_will_not_serve(tmp_path):
    d, part = damaged(tmp_path, "active-cut-under-marker")
    r = recover(d)
    out = " ".join(r.output.split())
    assert "takes its log end as the base offset 300 and does not serve offsets 300..524" in out
    assert "its next appends reuse them" in out
    assert "`kafkalog recover --repair` recovers the segment instead" in out
    desc = CliRunner().invoke(
        cli, ["describe", "--format", "json", "--topic", "multi-segment", str(d)]
    )
    assert json.loads(desc.stdout.splitlines()[0])["log_end_offset"] == 300


def test_cut_active_segment_with_repair_recovers_it(tmp_path):
    d, part = damaged(tmp_path, "active-cut-under-marker")
    recover(d, "--repair")
    assert (d / part / f"{300:020d}.log").stat().st_size == 5805
    assert sorted(f.name for f in (d / part).glob("*.snapshot")) == [
        f"{300:020d}.snapshot",
        f"{525:020d}.snapshot",
    ]
    assert recovery_point(d, part) == "multi-segment 0 525"


def test_the_split_is_reported_and_restored_exactly(tmp_path):
    d, part = damaged(tmp_path, "offset-overflow")
    before = files(d / part)
    r = CliRunner().invoke(
        cli, ["recover", "--quarantine", str(tmp_path / "q"), "--now", str(NOW), str(d)]
    )
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert (
        f"into segments 0 (offsets 0..39), {OVERFLOW_BASE} (offsets {OVERFLOW_BASE}..{OVERFLOW_BASE + 19})"
        in out
    )
    assert f"the log end becomes {OVERFLOW_BASE + 20}" in out
    assert "`kafkalog recover --salvage` skips the damaged batch instead" in out
    folder = next((tmp_path / "q").iterdir())
    back = CliRunner().invoke(cli, ["quarantine", "restore", str(folder)])
    assert back.exit_code == 0, back.output
    assert files(d / part) == before


def test_salvage_drops_the_overflowing_batch_instead(tmp_path):
    d, part = damaged(tmp_path, "offset-overflow")
    recover(d, "--salvage")
    assert (d / part / f"{0:020d}.log").stat().st_size == 1323
    assert not list((d / part).glob(f"{OVERFLOW_BASE:020d}.*"))
    assert recovery_point(d, part) == "codec-none 0 40"


@pytest.mark.parametrize(
    "tail, words",
    [
        (
            b"\0" * 20,
            "Found record size 0 smaller than minimum record overhead (14) (CorruptRecordException)",
        ),
        (None, "NoSuchElementException in LocalLog.splitOverflowedSegment"),
    ],
)
def test_refused_where_the_broker_cannot_split_and_does_not_start(tmp_path, tail, words):
    # checked on a 3.3.1 broker: "Error starting LogManager" with each of these exceptions
    d, part = damaged(tmp_path, "offset-overflow")
    log = d / part / f"{0:020d}.log"
    data = log.read_bytes()
    log.write_bytes(data + (tail if tail is not None else data[:40]))
    r = recover(d, code=3)
    out = " ".join(r.output.split())
    assert f"{log}: byte 1962: a batch at byte 1323 ends at offset {OVERFLOW_BASE + 19}" in out
    assert words in out and "the broker does not start" in out
    assert log.read_bytes()[:1962] == data


@pytest.mark.skipif(not live.available(), reason="needs KAFKA_HOME (Kafka 3.3.1) and KAFKA_PY")
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_live_broker_loads_the_damage_as_recover_does(case, tmp_path):
    from tests.differential.cases import _broker_recovers, copy_dir
    from tests.differential.compare import compare_log_dirs

    d, part = damaged(tmp_path, case)
    ours = copy_dir(d, tmp_path / "kafkalog")
    recover(ours)
    (tmp_path / "broker").mkdir()
    theirs, run, refused = _broker_recovers(d, tmp_path / "broker")
    print("broker:", sorted(p.name for p in Path(live.KAFKA_HOME, "libs").glob("kafka_2.13-*.jar")))
    assert not refused and not run.errors
    assert compare_log_dirs(theirs, ours) == {}


def test_damage_the_marker_hides_is_named_with_its_fix(tmp_path):
    # issue 26's power cut: a flipped byte in codec-none-0 and a cut last batch in multi-segment-0,
    # after an orderly stop (.kafka_cleanshutdown). The broker looks at neither; recover leaves both
    # as the broker will load them, and says so, with what --all and --salvage would do
    d, _ = damaged(tmp_path, "active-cut-under-marker")
    log = d / "codec-none-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    data[700] ^= 0x55  # inside the batch at 645 (offsets 20..39)
    log.write_bytes(bytes(data))
    r = CliRunner().invoke(cli, ["recover", "--dry-run", "--topic", "codec-none", str(d)])
    out = " ".join(r.output.split())
    assert (
        "codec-none-0: segment 0: the batch of 678 bytes fails its CRC check: the broker does not look at it "
        "(.kafka_cleanshutdown: no recovery) and serves it as it is"
    ) in out
    assert (
        "`kafkalog recover --all` recovers as the broker would without the marker, truncating at byte 645 "
        "(offsets 20..59); `kafkalog recover --all --salvage` skips only the damaged bytes and keeps the "
        "intact batches after them (offsets 40..59)"
    ) in out
    r = CliRunner().invoke(cli, ["recover", "--dry-run", "--all", "--topic", "codec-none", str(d)])
    out = " ".join(r.output.split())
    assert (
        "offsets 20..39 are damaged, and the intact batches after them (offsets 40..59) go too: "
        "--salvage keeps those"
    ) in out
    r = CliRunner().invoke(
        cli, ["recover", "--dry-run", "--all", "--salvage", "--topic", "codec-none", str(d)]
    )
    assert "skipped damaged bytes [645, 1323): offsets 20..39 are lost for good" in " ".join(
        r.output.split()
    )
