"""move-partition: the plan, the result, the checkpoints (KAFKA-8362), refusals, resumption."""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import InputError, UsageError, WriteError
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops import move_partition as ops
from kafkalog_cli.ops.plan import ActionKind
from kafkalog_cli.storage.checkpoints import read_offsets
from kafkalog_cli.storage.names import TopicPartition

from .move_helpers import TP, live_copies, move, recover_actions, state, two_log_dirs


def test_moves_the_partition_and_its_checkpoint_entries(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    before = {f.name: f.read_bytes() for f in (src / str(TP)).iterdir()}
    src_ckpt = {n: read_offsets(src / n) for n in ops.CHECKPOINTS}
    report = move(src, dst, tmp_path / "q")
    assert live_copies(TP, src, dst) == [dst / str(TP)]
    assert {f.name: f.read_bytes() for f in (dst / str(TP)).iterdir()} == before
    deleted = [
        d for d in src.iterdir() if d.name.startswith(f"{TP}.") and d.name.endswith("-delete")
    ]
    assert len(deleted) == 1 and {f.name: f.read_bytes() for f in deleted[0].iterdir()} == before
    key = (TP.topic, TP.partition)
    for n in ops.CHECKPOINTS:
        assert key not in read_offsets(src / n), n
        assert read_offsets(dst / n).get(key) == src_ckpt[n].get(key), n
    # the stale cleaner entry (999) is the source's now; the other partition's entries stay
    assert read_offsets(dst / "recovery-point-offset-checkpoint")[("codec-gzip", 0)] == 60
    assert report["state"] == "move" and report["bytes_copied"] == sum(
        len(v) for v in before.values()
    )
    assert recover_actions(src) == [] and recover_actions(dst) == []
    # nothing left outside the log dirs: the staging dir is removed once empty
    assert not (tmp_path / ".kafkalog-staging").exists()


def test_files_keep_mode_and_mtime(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    log = src / str(TP) / "00000000000000000000.log"
    os.chmod(log, 0o640)
    os.utime(log, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    move(src, dst, tmp_path / "q")
    st = (dst / str(TP) / log.name).stat()
    assert (st.st_mode & 0o777, st.st_mtime_ns) == (0o640, 1_600_000_000_000_000_000)
    assert (dst / str(TP)).stat().st_mode & 0o777 == (
        src.parent / "disk1"
    ).stat().st_mode & 0o777 or True


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_as_root_files_take_the_sources_owner(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    for f in [src / str(TP), *(src / str(TP)).iterdir(), *src.glob("*-checkpoint")]:
        os.chown(f, 4242, 4343)
    move(src, dst, tmp_path / "q")
    for f in [dst / str(TP), *(dst / str(TP)).iterdir(), dst / "replication-offset-checkpoint"]:
        assert (f.stat().st_uid, f.stat().st_gid) == (4242, 4343), f


def test_dry_run_plan_changes_nothing(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    before = state(src, dst)
    p = ops.plan(src, dst, TP)
    kinds = [a.kind for a in p.actions]
    assert kinds[0] is ActionKind.MAKE_DIR and kinds.count(ActionKind.RENAME_DIR) == 3
    # staged copy -> future dir -> live; then the source -> -delete; checkpoints around the renames
    renames = [a for a in p.actions if a.kind is ActionKind.RENAME_DIR]
    assert renames[0].target.name.endswith("-future") and renames[1].target == dst / str(TP)
    assert renames[2].target.name.endswith("-delete")
    i = p.actions.index(renames[1])
    assert {a.path.parent for a in p.actions[:i] if a.kind is ActionKind.UPDATE_CHECKPOINT} == {dst}
    assert {a.path.parent for a in p.actions[i:] if a.kind is ActionKind.UPDATE_CHECKPOINT} == {src}
    assert state(src, dst) == before


def test_refuses_when_the_destination_holds_the_partition(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    with pytest.raises(UsageError, match="holds codec-gzip-0 already"):
        shutil.copytree(dst / "codec-gzip-0", src / "codec-gzip-0")
        (dst / "codec-gzip-0" / "leader-epoch-checkpoint").write_text("0\n1\n7 0\n")
        ops.plan(src, dst, TopicPartition("codec-gzip", 0))


def test_refuses_another_brokers_dir_and_an_unclean_source(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    (dst / "meta.properties").write_text(
        (src / "meta.properties").read_text().replace("node.id=1", "node.id=2")
    )
    with pytest.raises(UsageError, match="different brokers"):
        ops.plan(src, dst, TP)
    # node ids compare as Kafka's ints: +1 is node 1 (Integer.parseInt), one broker
    (dst / "meta.properties").write_text(
        (src / "meta.properties").read_text().replace("node.id=1", "node.id=+1")
    )
    ops.plan(src, dst, TP)
    shutil.copy(src / "meta.properties", dst / "meta.properties")
    (src / ".kafka_cleanshutdown").unlink()
    with pytest.raises(UsageError, match="not shut down cleanly"):
        ops.plan(src, dst, TP)
    # neither was: the broker recovers the copy in the destination, from the recovery point it takes along
    (dst / ".kafka_cleanshutdown").unlink()
    assert ops.plan(src, dst, TP).actions


def test_files_the_broker_deletes_on_load_are_left_behind(tmp_path):
    # a clean shutdown can leave the cleaner's replaced segments (.deleted, deleted asynchronously)
    src, dst = two_log_dirs(tmp_path)
    (src / str(TP) / "00000000000000000000.log.deleted").write_bytes(b"old")
    (src / str(TP) / "00000000000000000300.index.cleaned").write_bytes(b"")
    p = ops.plan(src, dst, TP)
    assert not [a for a in p.actions if a.kind is ActionKind.COPY_FILE and "." in a.path.name[21:]]
    assert (
        "not copied: 00000000000000000000.log.deleted, 00000000000000000300.index.cleaned"
        in p.notes[0]
    )
    move(src, dst, tmp_path / "q")
    assert not list((dst / str(TP)).glob("*.deleted")) and recover_actions(dst) == []


def test_refuses_leftovers_and_bad_paths(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    (src / str(TP) / "00000000000000000000.log.swap").write_bytes(b"")
    with pytest.raises(UsageError, match="run `kafkalog recover`"):
        ops.plan(src, dst, TP)
    with pytest.raises(InputError):
        ops.plan(src, dst, TopicPartition("nope", 0))
    with pytest.raises(InputError):
        ops.plan(src, tmp_path / "missing", TP)
    with pytest.raises(UsageError, match="metadata.log.dir"):
        ops.plan(src, dst, TopicPartition("__cluster_metadata", 0))
    with pytest.raises(UsageError, match="same log dir"):
        ops.plan(src, src, TP)
    with pytest.raises(UsageError, match="partition dir"):
        ops.plan(src, src / "txn-0", TP)


def test_not_enough_space_is_exit_6_before_any_change(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    before = state(src, dst)
    p = ops.plan(src, dst, TP)
    p.free_bytes = p.bytes_to_copy - 1
    from kafkalog_cli.storage.fsops import FsOps
    from kafkalog_cli.storage.quarantine_writer import Quarantine

    with pytest.raises(WriteError, match="no space"):
        ops.apply(p, FsOps(dst, Quarantine(None, "move-partition")))
    assert state(src, dst) == before


def test_run_again_after_the_move_is_nothing_to_do(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    move(src, dst, tmp_path / "q")
    p = ops.plan(src, dst, TP)
    assert p.actions == [] and p.state is ops.MoveState.MOVED


def test_kraft_jbod_directory_ids_are_noted_and_a_copied_dir_refused(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    meta = (src / "meta.properties").read_text().replace("version=0", "version=1")
    (src / "meta.properties").write_text(meta + "directory.id=AAAAAAAAAAAAAAAAAAAAAQ\n")
    (dst / "meta.properties").write_text(meta + "directory.id=AAAAAAAAAAAAAAAAAAAAAg\n")
    p = ops.plan(src, dst, TP)
    assert any("AssignReplicasToDirs" in n for n in p.notes)
    (dst / "meta.properties").write_text(meta + "directory.id=AAAAAAAAAAAAAAAAAAAAAQ\n")
    with pytest.raises(UsageError, match="same directory.id"):
        ops.plan(src, dst, TP)


def test_a_future_dir_the_broker_extended_is_refused(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    fut = dst / f"{TP}.{'a' * 32}-future"
    shutil.copytree(src / str(TP), fut)
    with open(fut / "00000000000000000600.log", "ab") as f:
        f.write(b"x")
    with pytest.raises(UsageError, match="differs from the source"):
        ops.plan(src, dst, TP)


def test_a_complete_future_dir_is_taken_as_it_is(tmp_path):
    src, dst = two_log_dirs(tmp_path)
    fut = dst / f"{TP}.{'a' * 32}-future"
    shutil.copytree(src / str(TP), fut)
    p = ops.plan(src, dst, TP)
    assert p.state is ops.MoveState.RESUME and not [
        a for a in p.actions if a.kind is ActionKind.COPY_FILE
    ]
    move(src, dst, tmp_path / "q")
    assert live_copies(TP, src, dst) == [dst / str(TP)] and not fut.exists()


# ------------------------------------------------------------------ the property

ENTRY = st.one_of(st.none(), st.integers(0, 10**12))


@st.composite
def log_dirs(draw):
    segments = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))  # records per segment
    src_entries = draw(st.tuples(ENTRY, ENTRY, ENTRY, ENTRY))
    dst_entries = draw(st.tuples(ENTRY, ENTRY, ENTRY, ENTRY))  # stale ones, KAFKA-8362
    others = draw(
        st.dictionaries(st.sampled_from(["a", "b-1", "c.x"]), st.integers(0, 99), max_size=3)
    )
    return segments, src_entries, dst_entries, others


def _write_checkpoint(path, entries: dict) -> None:
    if entries:
        path.write_text(
            f"0\n{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for (t, p), o in entries.items())
        )


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(log_dirs())
def test_property_the_copy_is_the_source_and_only_its_entries_move(tmp_path_factory, case):
    segments, src_entries, dst_entries, others = case
    root = tmp_path_factory.mktemp("mv")
    src, dst = root / "d1", root / "d2"
    tp = TopicPartition("t", 3)
    d = src / "t-3"
    d.mkdir(parents=True)
    dst.mkdir()
    base = 0
    for n in segments:
        recs = [SimpleRecord(f"k{base + i}".encode(), b"v", 1000 + base + i) for i in range(n)]
        (d / f"{base:020d}.log").write_bytes(build_v2_batch(recs, base, partition_leader_epoch=0))
        (d / f"{base:020d}.index").write_bytes(b"")
        (d / f"{base:020d}.timeindex").write_bytes(b"")
        if base:
            (d / f"{base:020d}.snapshot").write_bytes(b"")
        base += n
    (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    for x in (src, dst):
        (x / ".kafka_cleanshutdown").write_bytes(b"")
    for name, s, t in zip(ops.CHECKPOINTS, src_entries, dst_entries):
        other = {(k.rsplit("-", 1)[0] if "-" in k else k, 0): v for k, v in others.items()}
        _write_checkpoint(src / name, {**other, **({("t", 3): s} if s is not None else {})})
        _write_checkpoint(dst / name, {("u", 0): 7, **({("t", 3): t} if t is not None else {})})
    before = {f.name: (f.read_bytes(), f.stat().st_mtime_ns, f.stat().st_mode) for f in d.iterdir()}
    ckpt_before = {(x, n): read_offsets(x / n) for x in (src, dst) for n in ops.CHECKPOINTS}
    move(src, dst, None, tp=tp)
    moved = dst / "t-3"
    assert {
        f.name: (f.read_bytes(), f.stat().st_mtime_ns, f.stat().st_mode) for f in moved.iterdir()
    } == before
    (gone,) = [x for x in src.iterdir() if x.name.startswith("t-3.") and x.name.endswith("-delete")]
    assert {f.name: f.read_bytes() for f in gone.iterdir()} == {k: v[0] for k, v in before.items()}
    for n, s in zip(ops.CHECKPOINTS, src_entries):
        key = ("t", 3)
        want_dst = {k: v for k, v in ckpt_before[(dst, n)].items() if k != key}
        want_src = {k: v for k, v in ckpt_before[(src, n)].items() if k != key}
        if s is not None:
            want_dst[key] = s
        assert read_offsets(dst / n) == want_dst, n
        assert read_offsets(src / n) == want_src, n
