"""ops.compact against what a Kafka 3.3.1 broker's cleaner wrote (corpus broker/compact)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from kafkalog_cli.errors import InputError, WriteError
from kafkalog_cli.ops import cleaner, compact
from kafkalog_cli.render import human
from kafkalog_cli.storage import names
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.compaction import FIXTURES, params, records_of, resolver_for, restore, run

SEGMENT_FILES = ("*.log", "*.index", "*.timeindex", "*.txnindex")


def _files(d):
    return sorted(p.name for pat in SEGMENT_FILES for p in d.glob(pat))


@pytest.mark.parametrize(
    "case,part",
    [
        ("keyed-overwrites", "cmp-none-0"),
        ("keyed-overwrites", "cmp-lz4-0"),
        ("tombstones", "cmp-tomb-0"),
    ],
)
def test_reproduces_the_broker_cleaner(tmp_path, case, part):
    p = params(case)
    now = p.get("now_ms_by_partition", {}).get(part, p["now_ms"])
    log_dir = restore(case, "before", tmp_path / "logs")
    run(log_dir, [part], now, resolver_for(case))
    ours, theirs = log_dir / part, FIXTURES / f"compact-{case}" / "after" / part
    assert _files(ours) == _files(theirs)
    assert records_of(ours) == records_of(theirs)
    for name in _files(theirs):  # every file, even lz4's recompressed batches, byte for byte
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    # mtimes of the last source segment, in ms as Java's setLastModified
    mt = {
        line.split()[3]: line.split()[1]
        for line in (FIXTURES / f"compact-{case}" / "after.MANIFEST.txt").read_text().splitlines()
        if not line.startswith("d ")
    }
    active = max(_files(theirs))[:20]  # the broker's restart touched the active segment
    for name in _files(theirs):
        if (ours / name).stat().st_size and not name.startswith(active):
            assert (
                f"{(ours / name).stat().st_mtime_ns / 1e9:.3f}"
                == f"{float(mt[f'./{part}/{name}']):.3f}"
            ), name
    ckpt = (log_dir / names.CLEANER_CHECKPOINT).read_text().split("\n")
    topic = part.rsplit("-", 1)[0]
    assert f"{topic} 0 {p['partitions'][part]['action'].split('[0, ')[1].split(')')[0]}" in ckpt


def test_tombstones_stamped_then_removed_after_the_horizon(tmp_path):
    p = params("tombstones")
    horizon = p["delete_horizon_ms_stamped"]
    log_dir = restore("tombstones", "after", tmp_path / "logs")
    (log_dir / names.CLEANER_CHECKPOINT).unlink()  # make the whole log dirty again
    before = [r for r in records_of(log_dir / "cmp-tomb-0") if r[0] != "batch" and r[3] is None]
    assert len(before) == 30
    run(log_dir, ["cmp-tomb-0"], horizon - 1, resolver_for("tombstones"), force=True)
    assert [
        r for r in records_of(log_dir / "cmp-tomb-0") if r[0] != "batch" and r[3] is None
    ] == before
    (log_dir / names.CLEANER_CHECKPOINT).unlink()
    run(log_dir, ["cmp-tomb-0"], horizon, resolver_for("tombstones"), force=True)
    assert [r for r in records_of(log_dir / "cmp-tomb-0") if r[0] != "batch" and r[3] is None] == []


def test_dry_run_reports_and_changes_nothing(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    snapshot = {p: p.read_bytes() for p in (log_dir / "cmp-none-0").iterdir()}
    opts = compact.CompactOptions(now_ms=1795248446186, resolver=resolver_for("keyed-overwrites"))
    cp = compact.plan(log_dir, [log_dir / "cmp-none-0"], opts, estimate=True)
    d = cp.decisions[0]
    assert d.selected and d.log.first_dirty == 0 and d.log.first_uncleanable == 1867
    assert d.estimate["keys"] == 100 and d.estimate["messages_written"] == 100
    assert d.estimate["bytes_freed"] == d.estimate["bytes_read"] - 10586
    assert {p: p.read_bytes() for p in (log_dir / "cmp-none-0").iterdir()} == snapshot
    assert "ratio 1.000" in human.compact_plan(cp)


def test_ratio_below_min_cleanable_is_skipped_unless_forced(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    r = resolver_for("keyed-overwrites")
    r.topic_overrides["cmp-none"]["min.cleanable.dirty.ratio"] = "1.0"
    opts = compact.CompactOptions(now_ms=1795248446186, resolver=r)
    assert not compact.plan(log_dir, [log_dir / "cmp-none-0"], opts).decisions[0].selected
    opts.force = True
    assert compact.plan(log_dir, [log_dir / "cmp-none-0"], opts).decisions[0].selected


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    r = resolver_for("keyed-overwrites")
    # segments whose largest timestamp is within the lag stay uncleanable
    r.topic_overrides["cmp-none"]["min.compaction.lag.ms"] = str(1795248446186 - 1700000900000)
    opts = compact.CompactOptions(now_ms=1795248446186, resolver=r)
    d = compact.plan(log_dir, [log_dir / "cmp-none-0"], opts).decisions[0]
    assert 0 < d.log.first_uncleanable < 1867


def test_keys_beyond_the_map_take_several_rounds(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    # room for 40 keys (int(slots * 0.9)): 100 keys need at least three rounds
    rep = run(
        log_dir,
        ["cmp-none-0"],
        1795248446186,
        resolver_for("keyed-overwrites"),
        dedupe_buffer_size=45 * 24,
    )
    rounds = rep["cleaned"][0]["rounds"]
    assert len(rounds) >= 3 and all(r["keys"] <= 40 for r in rounds)
    assert rep["cleaned"][0]["cleaner_offset_checkpoint"] == 1867
    ours = records_of(log_dir / "cmp-none-0")
    theirs = records_of(FIXTURES / "compact-keyed-overwrites" / "after" / "cmp-none-0")

    # the same final value per key as the broker's single round
    def final(recs):
        return {r[2]: r[3] for r in recs if r[0] != "batch"}

    assert final(ours) == final(theirs)


# ------------------------------------------------ a write error while the .cleaned files are created
def _full_disk(fsops, monkeypatch, where: str) -> str:
    """ENOSPC (or EPERM for the mtime) at one point of the first group's .cleaned files; returns
    the file the error must name."""
    first = "00000000000000000000"
    if where in ("open log", "open timeindex"):
        name = f"{first}.{where.split()[1]}.cleaned"

        def before(kind, path):
            if path.name == name:
                raise OSError(errno.ENOSPC, "No space left on device")

        fsops.before = before
        return name
    name = f"{first}.log.cleaned"
    if where == "fsync log":  # the indexes are complete by then: they must be moved out
        real = os.fsync

        def fsync(fd):
            if os.readlink(f"/proc/self/fd/{fd}").endswith(name):
                raise OSError(errno.ENOSPC, "No space left on device")
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)
    else:  # every .cleaned file complete: all must be moved out
        real_utime = os.utime

        def utime(path, *a, **kw):
            if str(path).endswith(name):
                raise OSError(errno.ENOSPC, "No space left on device")
            real_utime(path, *a, **kw)

        monkeypatch.setattr(os, "utime", utime)
    return name


@pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="finds the fsynced file through /proc"
)
@pytest.mark.parametrize("where", ["open log", "open timeindex", "fsync log", "mtime"])
def test_a_write_error_on_the_cleaned_files_leaves_the_log_dir_as_it_was(
    tmp_path, monkeypatch, where
):
    log_dir = restore("tombstones", "before", tmp_path / "logs")

    def state():
        return {
            p: (p.read_bytes(), p.stat().st_mtime_ns) for p in log_dir.rglob("*") if p.is_file()
        }

    before = state()
    opts = compact.CompactOptions(
        now_ms=params("tombstones")["now_ms"], resolver=resolver_for("tombstones")
    )
    cp = compact.plan(log_dir, [log_dir / "cmp-tomb-0"], opts)
    fsops = FsOps(log_dir, Quarantine(tmp_path / "q", "compact"))
    name = _full_disk(fsops, monkeypatch, where)
    with pytest.raises(WriteError) as e:
        compact.apply(cp, fsops, opts)
    assert e.value.path == str(log_dir / "cmp-tomb-0" / name) and "no space left" in e.value.message
    assert e.value.exit_code == 6
    assert state() == before


def test_a_source_segment_that_cannot_be_read_while_cleaning_is_an_input_error(
    tmp_path, monkeypatch
):
    """A read failure is not a failure to write the .cleaned file it streams to: exit 4, the
    source named; the partial .cleaned file is removed."""
    log_dir = restore("tombstones", "before", tmp_path / "logs")

    def state():
        return {
            p: (p.read_bytes(), p.stat().st_mtime_ns) for p in log_dir.rglob("*") if p.is_file()
        }

    before = state()
    source = log_dir / "cmp-tomb-0" / "00000000000000000000.log"
    opened = []

    real = cleaner.files

    class FailingFiles:
        """The cleaner's storage.files, whose second open of `source` fails as a disk would."""

        def __getattr__(self, name):
            return getattr(real, name)

        @staticmethod
        def opened(path, *a, **kw):
            opened.append(Path(path))
            if (
                Path(path) == source and opened.count(source) == 2
            ):  # the map pass read it; now cleanInto
                raise OSError(errno.EIO, "Input/output error", str(path))
            return real.opened(path, *a, **kw)

    monkeypatch.setattr(cleaner, "files", FailingFiles())
    with pytest.raises(InputError) as e:
        run(log_dir, ["cmp-tomb-0"], params("tombstones")["now_ms"], resolver_for("tombstones"))
    assert (e.value.path, e.value.message, e.value.exit_code) == (
        str(source),
        "Input/output error",
        4,
    )
    assert state() == before
