"""get-offsets --time -6 (earliest-pending-upload, KIP-1023): answered as Kafka 4.2's
UnifiedLog.fetchEarliestPendingUploadOffset answers ListOffsets, and refused (exit 2) before 4.2,
whose kafka-get-offsets has no such spec (GetOffsetShell.parseOffsetSpec). The snapshot broker
(4.0.0-SNAPSHOT trunk 1eb76443) predates KIP-1023, so the answers are checked against committed
goldens (tests/fixtures/get-offsets-4.2/<case>.{stdout,stderr,rc}) only."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.corpus import corpus_path

from ..ops.tiered_helpers import copy_example, uploaded

GOLDENS = Path(__file__).resolve().parents[1] / "fixtures" / "get-offsets-4.2"
TIERED = ["--topic", "multi-segment", "--topic-config", "multi-segment:remote.storage.enable=true"]


def _below_local(d: Path) -> None:
    """Segment 0 gone after its upload: the local log starts at 300, the log start offset is 100."""
    for suffix in (".log", ".index", ".timeindex"):
        (d / "multi-segment-0" / f"00000000000000000000{suffix}").unlink()
    (d / "log-start-offset-checkpoint").write_text("0\n1\nmulti-segment 0 100\n")


def _uploaded_below_local(d):
    _below_local(d)
    uploaded(d, "multi-segment", 0, (0, 299))


def _uploaded_below_log_start(d):
    uploaded(d, "multi-segment", 0, (0, 99))
    (d / "log-start-offset-checkpoint").write_text("0\n1\nmulti-segment 0 200\n")


def _nothing_uploaded(d):
    uploaded(d, "multi-segment", 0)


def _nothing_uploaded_local_above_start(d):
    _below_local(d)
    uploaded(d, "multi-segment", 0)


CASES = {
    # name: (set-up, arguments after the log dir)
    "uploaded-0-299": (_uploaded_below_local, [*TIERED, "--kafka-version", "4.2", "--time", "-6"]),
    "uploaded-below-log-start": (
        _uploaded_below_log_start,
        [*TIERED, "--kafka-version", "4.2", "--time", "-6"],
    ),
    "nothing-uploaded": (
        _nothing_uploaded,
        [*TIERED, "--kafka-version", "4.2", "--time", "earliest-pending-upload"],
    ),
    "nothing-uploaded-local-above-start": (
        _nothing_uploaded_local_above_start,
        [*TIERED, "--kafka-version", "4.2", "--time", "-6"],
    ),
    "not-remote-enabled": (
        None,
        ["--topic", "multi-segment", "--kafka-version", "4.2", "--time", "-6"],
    ),
    "json": (
        _uploaded_below_local,
        [*TIERED, "--kafka-version", "4.2", "--time", "-6", "--format", "json"],
    ),
    "refused-4.1": (_uploaded_below_local, [*TIERED, "--kafka-version", "4.1", "--time", "-6"]),
    "refused-3.9-name": (None, ["--kafka-version", "3.9", "--time", "earliest-pending-upload"]),
    "refused-unknown-version": (_uploaded_below_local, [*TIERED, "--time", "-6"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_earliest_pending_upload_matches_golden(tmp_path, case):
    setup, args = CASES[case]
    d = copy_example(tmp_path)
    if setup is not None:
        setup(d)
    r = CliRunner().invoke(cli, ["get-offsets", str(d), *args])
    got = {
        "stdout": r.stdout.replace(str(d), "{LOGDIR}"),
        "stderr": r.stderr.replace(str(d), "{LOGDIR}"),
        "rc": f"{r.exit_code}\n",
    }
    for what, text in got.items():
        golden = GOLDENS / f"{case}.{what}"
        assert text == golden.read_text(), f"{case}.{what}"


def test_before_4_2_no_file_is_read(tmp_path):
    # refused on the option alone: a path that does not exist is not even looked at
    r = CliRunner().invoke(
        cli, ["get-offsets", str(tmp_path), "--kafka-version", "4.0", "--time", "-6"]
    )
    assert r.exit_code == 2 and "Kafka 4.0 has no such time" in r.stderr


WILD_42 = (
    corpus_path() / "wild" / "nomanazeem__Kafka-java" / "kafka-logs"
)  # metadata.version 29 (4.2-IV1)


@pytest.mark.skipif(not WILD_42.is_dir(), reason="needs the corpus's real 4.2 log dir")
def test_a_log_dir_only_4_2_loads_decides_it_without_the_option():
    r = CliRunner().invoke(
        cli, ["get-offsets", str(WILD_42), "--time", "-6", "--topic", "__consumer_offsets"]
    )
    assert r.exit_code == 0 and r.stdout == ""
    assert r.stderr == (
        "kafkalog: note: __consumer_offsets-15: no offset: the broker answers -1 "
        "(ListOffsetsResponse.UNKNOWN_OFFSET: kafka-get-offsets prints no line): not a remote-enabled "
        "partition\n"
    )
