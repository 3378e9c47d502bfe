"""kafkalog compact through the command line."""
from __future__ import annotations

import json

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage.lock import LogDirLock
from tests.ops.compact_helpers import FIXTURES, records_of, restore

CFG = ["--topic-config", "cmp-none:cleanup.policy=compact", "--topic-config", "cmp-none:segment.bytes=16384",
       "--topic-config", "cmp-none:index.interval.bytes=512", "--topic-config", "cmp-none:min.cleanable.dirty.ratio=0.01"]


def test_compact_json_then_nothing_left(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    r = CliRunner().invoke(cli, ["compact", str(log_dir / "cmp-none-0"), "--now", "1795248446186", "--format", "json", *CFG])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["cleaned"][0]["messages_written"] == 100 and rep["cleaned"][0]["cleaner_offset_checkpoint"] == 1867
    assert records_of(log_dir / "cmp-none-0") == records_of(FIXTURES / "compact-keyed-overwrites" / "after" / "cmp-none-0")
    r = CliRunner().invoke(cli, ["compact", str(log_dir / "cmp-none-0"), "--now", "1795248446186", *CFG])
    assert r.exit_code == 0 and "nothing cleanable" in r.output


def test_dry_run_human(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    r = CliRunner().invoke(cli, ["compact", str(log_dir), "--dry-run", "--now", "1795248446186", *CFG])
    assert r.exit_code == 0, r.output
    assert "clean cmp-none-0: dirty [0, 1867) ratio 1.000" in r.output and "100 keys" in r.output


def test_locked_log_dir_exit_5(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    import subprocess, sys, time
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl,sys,time;f=open(sys.argv[1],'a');fcntl.lockf(f,fcntl.LOCK_EX);print('x',flush=True);time.sleep(30)",
                               str(log_dir / ".lock")], stdout=subprocess.PIPE)
    try:
        holder.stdout.readline()
        r = CliRunner().invoke(cli, ["compact", str(log_dir), "--now", "1795248446186", *CFG])
        assert r.exit_code == 5 and "lock" in r.output.lower()
    finally:
        holder.kill()


def test_corrupt_segment_one_line_with_position(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    seg = log_dir / "cmp-none-0" / "00000000000000000174.log"
    data = bytearray(seg.read_bytes())
    data[57:61] = (1000).to_bytes(4, "big")          # the first batch claims 1000 records
    seg.write_bytes(bytes(data))
    r = CliRunner().invoke(cli, ["compact", str(log_dir), "--now", "1795248446186", *CFG])
    assert r.exit_code == 3, r.output
    line = r.output.strip()
    assert "\n" not in line and "00000000000000000174.log: byte 0:" in line and "Traceback" not in line


def test_bad_dedupe_buffer_size_is_usage_error(tmp_path):
    r = CliRunner().invoke(cli, ["compact", str(tmp_path), "--dedupe-buffer-size", "12"])
    assert r.exit_code == 2 and "holds no key" in r.output
