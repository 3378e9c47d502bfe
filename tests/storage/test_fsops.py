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
