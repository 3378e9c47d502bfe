import errno
import hashlib
import json
import os

import pytest

from kafkalog_cli.errors import WriteError
from kafkalog_cli.storage.fsops import TMP_SUFFIX, FsOps, InjectedFault
from kafkalog_cli.storage.quarantine import EntryKind, default_quarantine_root
from kafkalog_cli.storage.quarantine_writer import Quarantine


def _manifest(folder):
    """The manifest's header and its entry lines (a completion line repeats an entry's id)."""
    header, *entries = [
        json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()
    ]
    return (header, *entries)


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
    header, e = _manifest(tmp_path / "q" / "S-recover")
    assert (e["kind"], e["start"], e["end"], e["reason"]) == ("cut", 10, 17, "tail garbage")
    assert e["source"] == str(p) and e["stored"] == "t-0/00000000000000000000.log.bytes-10-17"
    assert e["sha256"] == hashlib.sha256(b"garbage").hexdigest() and e["size"] == 7


def test_truncate_of_zero_padding_copies_nothing(logdir, tmp_path):
    p = logdir / "t-0" / "x.index"
    p.write_bytes(b"\1" * 8 + bytes(800))
    q = Quarantine(tmp_path / "q", "roll", stamp="S")
    FsOps(logdir, q).truncate(p, 8, "trim")
    assert p.stat().st_size == 8
    assert [(e.kind, e.zeros, e.stored) for e in q.entries] == [(EntryKind.CUT, True, None)]
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
    assert p.read_bytes() == b"old"  # only the tmp file was written
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
    assert p.exists()  # as after a SIGKILL: LogLoader deletes .cleaned files


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
    ops.replace_segments(
        [d / "00000000000000000000.log.cleaned", d / "00000000000000000000.index.cleaned"],
        [
            (d / "00000000000000000000.log", "cleaned"),
            (d / "00000000000000000000.index", "cleaned"),
            (d / "00000000000000000005.log", "merged"),
            (d / "00000000000000000005.index", "merged"),
        ],
    )
    assert sorted(os.listdir(d)) == ["00000000000000000000.index", "00000000000000000000.log"]
    assert (d / "00000000000000000000.log").read_bytes() == b"new"
    assert (
        tmp_path / "q" / "S-compact" / "t-0" / "00000000000000000005.log"
    ).read_bytes() == b"old5"
    kinds = [
        j.split()[0] for j in ops.journal if not j.endswith("manifest.json") and "manifest" not in j
    ]
    # every .cleaned is a .swap before the first old file leaves, and the .swap suffix goes last
    renames = [
        j
        for j in ops.journal
        if j.startswith("rename") and "manifest" not in j and TMP_SUFFIX not in j
    ]
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


# -- what the quarantine records: one manifest line per entry, appended ------------------------


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_the_manifest_is_a_journal_appended_one_line_per_entry(logdir, tmp_path):
    d = logdir / "t-0"
    for i in range(3):
        (d / f"{i:020d}.log").write_bytes(b"x%d" % i)
    q = Quarantine(tmp_path / "q", "retain", stamp="S")
    ops = FsOps(logdir, q)
    ops.prepare_quarantine()
    journal = tmp_path / "q" / "S-retain" / "manifest.jsonl"
    sizes = [journal.stat().st_size]
    for i in range(3):
        before = journal.read_bytes()
        ops.delete(d / f"{i:020d}.log", "retention")
        after = journal.read_bytes()
        assert (
            after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
        )  # appended, not rewritten
        sizes.append(len(after))
    header, *entries = _manifest(journal.parent)
    assert header == {
        "kafkalog_quarantine": 2,
        "op": "retain",
        "created": "S",
        "log_dir": str(logdir),
    }
    for i, e in enumerate(entries):
        assert (
            e["kind"] == "removed"
            and e["source"] == str(d / f"{i:020d}.log")
            and e["log_dir"] == str(logdir)
        )
        assert (e["size"], e["sha256"]) == (2, _sha(b"x%d" % i))
        assert (journal.parent / e["stored"]).read_bytes() == b"x%d" % i
    assert not (journal.parent / "manifest.json").exists()


