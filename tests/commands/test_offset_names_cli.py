"""A file named with 20 digits above Long.MAX_VALUE: Kafka's LogFileUtils.offsetFromFileName
(Long.parseLong) fails on it, so the broker does not load the partition. Every command says so
in one line with exit 4 (a path that is no Kafka file), doctor as the broker's failure to start,
and a command that changes log dirs changes nothing there (it never writes the number into a
checkpoint its next run cannot read); a reader that does not read such a file (verify-crc, a
snapshot) is not stopped by it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.errors import InputError
from kafkalog_cli.storage.names import offset_from_name, unparsable_offset
from tests.helpers.paths import EXAMPLES as EXAMPLE

TOO_BIG = "99999999999999999999"


def test_a_name_above_long_max_is_no_offset_kafka_reads(tmp_path):
    assert offset_from_name("09223372036854775807.log") == (1 << 63) - 1
    assert offset_from_name(TOO_BIG + ".log") is None
    with pytest.raises(InputError) as e:
        unparsable_offset(tmp_path, TOO_BIG + ".log", (".log",))
    assert e.value.exit_code == 4 and e.value.path == f"{tmp_path}/{TOO_BIG}.log"
    assert "Long.MAX_VALUE" in str(e.value)
    unparsable_offset(tmp_path, TOO_BIG + ".snapshot", (".log",))  # not a suffix asked for


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLE, d)
    (d / "codec-gzip-0" / "00000000000000000000.log").rename(d / "codec-gzip-0" / f"{TOO_BIG}.log")
    return d


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "args",
    [
        ["delete-records", "--before", "10", "--topic", "codec-gzip"],
        ["recover", "--topic", "codec-gzip"],
        [
            "retain",
            "--topic",
            "codec-gzip",
            "--config",
            "retention.ms=1000",
            "--assume-kafka-defaults",
        ],
    ],
)
def test_a_command_that_changes_log_dirs_refuses_and_changes_nothing(tmp_path, args):
    d = _copy(tmp_path)
    before = _tree(d)
    r = CliRunner().invoke(cli, [*args, str(d)])
    assert r.exit_code == 4, r.output
    assert f"{d / 'codec-gzip-0' / TOO_BIG}.log: a base offset above Long.MAX_VALUE" in r.output
    assert "Traceback" not in r.output and "internal error" not in r.output
    assert {k: v for k, v in _tree(d).items() if not k.startswith(".lock")} == {
        k: v for k, v in before.items() if not k.startswith(".lock")
    }


@pytest.mark.parametrize(
    "args", [["verify-crc"], ["describe"], ["get-offsets", "--time", "latest"], ["dump-log"]]
)
def test_a_read_command_names_it(tmp_path, args):
    d = _copy(tmp_path)
    r = CliRunner().invoke(cli, [*args, str(d / "codec-gzip-0")])
    assert r.exit_code == 4, r.output
    assert "a base offset above Long.MAX_VALUE" in r.output
    assert "Traceback" not in r.output and "internal error" not in r.output


def test_doctor_says_the_broker_does_not_start(tmp_path):
    d = _copy(tmp_path)
    r = CliRunner().invoke(cli, ["doctor", str(d)])
    assert r.exit_code == 8, r.output
    assert (
        f"ERROR   {d / 'codec-gzip-0' / TOO_BIG}.log: a base offset above Long.MAX_VALUE"
        in r.output
    )


def test_verify_crc_reads_past_a_snapshot_it_does_not_read(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLE, d)
    (d / "txn-0" / "00000000000000000015.snapshot").rename(d / "txn-0" / f"{TOO_BIG}.snapshot")
    r = CliRunner().invoke(cli, ["verify-crc", "--deep", str(d)])
    assert r.exit_code == 0, r.output


def test_an_offset_past_long_max_names_no_file_and_no_checkpoint_entry():
    from kafkalog_cli.errors import CorruptRecordError
    from kafkalog_cli.formats.checkpoints import encode_offset_checkpoint
    from kafkalog_cli.storage.names import filename_prefix

    assert filename_prefix((1 << 63) - 1) == "09223372036854775807"
    with pytest.raises(CorruptRecordError):
        filename_prefix(1 << 63)
    with pytest.raises(CorruptRecordError) as e:
        encode_offset_checkpoint({("t", 0): 1 << 63})
    assert "t-0: offset 9223372036854775808 is not a Kafka long" in str(e.value)


def test_recover_refuses_a_batch_whose_offsets_overflow_and_changes_nothing(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLE, d)
    log = d / "codec-none-0" / "00000000000000000000.log"
    raw = bytearray(log.read_bytes())
    pos = 0
    while pos + 12 <= len(raw):  # to the last batch: its base offset is not in its CRC
        size = int.from_bytes(raw[pos + 8 : pos + 12], "big")
        if pos + 12 + size >= len(raw):
            break
        pos += 12 + size
    raw[pos : pos + 8] = ((1 << 63) - 1).to_bytes(8, "big")
    log.write_bytes(bytes(raw))
    (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
    before = _tree(d)
    r = CliRunner().invoke(cli, ["recover", "--repair", "--all", "--topic", "codec-none", str(d)])
    assert r.exit_code == 3, r.output
    assert "is not a Kafka long" in r.output and "Traceback" not in r.output
    strip = lambda t: {k: v for k, v in t.items() if not k.startswith(".lock")}  # noqa: E731
    assert strip(_tree(d)) == strip(before)
