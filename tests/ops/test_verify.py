"""ops.verify: the checks on real segments and on damage made to them, chunked and not."""

from __future__ import annotations

import pickle
import shutil
import struct
from pathlib import Path

import pytest

from kafkalog_cli.errors import InputError
from kafkalog_cli.ops import verify as V
from tests.helpers import bad_inputs as B
from tests.helpers.paths import READ


@pytest.fixture
def part(tmp_path) -> Path:
    return shutil.copytree(READ / "rec-none-0", tmp_path / "rec-none-0")


def test_real_partition_is_clean_and_counted(part):
    rep = V.verify_partition(part)
    assert rep.ok and rep.problems == []
    assert [Path(f.file).name for f in rep.files] == [
        "00000000000000000185.log",
        "00000000000000000363.log",
    ]
    sizes = [(part / Path(f.file).name).stat().st_size for f in rep.files]
    assert [f.bytes for f in rep.files] == sizes
    assert rep.files[0].first_offset == 185 and rep.files[1].first_offset == 363
    assert rep.files[0].last_offset == 362
    assert rep.batches == sum(f.batches for f in rep.files) > 10
    # picklable, for the Spark executors
    again = pickle.loads(pickle.dumps(rep))
    assert again.files[1].last_offset == rep.files[1].last_offset and again.ok


def test_deep_on_legacy_and_zstd():
    for d in ("v1-gzip-create", "v2-zstd", "txn-0", "ts-jumble-0"):
        groups = V.group_paths([str(READ / d / "00000000000000000000.log")])
        rep = V.verify_groups(groups, deep=True)[0]
        assert rep.ok, (d, rep.problems)


def test_crc_mismatch_position_offsets_and_crcs(tmp_path):
    log = B.bad_crc(tmp_path)
    rep = V.verify_partition(log.parent)
    (p,) = rep.problems
    assert (p.kind, p.position, p.base_offset, p.last_offset) == ("crc", len(B.good_batch()), 3, 5)
    assert p.stored_crc != p.computed_crc
    raw = log.read_bytes()
    assert p.stored_crc == struct.unpack_from(">I", raw, p.position + 17)[0]


def test_legacy_crc(tmp_path):
    raw = bytearray((READ / "v1-gzip-create" / "00000000000000000000.log").read_bytes())
    raw[40] ^= 0x10  # inside the first wrapper's compressed value
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(bytes(raw))
    rep = V.verify_partition(d)
    assert rep.problems[0].kind == "crc" and rep.problems[0].position == 0
    assert rep.problems[0].message.startswith("magic 1 message CRC-32 mismatch")


def test_corrupt_size_stops_the_file_only(tmp_path):
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(
        B.good_batch() + struct.pack(">qi", 3, 5) + b"\0" * 80
    )
    (d / "00000000000000000003.log").write_bytes(B.good_batch(3))
    rep = V.verify_partition(d)
    kinds = [(Path(p.file).name, p.kind, p.position) for p in rep.problems]
    assert kinds == [("00000000000000000000.log", "size", len(B.good_batch()))]
    assert rep.files[1].batches == 1  # the next file was still verified


def test_offsets_within_and_across_segments(tmp_path):
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(B.good_batch(0) + B.good_batch(2))  # 2 <= 2
    (d / "00000000000000000010.log").write_bytes(B.good_batch(4))  # below its base 10
    rep = V.verify_partition(d)
    msgs = [(Path(p.file).name, p.kind, p.position) for p in rep.problems]
    assert ("00000000000000000000.log", "offsets", len(B.good_batch())) in msgs
    assert ("00000000000000000010.log", "offsets", 0) in msgs
    assert any("below the segment's base offset 10" in p.message for p in rep.problems)
    assert any("not after the previous segment's last offset 4" in p.message for p in rep.problems)


