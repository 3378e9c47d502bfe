"""A batch whose base offset jumps ahead inside a segment (a flipped byte of the base offset, which
the v2 CRC does not cover; the relative offset stays below 2^31): Kafka 3.3.1's LogSegment.recover
keeps it, kafka-dump-log lists it where it lies, and the broker serves it there, between lower
offsets. Case 3100002 of `tests.differential recover --cases 24 --seed 31`
(tests/fixtures/broker/recover-offset-jump, README.md there)."""

import hashlib
import json
import shutil

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.config.resolver import ConfigResolver
from tests.differential import broker as live
from tests.differential.generate import topic_configs
from tests.differential.loadcheck import (
    Batch,
    Segment,
    broker_loads,
    consumed,
    kafkalog,
    listed_records,
    listing,
    records_of,
    served_problems,
)
from tests.helpers.broker_cases import FIXTURES, copy_case
from tests.helpers.paths import EXAMPLES
from tests.helpers.recovery import run

CASE = FIXTURES / "recover-offset-jump"
PART = "g-gzip-0"
JUMP = 27 + (0x5E << 24)  # the batch of offset 27, byte 2994 flipped 0x00 -> 0x5e


def recover(d, tmp_path, all_segments):
    # the topic's configs as the harness created it (index.interval.bytes 512; the fixture keeps
    # no __cluster_metadata)
    resolver = ConfigResolver.of_log_dir(d, topic_overrides={"g-gzip": topic_configs("g-gzip")})
    run(d, tmp_path, all_segments=all_segments, resolver=resolver)


@pytest.mark.parametrize("all_segments", [False, True])
def test_recover_keeps_the_batch_and_rebuilds_what_the_broker_rebuilt(tmp_path, all_segments):
    d = copy_case("recover-offset-jump", tmp_path)
    log = d / PART / f"{0:020d}.log"
    before = log.read_bytes()
    recover(d, tmp_path, all_segments)
    assert log.read_bytes() == before  # nothing truncated, nothing deleted
    for name in (f"{0:020d}.log", f"{0:020d}.index", f"{0:020d}.timeindex", f"{112:020d}.snapshot"):
        assert (d / PART / name).read_bytes() == (CASE / "after" / PART / name).read_bytes(), name
    assert sorted(f.name for f in (d / PART).iterdir()) == sorted(
        f.name for f in (CASE / "after" / PART).iterdir()
    )
    assert "g-gzip 0 112" in (d / "recovery-point-offset-checkpoint").read_text().splitlines()


def test_dump_log_lists_the_batch_where_it_lies_as_kafka_dump_log_does():
    log = CASE / "before" / PART / f"{0:020d}.log"
    r = CliRunner().invoke(cli, ["dump-log", "--deep-iteration", str(log)])
    assert r.exit_code == 0, r.output
    # kafka-dump-log 3.3.1's lines for this file, stdout then stderr
    assert (
        "baseOffset: 1577058331 lastOffset: 1577058331 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 2990 CreateTime: 1795781303588 size: 321 magic: 2 "
        "compresscodec: gzip crc: 1012957143 isvalid: true"
    ) in r.stdout
    assert r.stderr == (
        f"Non-consecutive offsets in {log}\n"
        f"  {JUMP} is followed by 28\n"
        f"  26 is followed by {JUMP}\n"
    )


def test_the_load_check_expects_what_the_broker_served(tmp_path):
    # regression: the load check took the records below the broker's end offset (112), in offset
    # terms, as what the broker serves, and reported "served 112 records, dump-log lists 111" and
    # "dump-log lists records at or beyond the broker's end offset" where both agreed
    d = copy_case("recover-offset-jump", tmp_path)
    recover(d, tmp_path, True)
    segments = listing(d / PART)
    listed = records_of(segments)
    served = json.loads((CASE / "SERVED.json").read_text())
    assert [r[0] for r in listed] == served["offsets"]  # dump-log's order is the broker's
    assert hashlib.sha256(json.dumps(listed).encode()).hexdigest() == served["records_sha256"]
    g = {"start": served["start"], "end": served["end"], "records": listed}
    assert consumed(segments, 0, 112) == listed
    assert served_problems(PART, g, segments, 0) == []


def _seg(base, *batches):
    out, pos = [], 0
    for offsets in batches:
        out.append(Batch(pos, 100, offsets[-1], [[o, 0, None, None, []] for o in offsets]))
        pos += 100
    return Segment(base, out)


def test_consumed_follows_positions_and_the_clients_fetch_offset():
    segs = [_seg(0, [0, 1], [500, 501], [4, 5]), _seg(6, [6], [7])]
    assert [r[0] for r in consumed(segs, 0, 8)] == [0, 1, 500, 501, 4, 5, 6, 7]
    # from the log start 1: the leading record below the fetch offset is dropped
    assert [r[0] for r in consumed(segs, 1, 8)] == [1, 500, 501, 4, 5, 6, 7]
    # from 4 without an index: the first batch reaching 4 is the jumped one
    assert [r[0] for r in consumed(segs, 4, 8)] == [500, 501, 4, 5, 6, 7]
    # with an index entry (5, 200), the broker starts at position 200
    segs[0].index = [(5, 200)]
    assert [r[0] for r in consumed(segs, 5, 8)] == [5, 6, 7]
    # a segment whose last batch jumps: the client's next fetch is past the end
    segs = [_seg(0, [0], [900]), _seg(2, [2, 3])]
    assert [r[0] for r in consumed(segs, 0, 4)] == [0, 900]
    g = {"start": 0, "end": 4, "records": [[o, 0, None, None, []] for o in (0, 900)]}
    assert served_problems("t-0", g, segs, 0) == [
        "t-0: dump-log lists 2 records at or above the log start offset a consumer does not reach before "
        "the broker's end offset 4: [2, 3]"
    ]


@pytest.mark.skipif(
    not live.available(), reason="needs KAFKA_HOME (Kafka 3.3.1 or 3.9.0-rc3) and KAFKA_PY"
)
def test_a_live_broker_recovers_and_serves_the_jump_as_kafkalog_does(tmp_path):
    # the same damage on examples/logdir: codec-none-0's batch of offsets 20..39 (at 645) says
    # 20 + 0x5e << 24; after a crash (no .kafka_cleanshutdown)
    from tests.differential.cases import _broker_recovers, copy_dir
    from tests.differential.compare import compare_log_dirs

    print("broker:", live.version_label())
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / ".lock").unlink()
    (d / ".kafka_cleanshutdown").unlink()
    log = d / "codec-none-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    data[645 + 4] ^= 0x5E
    log.write_bytes(bytes(data))
    ours = copy_dir(d, tmp_path / "kafkalog")
    r = kafkalog("recover", "--all", "--no-quarantine", "--now", 1795460000000, ours)
    assert r.rc == 0, r.stderr
    (tmp_path / "broker").mkdir()
    theirs, run_, refused = _broker_recovers(d, tmp_path / "broker")
    assert not refused and not run_.errors
    assert compare_log_dirs(theirs, ours) == {}
    assert [r[0] for r in listed_records(ours / "codec-none-0")][19:22] == [
        19,
        20 + (0x5E << 24),
        21 + (0x5E << 24),
    ]
    (tmp_path / "load").mkdir()
    check = broker_loads(ours, tmp_path / "load")
    assert check.ok, check.problems
    assert check.records
