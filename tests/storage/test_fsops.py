import errno
import json
import os

import pytest

from kafkalog_cli.errors import WriteError
from kafkalog_cli.storage.fsops import (FsOps, InjectedFault, Quarantine, TMP_SUFFIX,
                                        default_quarantine_root)


@pytest.fixture
def logdir(tmp_path):
    d = tmp_path / "logs"
    (d / "t-0").mkdir(parents=True)
    return d


def test_default_quarantine_is_outside_the_log_dir(logdir):
    root = default_quarantine_root(logdir)
    assert root == logdir.parent / ".kafkalog-quarantine" / "logs"
    assert logdir not in root.parents


def test_write_atomic_replaces_and_leaves_no_tmp(logdir):
    p = logdir / "t-0" / "f"
    p.write_bytes(b"old")
    ops = FsOps(logdir)
    ops.write_atomic(p, b"new", mtime_ns=1_000_000_000)
    assert p.read_bytes() == b"new"
    assert os.stat(p).st_mtime_ns == 1_000_000_000
    assert not (logdir / "t-0" / ("f" + TMP_SUFFIX)).exists()
    assert ops.steps == 3  # write tmp, rename, fsync dir


def test_write_atomic_preallocates(logdir):
    p = logdir / "t-0" / "i"
    FsOps(logdir).write_atomic(p, b"\1" * 8, preallocate=80)
    assert p.read_bytes() == b"\1" * 8 + bytes(72)


def test_truncate_quarantines_cut_bytes_first(logdir, tmp_path):
    p = logdir / "t-0" / "00000000000000000000.log"
    p.write_bytes(b"a" * 10 + b"garbage")
    q = Quarantine(tmp_path / "q", "recover", stamp="S")
    ops = FsOps(logdir, q)
    ops.truncate(p, 10, "tail garbage")
    assert p.read_bytes() == b"a" * 10
    stored = tmp_path / "q" / "S-recover" / "t-0" / "00000000000000000000.log.bytes-10-17"
    assert stored.read_bytes() == b"garbage"
    manifest = json.loads((tmp_path / "q" / "S-recover" / "manifest.json").read_text())
    (e,) = manifest["entries"]
    assert (e["what"], e["start"], e["end"], e["reason"]) == ("bytes", 10, 17, "tail garbage")
    assert e["source"] == str(p)


def test_truncate_of_zero_padding_copies_nothing(logdir, tmp_path):
    p = logdir / "t-0" / "x.index"
    p.write_bytes(b"\1" * 8 + bytes(800))
    q = Quarantine(tmp_path / "q", "roll", stamp="S")
    FsOps(logdir, q).truncate(p, 8, "trim")
    assert p.stat().st_size == 8
    assert [e.what for e in q.entries] == ["zeros"]
    assert not (tmp_path / "q" / "S-roll" / "t-0").exists()


def test_delete_moves_into_quarantine(logdir, tmp_path):
    p = logdir / "t-0" / "a.log.deleted"
    p.write_bytes(b"x")
    q = Quarantine(tmp_path / "q", "recover", stamp="S")
    FsOps(logdir, q).delete(p, "leftover")
    assert not p.exists()
    assert (tmp_path / "q" / "S-recover" / "t-0" / "a.log.deleted").read_bytes() == b"x"


def test_no_quarantine_really_drops(logdir, tmp_path):
    p = logdir / "t-0" / "a"
    p.write_bytes(b"x")
    q = Quarantine(None, "recover")
    FsOps(logdir, q).delete(p, "leftover")
    assert not p.exists()
    assert not (tmp_path / ".kafkalog-quarantine").exists()


def test_fault_injected_after_each_step(logdir):
    p = logdir / "t-0" / "f"
    p.write_bytes(b"old")
    with pytest.raises(InjectedFault):
        FsOps(logdir, fault_after=1).write_atomic(p, b"new")
    assert p.read_bytes() == b"old"     # only the tmp file was written
    with pytest.raises(InjectedFault):
        FsOps(logdir, fault_after=2).write_atomic(p, b"new")
    assert p.read_bytes() == b"new"


def test_errors_become_write_error_with_path(logdir):
    d = logdir / "t-0"
    os.chmod(d, 0o500)
    try:
        if os.access(d, os.W_OK):
            pytest.skip("running as root: chmod does not stop writes")
        with pytest.raises(WriteError) as e:
            FsOps(logdir).write_atomic(d / "f", b"x")
        assert "permission denied" in str(e.value)
    finally:
        os.chmod(d, 0o700)