def test_delete_keeps_the_very_file_by_a_hard_link_then_unlinks(logdir, tmp_path):
    p = logdir / "t-0" / "00000000000000000000.log"
    p.write_bytes(b"data")
    ino = p.stat().st_ino
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S"))
    ops.delete(p, "retention")
    stored = tmp_path / "q" / "S-retain" / "t-0" / "00000000000000000000.log"
    assert stored.stat().st_ino == ino and stored.stat().st_nlink == 1 and not p.exists()
    # the entry was written after the link and before the unlink
    kinds = [j.split()[0] for j in ops.journal]
    assert kinds.index("link") < kinds.index("append") < kinds.index("unlink")


def test_across_file_systems_a_file_is_copied_through_a_partial_name(logdir, tmp_path):
    p = logdir / "t-0" / "00000000000000000000.log"
    p.write_bytes(b"data" * 1000)
    os.utime(p, ns=(5_000_000_000, 5_000_000_000))
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S"))
    seen = []

    def no_links(kind, path):
        seen.append((kind, path.name))
        if kind == "link":
            raise OSError(errno.EXDEV, "Invalid cross-device link", str(path))

    ops.before = no_links
    ops.delete(p, "retention")
    folder = tmp_path / "q" / "S-retain"
    stored = folder / "t-0" / "00000000000000000000.log"
    assert stored.read_bytes() == b"data" * 1000 and stored.stat().st_mtime_ns == 5_000_000_000
    assert not list(folder.rglob("*.partial")) and ("copy", stored.name) in seen
    (e,) = _manifest(folder)[1:]
    assert e["sha256"] == _sha(b"data" * 1000)
    assert any(j.startswith("copy") for j in ops.journal)


def test_write_atomic_keeps_what_it_overwrites(logdir, tmp_path):
    p = logdir / "t-0" / "00000000000000000000.index"
    p.write_bytes(b"old index")
    q = Quarantine(tmp_path / "q", "recover", stamp="S")
    FsOps(logdir, q).write_atomic(p, b"\1" * 8, preallocate=16)
    folder = tmp_path / "q" / "S-recover"
    (e,) = _manifest(folder)[1:]
    assert e["kind"] == "overwritten" and (folder / e["stored"]).read_bytes() == b"old index"
    assert (e["size"], e["sha256"]) == (9, _sha(b"old index"))
    # the new content's preallocated zeros are counted, not hashed
    assert (e["new_size"], e["new_sha256"], e["new_zeros"]) == (16, _sha(b"\1" * 8), 8)
    assert e["tmp"] == str(p) + TMP_SUFFIX


def test_write_atomic_of_identical_content_keeps_nothing(logdir, tmp_path):
    p = logdir / "recovery-point-offset-checkpoint"
    p.write_bytes(b"0\n0\n")
    q = Quarantine(tmp_path / "q", "recover", stamp="S")
    FsOps(logdir, q).write_atomic(p, b"0\n0\n")
    (e,) = _manifest(tmp_path / "q" / "S-recover")[1:]
    assert e["kind"] == "mtime" and "stored" not in e
    assert sorted(os.listdir(tmp_path / "q" / "S-recover")) == ["manifest.jsonl"]


def test_a_new_file_is_recorded_as_created_before_it_exists(logdir, tmp_path):
    q = Quarantine(tmp_path / "q", "roll", stamp="S")
    ops = FsOps(logdir, q)
    folder = tmp_path / "q" / "S-roll"
    p = logdir / "t-0" / "00000000000000000010.log.cleaned"
    noted_when_opened = []

    def opening(kind, path):
        if path == p:
            lines = (folder / "manifest.jsonl").read_text().splitlines()
            noted_when_opened.append(
                any(json.loads(line).get("source") == str(p) for line in lines)
            )

    ops.before = opening
    with ops.create(p) as f:
        f.write(b"abc")
    assert noted_when_opened == [True]
    _, intent, done = _manifest(folder)
    assert intent["id"] == done["id"] and intent["kind"] == done["kind"] == "created"
    assert "new_sha256" not in intent and (done["new_size"], done["new_sha256"]) == (
        3,
        _sha(b"abc"),
    )
    ops.before = None
    ops.write_atomic(logdir / "t-0" / "x.snapshot", b"snap")
    e = _manifest(folder)[-1]
    assert (e["kind"], e["new_sha256"], e["tmp"]) == (
        "created",
        _sha(b"snap"),
        str(logdir / "t-0" / "x.snapshot") + TMP_SUFFIX,
    )


