"""kafkalog compact through the command line."""

from __future__ import annotations

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage.quarantine import EntryKind, QuarantineFolder
from tests.helpers import paths
from tests.helpers.compaction import CFG, FIXTURES, records_of, restore
from tests.helpers.run_lines import log_dir_report, stable


def test_compact_json_then_nothing_left(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    r = CliRunner().invoke(
        cli,
        [
            "compact",
            str(log_dir / "cmp-none-0"),
            "--now",
            "1795248446186",
            "--format",
            "json",
            *CFG,
        ],
    )
    assert r.exit_code == 0, r.output
    rep = log_dir_report(r.output)
    assert (
        rep["cleaned"][0]["messages_written"] == 100
        and rep["cleaned"][0]["cleaner_offset_checkpoint"] == 1867
    )
    assert records_of(log_dir / "cmp-none-0") == records_of(
        FIXTURES / "compact-keyed-overwrites" / "after" / "cmp-none-0"
    )
    r = CliRunner().invoke(
        cli, ["compact", str(log_dir / "cmp-none-0"), "--now", "1795248446186", *CFG]
    )
    assert r.exit_code == 0 and "nothing cleanable" in r.output


def test_dry_run_human(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    r = CliRunner().invoke(
        cli, ["compact", str(log_dir), "--dry-run", "--now", "1795248446186", *_both_topics_cfg()]
    )
    assert r.exit_code == 1, r.output  # a dry run with something to do
    assert "clean cmp-none-0: dirty [0, 1867) ratio 1.000" in r.output and "100 keys" in r.output


def test_locked_log_dir_exit_5(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    import subprocess
    import sys

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time;f=open(sys.argv[1],'a');fcntl.lockf(f,fcntl.LOCK_EX);"
            "print('x',flush=True);time.sleep(30)",
            str(log_dir / ".lock"),
        ],
        stdout=subprocess.PIPE,
    )
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
    data[57:61] = (1000).to_bytes(4, "big")  # the first batch claims 1000 records
    seg.write_bytes(bytes(data))
    r = CliRunner().invoke(
        cli, ["compact", str(log_dir), "--now", "1795248446186", *_both_topics_cfg()]
    )
    assert r.exit_code == 3, r.output
    line = r.output.strip()
    assert (
        "\n" not in line and "00000000000000000174.log: byte 0:" in line and "Traceback" not in line
    )


def test_bad_dedupe_buffer_size_is_usage_error(tmp_path):
    r = CliRunner().invoke(cli, ["compact", str(tmp_path), "--dedupe-buffer-size", "12"])
    assert r.exit_code == 2 and "holds no key" in r.output


def _both_topics_cfg():
    out = []
    for topic in ("cmp-none", "cmp-lz4"):
        for kv in (
            "cleanup.policy=compact",
            "segment.bytes=16384",
            "index.interval.bytes=512",
            "min.cleanable.dirty.ratio=0.01",
            "delete.retention.ms=86400000",
            "min.compaction.lag.ms=0",
        ):
            out += ["--topic-config", f"{topic}:{kv}"]
    return out


def _state(log_dir):
    return {
        str(p.relative_to(log_dir)): p.read_bytes()
        for p in sorted(log_dir.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def _run_jobs(tmp_path, jobs, corrupt=False):
    base = tmp_path / f"j{jobs}"
    log_dir = restore("keyed-overwrites", "before", base / "logs")
    if corrupt:  # the first partition in input order fails; the second is still cleaned
        seg = log_dir / "cmp-lz4-0" / "00000000000000000000.log"
        data = bytearray(seg.read_bytes())
        data[8:12] = (1 << 30).to_bytes(4, "big")
        seg.write_bytes(bytes(data))
    q = base / "q"
    r = CliRunner().invoke(
        cli,
        [
            "compact",
            str(log_dir / "cmp-lz4-0"),
            str(log_dir / "cmp-none-0"),
            "--now",
            "1795248446186",
            "--format",
            "json",
            "--jobs",
            str(jobs),
            "--quarantine",
            str(q),
            *_both_topics_cfg(),
        ],
    )
    manifests = [QuarantineFolder.open(m.parent) for m in q.rglob("manifest.jsonl")]
    return r, log_dir, manifests


def test_jobs_cleans_partitions_in_parallel_with_the_same_output_and_files(tmp_path):
    r1, d1, m1 = _run_jobs(tmp_path, 1)
    r2, d2, m2 = _run_jobs(tmp_path, 2)
    assert r1.exit_code == r2.exit_code == 0, r1.output + r2.output
    rep1, rep2 = log_dir_report(r1.output), log_dir_report(r2.output)
    for rep in (rep1, rep2):
        for volatile in ("quarantine", "run_id", "time"):  # the folder's name holds the run's time
            rep.pop(volatile)
        rep["log_dir"] = None
    # the checkpoint's versions the quarantine keeps are the workers' in the order they finished:
    # an offset of another length makes the figure a byte or two apart; the partitions' own agree
    held = [rep.pop("held_in_quarantine") for rep in (rep1, rep2)]
    assert abs(held[0] - held[1]) <= 8 and held[0] > 0
    assert rep1 == rep2
    assert [c["partition"] for c in rep2["cleaned"]] == ["cmp-lz4-0", "cmp-none-0"]  # input order
    assert _state(d1) == _state(d2)
    assert records_of(d2 / "cmp-none-0") == records_of(
        FIXTURES / "compact-keyed-overwrites" / "after" / "cmp-none-0"
    )
    assert records_of(d2 / "cmp-lz4-0") == records_of(
        FIXTURES / "compact-keyed-overwrites" / "after" / "cmp-lz4-0"
    )
    # one quarantine folder whose manifest lists what both workers moved there
    assert len(m1) == len(m2) == 1

    def removed(m):
        return [e for e in m.entries if e.kind is EntryKind.REMOVED]

    def key(e):
        return (e.source.split("/logs/")[1], e.reason)

    assert sorted(map(key, removed(m1[0]))) == sorted(map(key, removed(m2[0])))
    moved = {e.source.split("/logs/")[1].split("/")[0] for e in removed(m2[0])}
    assert moved == {"cmp-lz4-0", "cmp-none-0"}
    # the checkpoint, read-modified-written by both workers, holds both partitions
    ckpt = (d2 / "cleaner-offset-checkpoint").read_text().split("\n")
    assert "cmp-none 0 1867" in ckpt and any(line.startswith("cmp-lz4 0 ") for line in ckpt)


def test_jobs_error_in_one_partition_same_exit_code_and_others_cleaned(tmp_path):
    r1, d1, _ = _run_jobs(tmp_path, 1, corrupt=True)
    r2, d2, _ = _run_jobs(tmp_path, 2, corrupt=True)
    assert r1.exit_code == r2.exit_code == 3
    assert r1.stderr.replace(str(d1), "D") == r2.stderr.replace(str(d2), "D")
    assert stable(r1.stdout.replace(str(d1), "D")) == stable(r2.stdout.replace(str(d2), "D"))
    assert "cmp-lz4-0/00000000000000000000.log" in r2.output
    assert _state(d1) == _state(d2)
    want = records_of(FIXTURES / "compact-keyed-overwrites" / "after" / "cmp-none-0")
    assert records_of(d1 / "cmp-none-0") == records_of(d2 / "cmp-none-0") == want


def test_jobs_dry_run_same_report(tmp_path):
    log_dir = restore("keyed-overwrites", "before", tmp_path / "logs")
    outs = [
        CliRunner().invoke(
            cli,
            [
                "compact",
                str(log_dir),
                "--dry-run",
                "--now",
                "1795248446186",
                "--format",
                "json",
                "--jobs",
                str(j),
                *_both_topics_cfg(),
            ],
        )
        for j in (1, 2)
    ]
    assert outs[0].exit_code == outs[1].exit_code == 1  # a dry run with partitions to clean
    assert stable(outs[0].output) == stable(outs[1].output)
    assert [p["partition"] for p in log_dir_report(outs[1].output)["partitions"]] == [
        "cmp-lz4-0",
        "cmp-none-0",
    ]


def test_a_quarantine_inside_the_log_dir_is_refused(tmp_path):
    import shutil

    from click.testing import CliRunner as _Runner

    from kafkalog_cli.cli import cli as _cli

    d = tmp_path / "logdir"
    shutil.copytree(paths.EXAMPLES, d)
    r = _Runner().invoke(_cli, ["compact", "--quarantine", str(d / "q"), str(d)])
    assert r.exit_code == 2 and "is inside the log dir" in r.stderr and not (d / "q").exists()