def test_deep_record_count(tmp_path):
    b = bytearray(B.good_batch(0, 3))
    struct.pack_into(">i", b, 57, 4)  # the header claims 4 records
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(B.fix_crc(b))
    assert V.verify_partition(d).ok  # without --deep only the CRC is checked
    (p,) = V.verify_partition(d, deep=True).problems
    assert p.kind == "records" and "declares 4 records, only 3 present" in p.message


def test_chunks_give_the_same_answer_as_one_pass(tmp_path):
    """Ranges split at batch boundaries, in worker processes: the same problems, counts and
    cross-range offset checks as the sequential pass."""
    d = tmp_path / "t-0"
    d.mkdir()
    batches = [B.good_batch(3 * i) for i in range(3000)]
    batches[1500] = B.good_batch(3 * 1400)  # offsets go back in the middle
    bad = bytearray(batches[2500])
    bad[-1] ^= 1
    batches[2500] = bytes(bad)
    (d / "00000000000000000000.log").write_bytes(b"".join(batches) + b"\0\0\0")
    groups = [(str(d), [str(d / "00000000000000000000.log")])]
    chunks = V.plan_chunks(groups, jobs=8, deep=False)[0][0]
    seq = V.verify_groups(groups, jobs=1)[0]
    assert len(chunks) > 1 or (d / "00000000000000000000.log").stat().st_size < 8 << 20
    # force a split with a small target
    small = V._split(groups[0][1][0], 64 << 10, False)
    assert len(small) > 3 and all(c.start < c.end for c in small[:-1])
    results = [V._run_chunk(c) for c in small]
    merged = V._merge_group(str(d), [V._merge_file(groups[0][1][0], results)])
    key = lambda r: sorted((p.kind, p.position) for p in r.problems)  # noqa: E731
    assert key(merged) == key(seq)
    assert merged.batches == seq.batches == 3000
    assert {p.kind for p in seq.problems} == {"offsets", "crc", "trailing_bytes"}
    par = V.verify_groups(groups, jobs=2, parallel_min_bytes=0)[0]
    assert key(par) == key(seq)


def test_group_paths(tmp_path, part):
    (tmp_path / "meta.properties").write_text("version=1\n")
    groups = V.group_paths([str(tmp_path)])
    assert [Path(g).name for g, _ in groups] == ["rec-none-0"]
    with pytest.raises(InputError):
        V.group_paths([str(tmp_path / "nope")])
    with pytest.raises(InputError):
        V.group_paths([str(part / "00000000000000000185.index")])


def test_jobs_as_threads_and_as_processes_give_the_one_process_report(tmp_path, monkeypatch):
    """verify-crc --jobs 2: threads where the compiled walk lets the GIL go, forked processes
    otherwise; the same files, problems and offsets as one job, and progress for every byte."""
    d = tmp_path / "t-0"
    d.mkdir()
    files = []
    for k in range(5):
        batches = [B.good_batch(1000 * k + 3 * i) for i in range(200)]
        if k == 2:
            bad = bytearray(batches[50])
            bad[-1] ^= 1
            batches[50] = bytes(bad)
        path = d / f"{1000 * k:020d}.log"
        path.write_bytes(b"".join(batches) + (b"\0\0" if k == 4 else b""))
        files.append(str(path))
    groups = [(str(d), files)]

    def report(r):
        return (
            [(p.kind, Path(p.file).name, p.position, p.base_offset) for p in r.problems],
            [
                (Path(f.file).name, f.batches, f.bytes, f.first_offset, f.last_offset)
                for f in r.files
            ],
        )

    one = report(V.verify_groups(groups, jobs=1)[0])
    assert {kind for kind, *_ in one[0]} == {"crc", "trailing_bytes"}
    told: list = []
    threads = V.verify_groups(groups, jobs=2, parallel_min_bytes=0, on_progress=told.append)[0]
    assert report(threads) == one
    assert sum(told) == sum(Path(f).stat().st_size for f in files)
    monkeypatch.setattr(V, "walks_without_gil", lambda: False)
    assert report(V.verify_groups(groups, jobs=2, parallel_min_bytes=0)[0]) == one