def test_rename_records_the_moved_content_and_keeps_a_target_it_replaces(logdir, tmp_path):
    d = logdir / "t-0"
    q = Quarantine(tmp_path / "q", "compact", stamp="S")
    ops = FsOps(logdir, q)
    with ops.create(d / "a.cleaned") as f:
        f.write(b"new")
    (d / "a").write_bytes(b"old")
    ops.rename(d / "a.cleaned", d / "a")
    folder = tmp_path / "q" / "S-compact"
    e = _manifest(folder)[-1]
    assert (e["kind"], e["source"], e["target"]) == ("renamed", str(d / "a.cleaned"), str(d / "a"))
    assert (e["new_size"], e["new_sha256"]) == (3, _sha(b"new"))
    assert (folder / e["stored"]).read_bytes() == b"old" and e["sha256"] == _sha(b"old")


def test_extend_and_set_mtime_record_what_they_change(logdir, tmp_path):
    p = logdir / "t-0" / "00000000000000000000.timeindex"
    p.write_bytes(b"\1" * 12)
    os.utime(p, ns=(7_000_000_000, 7_000_000_000))
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "roll", stamp="S"))
    ops.set_mtime(p, 9_000_000_000)
    ops.extend(p, 120)
    mt, ext = _manifest(tmp_path / "q" / "S-roll")[1:]
    assert (ext["kind"], ext["size"], ext["new_size"], ext["mtime_ns"]) == (
        "extended",
        12,
        120,
        9_000_000_000,
    )
    assert (mt["kind"], mt["mtime_ns"], mt["new_mtime_ns"]) == (
        "mtime",
        7_000_000_000,
        9_000_000_000,
    )


def test_without_a_quarantine_nothing_is_read_or_recorded(logdir):
    p = logdir / "t-0" / "f"
    p.write_bytes(b"old")
    ops = FsOps(logdir, Quarantine(None, "retain"))
    ops.write_atomic(p, b"new")
    ops.truncate(p, 1, "cut")
    ops.delete(p, "gone")
    assert [e.kind for e in ops.quarantine.entries] == [EntryKind.CUT, EntryKind.REMOVED]
    assert all(e.sha256 is None for e in ops.quarantine.entries)
    assert not any("manifest" in j or j.startswith("link") for j in ops.journal)


def test_processes_of_one_run_append_to_one_manifest(logdir, tmp_path):
    """compact --jobs: forked workers note entries into the same folder at once."""
    d = logdir / "t-0"
    for i in range(40):
        (d / f"{i:020d}.log").write_bytes(b"%d" % i)
    q = Quarantine(tmp_path / "q", "compact", stamp="S")
    pids = []
    for half in (0, 1):
        pid = os.fork()
        if pid == 0:
            try:
                ops = FsOps(logdir, Quarantine(q.root, q.op, q.stamp))
                for i in range(half, 40, 2):
                    ops.delete(d / f"{i:020d}.log", "cleaned")
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        assert os.waitpid(pid, 0)[1] == 0
    header, *entries = _manifest(tmp_path / "q" / "S-compact")
    assert header["op"] == "compact"
    assert sorted(e["source"] for e in entries) == sorted(
        str(d / f"{i:020d}.log") for i in range(40)
    )
    assert len({e["id"] for e in entries}) == 40


# ------------------------------------------------------------------ delete_segment_files: a batch
def _segments(logdir, n, size=100):
    d = logdir / "t-0"
    files = []
    for i in range(n):
        for ext, data in (("log", bytes([i % 251]) * size), ("index", bytes([i % 7]) * 8)):
            f = d / f"{i:020d}.{ext}"
            f.write_bytes(data)
            files.append((f, data))
    return files


