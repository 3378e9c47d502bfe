""".kafka_cleanshutdown after a change, checked against the broker KAFKA_HOME names (3.3.1 or
3.9.0-rc3): where kafkalog keeps the marker the broker loads the result without recovering and
serves what dump-log lists; where kafkalog removes it the broker recovers and ends with the
indexes a recovery gives. Skipped without KAFKA_HOME; the version is printed and in the reason."""

import shutil

import pytest

from tests.differential import broker as live
from tests.differential.loadcheck import broker_loads, kafkalog, listed_records
from tests.helpers.clean_shutdown import MARKER_37, NOW, logdir, seg

pytestmark = pytest.mark.skipif(
    not live.available(), reason="needs KAFKA_HOME (Kafka 3.3.1 or 3.9.0-rc3) and KAFKA_PY"
)


def test_kept_marker_loads_without_recovery(tmp_path):
    print("broker:", live.version_label())
    d = logdir(tmp_path)
    log = seg(d, "codec-none-0", 0, ".log")
    whole = log.read_bytes()
    log.write_bytes(whole + whole[:40])  # a torn last batch the marker hides
    r = kafkalog("recover", "--all", "--no-quarantine", "--now", NOW, d)
    assert r.rc == 0, r.stderr
    assert (d / ".kafka_cleanshutdown").read_bytes() == MARKER_37
    (tmp_path / "work").mkdir()
    check = broker_loads(d, tmp_path / "work")
    assert check.ok, (
        check.problems
    )  # no segment recovered, every record served as dump-log lists it
    assert check.partitions and check.records


def test_a_kept_marker_loads_as_the_clean_shutdown_recover_modelled(tmp_path):
    """recover does under the marker what the broker's load does (a missing time index created
    empty), so the marker stays true: a broker skips the recovery and serves the same records,
    the time index as recover left it; --repair rebuilds it."""
    print("broker:", live.version_label())
    d = logdir(tmp_path)
    tidx = seg(d, "multi-segment-0", 300, ".timeindex")
    tidx.unlink()
    r = kafkalog("recover", "--quarantine", tmp_path / "q", "--now", NOW, d)
    assert r.rc == 0, r.stderr
    assert "removed .kafka_cleanshutdown" not in r.stderr
    assert (d / ".kafka_cleanshutdown").exists()
    left = tidx.read_bytes()
    records = listed_records(d / "multi-segment-0")
    copy = tmp_path / "data"
    shutil.copytree(d, copy)
    run, got = live.run_broker(
        copy,
        tmp_path / "broker",
        lambda b: b.client({"op": "consume", "partitions": ["multi-segment-0"]}),
    )
    assert "300" not in run.recovered_segments, run.log[-2000:]
    assert not run.errors, run.errors
    assert got["multi-segment-0"]["records"] == records
    assert (copy / "multi-segment-0" / tidx.name).read_bytes() == left
