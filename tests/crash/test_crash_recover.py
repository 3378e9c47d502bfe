"""Crash safety: kill recover and roll after every single file-system step; a following
`recover` must reach the uninterrupted run's state and keep every record it keeps."""

import random
import signal
import subprocess
import sys
import time

import pytest

from kafkalog_cli.formats.records import iter_batches
from kafkalog_cli.ops import recover, roll
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps, InjectedFault
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.broker_cases import copy_case, segment_files


def offsets(d):
    out = set()
    for part in sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("__")):
        for log in sorted(part.glob("*.log")):
            data = log.read_bytes()
            for b in iter_batches(data):
                out.add((part.name, b.base_offset, b.last_offset))
    return out


def run_recover(d, q, fault_after=None):
    ((ld, parts),) = partition_dirs_for([d]).items()
    p = recover.plan(ld, parts, recover.RecoverOptions(now_ms=1795248200000))
    return apply(p, FsOps(ld, Quarantine(q, "recover"), fault_after=fault_after))


def run_roll(d, q, fault_after=None):
    ((ld, parts),) = partition_dirs_for([d]).items()
    p = roll.plan(ld, parts, roll.RollOptions(now_ms=1795249186389, if_needed=True))
    return apply(p, FsOps(ld, Quarantine(q, "roll"), fault_after=fault_after))


@pytest.mark.parametrize("case", ["torn-tail", "leftovers", "unclean-kill"])
def test_kill_recover_after_every_step(case, tmp_path):
    ref = copy_case(f"recover-{case}", tmp_path / "ref")
    total = run_recover(ref, tmp_path / "q")["fs_steps"]
    want, kept = segment_files(ref), offsets(ref)
    assert total > 3
    for n in range(1, total):
        d = copy_case(f"recover-{case}", tmp_path / f"k{n}")
        with pytest.raises(InjectedFault):
            run_recover(d, tmp_path / "q", fault_after=n)
        run_recover(d, tmp_path / "q")
        assert segment_files(d) == want, f"after a kill at step {n}"
        assert kept <= offsets(d)


def test_kill_roll_after_every_step(tmp_path):
    ref = copy_case("roll-time-roll", tmp_path / "ref")
    unrolled = copy_case("roll-time-roll", tmp_path / "unrolled")
    run_recover(unrolled, tmp_path / "q")
    total = run_roll(ref, tmp_path / "q")["fs_steps"]
    run_recover(ref, tmp_path / "q")
    states = (segment_files(ref), segment_files(unrolled))
    kept = offsets(ref)
    for n in range(1, total):
        d = copy_case("roll-time-roll", tmp_path / f"k{n}")
        with pytest.raises(InjectedFault):
            run_roll(d, tmp_path / "q", fault_after=n)
        run_recover(d, tmp_path / "q")
        got = segment_files(d)
        # each partition ends either rolled or not, never in between
        for part in ("roll-createtime-0", "roll-logappend-0", "roll-wallclock-0"):
            mine = {k: v for k, v in got.items() if k.startswith(part)}
            assert any(
                mine == {k: v for k, v in s.items() if k.startswith(part)} for s in states
            ), (n, part)
        assert kept <= offsets(d)


def _big_partition(d, mib=48):
    """A v2 partition of `mib` MiB (100-byte records, 100 per batch) with a torn tail."""
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    part = d / "big-0"
    part.mkdir(parents=True)
    (d / "recovery-point-offset-checkpoint").write_text("0\n1\nbig 0 0\n")
    recs = [
        SimpleRecord(key=None, value=b"v" * 100, headers=(), timestamp=1700000000000 + i)
        for i in range(100)
    ]
    batch0 = build_v2_batch(recs, 0)
    import struct

    n = (mib << 20) // len(batch0)
    with open(part / "00000000000000000000.log", "wb") as f:
        for i in range(n):
            b = bytearray(batch0)
            struct.pack_into(">q", b, 0, i * 100)
            f.write(b)
        f.write(batch0[: len(batch0) // 2])
    return n * 100


@pytest.mark.slow
def test_sigkill_installed_command_at_random_instants(tmp_path):
    d = tmp_path / "logs"
    n_records = _big_partition(d)
    exe = [sys.executable, "-m", "kafkalog_cli", "recover", "--no-quarantine", str(d)]
    rnd = random.Random(3)
    for i in range(4):
        p = subprocess.Popen(exe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rnd.uniform(0.05, 0.6))
        p.send_signal(signal.SIGKILL)
        p.wait()
    r = subprocess.run(exe, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    log = d / "big-0" / "00000000000000000000.log"
    batches = list(iter_batches(log.read_bytes()))
    assert batches[-1].next_offset == n_records
    assert (d / "big-0" / "00000000000000000000.index").stat().st_size > 0
    r = subprocess.run(exe, capture_output=True, text=True)
    assert "nothing to do" in r.stdout


def test_kill_the_overflow_split_after_every_step(tmp_path):
    # a damaged base offset (outside the CRC) in codec-none-0's last batch, after a crash: recover
    # splits the segment as the broker does (.cleaned -> .swap -> rename). Killed at any step, a
    # second recover (as the broker's LogLoader) finishes or redoes the split and reaches the same
    # dir, keeping every batch
    from tests.helpers.recovery import damaged

    def run(d, fault_after=None):
        ((ld, parts),) = partition_dirs_for([d]).items()
        p = recover.plan(ld, parts, recover.RecoverOptions(now_ms=1795460000000))
        return apply(p, FsOps(ld, Quarantine(tmp_path / "q", "recover"), fault_after=fault_after))

    ref, _ = damaged(tmp_path / "ref", "offset-overflow")
    kept = offsets(ref)
    total = run(ref)["fs_steps"]
    want = segment_files(ref)
    assert total > 8
    for n in range(1, total):
        d, _ = damaged(tmp_path / f"k{n}", "offset-overflow")
        with pytest.raises(InjectedFault):
            run(d, fault_after=n)
        run(d)
        assert segment_files(d) == want, f"after a kill at step {n}"
        assert kept <= offsets(d)