def test_simulated_erofs_becomes_write_error(logdir):
    p = logdir / "t-0" / "f"
    p.write_bytes(b"old")
    ops = FsOps(logdir)

    def erofs(kind, path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    ops.before = erofs
    with pytest.raises(WriteError) as e:
        ops.write_atomic(p, b"new")
    assert "read-only file system" in str(e.value)
    assert p.read_bytes() == b"old"
    assert not (logdir / "t-0" / ("f" + TMP_SUFFIX)).exists()


def test_create_streams_fsyncs_and_counts_one_step(logdir):
    p = logdir / "t-0" / "00000000000000000000.log.cleaned"
    ops = FsOps(logdir)
    with ops.create(p) as f:
        f.write(b"abc")
        f.write(b"def")
    assert p.read_bytes() == b"abcdef"
    assert ops.journal == [f"write {p}"]


def test_create_removes_the_partial_file_on_error(logdir):
    p = logdir / "t-0" / "00000000000000000000.log.cleaned"
    ops = FsOps(logdir)

    def full_disk(kind, path):
        if kind == "write":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

    ops.before = full_disk
    with pytest.raises(WriteError, match="no space left on device"):
        with ops.create(p) as f:
            f.write(b"x")
    assert not p.exists()
    ops.before = None
    with pytest.raises(WriteError) as e:
        with ops.create(p) as f:
            f.write(b"x")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert not p.exists() and e.value.path == str(p) and ops.steps == 0


def test_create_leaves_the_file_on_a_crash(logdir):
    p = logdir / "t-0" / "00000000000000000000.log.cleaned"
    with pytest.raises(InjectedFault):
        with FsOps(logdir).create(p) as f:
            f.write(b"x")
            raise InjectedFault("killed")
    assert p.exists()   # as after a SIGKILL: LogLoader deletes .cleaned files


def test_copy_ranges(logdir):
    src = logdir / "t-0" / "a"
    src.write_bytes(b"0123456789")
    dst = logdir / "t-0" / "b"
    FsOps(logdir).copy_ranges(src, dst, [(0, 2), (5, 8)])
    assert dst.read_bytes() == b"01567"


def test_replace_segments_follows_local_log_replace_segments(logdir, tmp_path):
    d = logdir / "t-0"
    for base in (0, 5):
        (d / f"{base:020d}.log").write_bytes(b"old%d" % base)
        (d / f"{base:020d}.index").write_bytes(b"i%d" % base)
    (d / "00000000000000000000.log.cleaned").write_bytes(b"new")
    (d / "00000000000000000000.index.cleaned").write_bytes(b"ni")
    q = Quarantine(tmp_path / "q", "compact", stamp="S")
    ops = FsOps(logdir, q)
    ops.replace_segments([d / "00000000000000000000.log.cleaned", d / "00000000000000000000.index.cleaned"],
                         [(d / "00000000000000000000.log", "cleaned"), (d / "00000000000000000000.index", "cleaned"),
                          (d / "00000000000000000005.log", "merged"), (d / "00000000000000000005.index", "merged")])
    assert sorted(os.listdir(d)) == ["00000000000000000000.index", "00000000000000000000.log"]
    assert (d / "00000000000000000000.log").read_bytes() == b"new"
    assert (tmp_path / "q" / "S-compact" / "t-0" / "00000000000000000005.log").read_bytes() == b"old5"
    kinds = [j.split()[0] for j in ops.journal if not j.endswith("manifest.json") and "manifest" not in j]
    # every .cleaned is a .swap before the first old file leaves, and the .swap suffix goes last
    renames = [j for j in ops.journal if j.startswith("rename") and "manifest" not in j and TMP_SUFFIX not in j]
    assert [r.split(" -> ")[1].rsplit(".", 1)[-1] for r in renames[:2]] == ["swap", "swap"]
    assert all(r.split(" -> ")[0].endswith(".swap") for r in renames[-2:])
    assert "fsync" in kinds


def test_check_writable_names_the_dir(logdir):
    ops = FsOps(logdir)
    ops.check_writable(logdir / "t-0")
    assert os.listdir(logdir / "t-0") == []

    def ro(kind, path):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    ops.before = ro
    with pytest.raises(WriteError, match="read-only file system"):
        ops.check_writable(logdir / "t-0")