def _exdev(kind, path):
    """A quarantine on another file system: no hard link into it."""
    if kind == "link":
        raise OSError(errno.EXDEV, "Invalid cross-device link", str(path))


def _count_syncs(monkeypatch):
    calls = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)
        monkeypatch.setattr(
            os, name, lambda fd, real=real, name=name: (calls.append(name), real(fd))[1]
        )
    return calls


@pytest.mark.parametrize("n", [3, 30])
def test_delete_segment_files_keeps_every_file_then_journals_all_at_once_then_unlinks(
    logdir, tmp_path, n, monkeypatch
):
    files = _segments(logdir, n)
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S"))
    ops.prepare_quarantine()
    folder = tmp_path / "q" / "S-retain"
    inodes = {f: f.stat().st_ino for f, _ in files}
    syncs = _count_syncs(monkeypatch)
    ops.delete_segment_files([(f, "retention") for f, _ in files])
    # the new t-0 of the quarantine made (its parent fsynced), one fsync of it once every file is
    # linked, one fdatasync of the manifest, one fsync of the partition dir: as many for 30
    # segments as for 3
    assert syncs == ["fsync", "fsync", "fdatasync", "fsync"]
    assert [j.split()[0] for j in ops.journal].count("append") == 1
    header, *entries = _manifest(folder)
    assert [e["source"] for e in entries] == [str(f) for f, _ in files]
    for (f, data), e in zip(files, entries):
        stored = folder / e["stored"]
        assert not f.exists() and stored.stat().st_ino == inodes[f]
        assert (e["kind"], e["reason"], e["size"], e["sha256"]) == (
            "removed",
            "retention",
            len(data),
            _sha(data),
        )
    # unlinked in the order given: the oldest segment first
    assert [j.split()[1] for j in ops.journal if j.startswith("unlink")] == [
        str(f) for f, _ in files
    ]


def test_delete_segment_files_copies_through_partial_names_across_file_systems(logdir, tmp_path):
    files = _segments(logdir, 4, size=3000)
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S"))
    ops.before = _exdev
    ops.delete_segment_files([(f, "retention") for f, _ in files])
    folder = tmp_path / "q" / "S-retain"
    assert not list(folder.rglob("*.partial"))
    for (f, data), e in zip(files, _manifest(folder)[1:]):
        assert (
            not f.exists()
            and (folder / e["stored"]).read_bytes() == data
            and e["sha256"] == _sha(data)
        )


def test_delete_segment_files_hashes_large_files_on_several_threads_exactly(
    logdir, tmp_path, monkeypatch
):
    from kafkalog_cli.storage import fsops as fsops_module

    monkeypatch.setattr(fsops_module, "_PARALLEL_HASH_BYTES", 1)
    files = _segments(logdir, 6, size=50_000)
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S"))
    ops.delete_segment_files([(f, "retention") for f, _ in files])
    entries = _manifest(tmp_path / "q" / "S-retain")[1:]
    assert [(e["size"], e["sha256"]) for e in entries] == [
        (len(data), _sha(data)) for _, data in files
    ]


def test_delete_segment_files_takes_a_file_named_twice_once(logdir, tmp_path):
    ((f, data),) = _segments(logdir, 1)[:1]
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S"))
    ops.delete_segment_files([(f, "retention"), (f, "retention")])
    (e,) = _manifest(tmp_path / "q" / "S-retain")[1:]
    assert not f.exists() and e["sha256"] == _sha(data)


def test_delete_segment_files_without_a_quarantine_drops_and_passes_over_missing_files(
    logdir, tmp_path
):
    files = _segments(logdir, 3)
    ops = FsOps(logdir, Quarantine(None, "retain"))
    gone = logdir / "t-0" / "00000000000000000099.log"
    ops.delete_segment_files([(f, "retention") for f, _ in files] + [(gone, "retention")])
    assert not list((logdir / "t-0").iterdir())
    assert [j.split()[0] for j in ops.journal] == ["unlink"] * 6 + ["fsync"]
    assert len(ops.quarantine.entries) == 7 and not (tmp_path / ".kafkalog-quarantine").exists()


def test_delete_segment_files_stopped_by_an_error_leaves_a_prefix_deleted_and_names_the_file(
    logdir, tmp_path
):
    from kafkalog_cli.storage import quarantine as q

    files = _segments(logdir, 3)
    before = {f: data for f, data in files}
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S"))
    unlinks = []

    def third_unlink_refused(kind, path):
        if kind == "unlink":
            unlinks.append(path)
            if len(unlinks) == 3:
                raise OSError(errno.EACCES, "Permission denied", str(path))

    ops.before = third_unlink_refused
    with pytest.raises(WriteError) as e:
        ops.delete_segment_files([(f, "retention") for f, _ in files])
    assert "permission denied" in str(e.value) and e.value.path == str(files[2][0])
    assert [f.exists() for f, _ in files] == [False, False, True, True, True, True]
    assert ops.journal[-1] == f"fsync {logdir / 't-0'}"  # what was unlinked is durable
    folder = q.QuarantineFolder.open(tmp_path / "q" / "S-retain")
    q.restore(q.plan_restore(folder), FsOps(logdir))
    assert {f: f.read_bytes() for f, _ in files} == before


@pytest.mark.parametrize("n", [3, 30])
def test_restore_of_a_batch_puts_every_file_back_with_a_fixed_number_of_syncs(
    logdir, tmp_path, n, monkeypatch
):
    from kafkalog_cli.storage import quarantine as q

    files = _segments(logdir, n)
    FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S")).delete_segment_files(
        [(f, "retention") for f, _ in files]
    )
    folder = q.QuarantineFolder.open(tmp_path / "q" / "S-retain")
    plan = q.plan_restore(folder)
    syncs = _count_syncs(monkeypatch)
    undo = FsOps(logdir)
    assert q.restore(plan, undo) == 2 * n
    assert {f: f.read_bytes() for f, _ in files} == {f: data for f, data in files}
    # restore.jsonl started, every file renamed back (newest first), the partition dir fsynced,
    # every entry's record in one append, complete
    renamed = [j.split()[1] for j in undo.journal if j.startswith("rename")]
    assert renamed == [str(folder.path / "t-0" / f.name) for f, _ in reversed(files)]
    assert syncs == ["fdatasync", "fsync", "fsync", "fdatasync", "fdatasync"]
    assert q.QuarantineFolder.open(folder.path).status == "restored"


@pytest.mark.parametrize("link", [True, False])
def test_a_batch_killed_after_its_manifest_write_is_restored_exactly(logdir, tmp_path, link):
    """Write-ahead: the entries are durable, no file has been unlinked yet (kept by a hard link,
    or by copies across file systems): restore finds every file in place and changes nothing."""
    from kafkalog_cli.storage import quarantine as q

    files = _segments(logdir, 5, size=2000)
    ref = FsOps(logdir, Quarantine(tmp_path / "ref", "retain", stamp="S"))
    ref.before = None if link else _exdev
    ref.prepare_quarantine()
    ref.delete_segment_files([(f, "retention") for f, _ in files])
    after_append = [j.split()[0] for j in ref.journal].index("append") + 1
    files = _segments(logdir, 5, size=2000)
    ops = FsOps(logdir, Quarantine(tmp_path / "q", "retain", stamp="S"), fault_after=after_append)
    ops.before = ref.before
    ops.prepare_quarantine()
    with pytest.raises(InjectedFault):
        ops.delete_segment_files([(f, "retention") for f, _ in files])
    folder = q.QuarantineFolder.open(tmp_path / "q" / "S-retain")
    assert len(folder.entries) == 10 and all(f.exists() for f, _ in files)
    plan = q.plan_restore(folder)
    assert not plan.conflicts and {s.action for s in plan.steps} == {q.RestoreAction.SKIP}
    q.restore(plan, FsOps(logdir))
    assert {f: f.read_bytes() for f, _ in files} == {f: data for f, data in files}
    assert q.QuarantineFolder.open(folder.path).status == "restored"
