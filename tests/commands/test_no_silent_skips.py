"""No silent skips, no empty success (issue 11, item 6): every command classifies directories by
storage's one rule, says what it does with -future/-delete/-stray partition dirs, and exits 4 on
what it cannot read."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES, SRC
from tests.helpers.run_lines import log_dir_report

UUID = "0123456789abcdef0123456789abcdef"
NOW = "1900000000000"
DEFAULTS = ("--assume-kafka-defaults",)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def state(d: Path) -> dict[str, str]:
    """Every entry under `d`: a regular file's sha256, else what it is (a FIFO is never opened)."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in files + dirs:
            p = Path(root) / n
            if n == ".lock":
                continue
            if p.is_symlink():
                out[str(p.relative_to(d))] = "link:" + os.readlink(p)
            elif p.is_file() and not p.is_fifo():
                out[str(p.relative_to(d))] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p.relative_to(d))] = "fifo" if p.is_fifo() else "dir"
    return out


# a log dir's own files: without them, only its partition dirs say what it is
ROOT_FILES = shutil.ignore_patterns(
    "*-checkpoint", "meta.properties", "bootstrap.checkpoint", ".lock", ".kafka_cleanshutdown"
)


def copy_examples(tmp_path: Path, name: str = "ld", **kw) -> Path:
    ld = tmp_path / name
    shutil.copytree(EXAMPLES, ld, **kw)
    return ld


def mutating(cmd: str, path: Path, *extra) -> list:
    """A mutating command's dry run over `path` (what it selects is the same as without)."""
    opts = {"recover": [], "roll": [], "retain": ["--now", NOW, *DEFAULTS], "compact": [*DEFAULTS]}[
        cmd
    ]
    return [cmd, "--dry-run", *opts, *extra, path]


def read(cmd: str, path: Path, tmp_path: Path) -> list:
    return {
        "dump-log": ["dump-log", path],
        "dump-index": ["dump-index", path],
        "verify-crc": ["verify-crc", path],
        "export": ["export", path, tmp_path / "out.jsonl", "--to", "jsonl"],
    }[cmd]


def _supports_assume_defaults(cmd: str) -> bool:
    r = invoke(cmd, "--help")
    return "--assume-kafka-defaults" in r.output


def mutating_args(cmd: str, path: Path) -> list:
    args = mutating(cmd, path)
    if cmd in ("retain", "compact") and not _supports_assume_defaults(cmd):
        args.remove("--assume-kafka-defaults")
    return args


READS = ["dump-log", "dump-index", "verify-crc", "export"]
MUTATES = ["recover", "roll", "retain", "compact"]


# ------------------------------------------------------------------ recover on unreadable segments
def _make_unreadable(seg: Path, how: str) -> None:
    seg.unlink()
    if how == "fifo":
        os.mkfifo(seg)
    elif how == "symlink":
        seg.symlink_to(seg.parent / "gone.log")
    else:
        seg.mkdir()


@pytest.mark.parametrize("how", ["fifo", "symlink", "directory"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_recover_exits_4_on_a_segment_that_is_not_a_regular_file(tmp_path, how, dry_run):
    ld = copy_examples(tmp_path)
    seg = ld / "txn-0" / "00000000000000000000.log"
    _make_unreadable(seg, how)
    (ld / ".kafka_cleanshutdown").unlink(missing_ok=True)
    before = state(ld)
    r = invoke("recover", *(["--dry-run"] if dry_run else []), "--no-quarantine", ld)
    assert r.exit_code == 4, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(seg) in lines[0], lines
    assert state(ld) == before  # nothing in the log dir changed


# ------------------------------------------------------------------ -future, -delete, -stray
def _with_kinds(tmp_path: Path) -> Path:
    ld = copy_examples(tmp_path)
    for kind in ("future", "delete", "stray"):
        shutil.copytree(ld / "txn-0", ld / f"txn-0.{UUID}-{kind}")
    return ld


def test_recover_recovers_a_future_log_and_leaves_delete_and_stray_untouched(tmp_path):
    ld = _with_kinds(tmp_path)
    (ld / ".kafka_cleanshutdown").unlink(missing_ok=True)
    for kind in ("future", "delete", "stray"):  # a torn tail in each
        with open(ld / f"txn-0.{UUID}-{kind}" / "00000000000000000000.log", "ab") as f:
            f.write(struct.pack(">qi", 99, 500) + b"\0" * 7)
    untouched = {k: state(ld / f"txn-0.{UUID}-{k}") for k in ("delete", "stray")}
    r = invoke("recover", "--format", "json", "--no-quarantine", ld)
    assert r.exit_code == 0, r.output
    report = log_dir_report(r.stdout)
    assert f"txn-0.{UUID}-future" in report["partitions"]
    assert (ld / f"txn-0.{UUID}-future" / "00000000000000000000.log").stat().st_size == (
        ld / "txn-0" / "00000000000000000000.log"
    ).stat().st_size  # the torn tail is gone
    for k in ("delete", "stray"):
        assert state(ld / f"txn-0.{UUID}-{k}") == untouched[k]
        assert f"txn-0.{UUID}-{k}" not in report["partitions"]
        assert any(
            f"txn-0.{UUID}-{k}" in line and "left untouched" in line
            for line in r.stderr.splitlines()
        ), r.stderr


@pytest.mark.parametrize("cmd", READS)
def test_read_commands_read_future_logs_and_note_the_others(tmp_path, cmd):
    ld = _with_kinds(tmp_path)
    r = invoke(*read(cmd, ld, tmp_path))
    assert r.exit_code == 0, r.output
    notes = [line for line in r.stderr.splitlines() if "kafkalog: note:" in line]
    for k in ("delete", "stray"):
        assert any(f"txn-0.{UUID}-{k}" in n and "not" in n for n in notes), (k, r.stderr)
    assert not any("-future" in n for n in notes)
    if cmd in ("dump-log", "dump-index"):
        assert f"txn-0.{UUID}-future" in r.stdout and f"txn-0.{UUID}-delete" not in r.stdout


def test_verify_crc_counts_the_future_log(tmp_path):
    ld = _with_kinds(tmp_path)
    plain = copy_examples(tmp_path, "plain")
    with_future = json.loads(invoke("verify-crc", "--format", "json", ld).stdout.splitlines()[-1])
    without = json.loads(invoke("verify-crc", "--format", "json", plain).stdout.splitlines()[-1])
    assert with_future["files"] == without["files"] + 1


def test_roll_notes_what_it_leaves_alone(tmp_path):
    ld = _with_kinds(tmp_path)
    r = invoke("roll", "--dry-run", "--format", "json", ld)
    assert r.exit_code == 1, r.output  # segments to roll
    for k in ("future", "delete", "stray"):
        assert any(
            f"txn-0.{UUID}-{k}" in line and "left untouched" in line
            for line in r.stderr.splitlines()
        )


# ------------------------------------------------------------------ what is a log dir
def _etc(tmp_path: Path) -> Path:
    d = tmp_path / "etc"
    (d / "conf-1").mkdir(parents=True)
    (d / "conf-1" / "app.conf").write_text("x=1\n")
    (d / "hostname").write_text("box\n")
    return d


@pytest.mark.parametrize("cmd", READS + MUTATES)
def test_a_dir_with_no_partition_is_exit_4_for_every_command(tmp_path, cmd):
    d = _etc(tmp_path)
    args = read(cmd, d, tmp_path) if cmd in READS else mutating_args(cmd, d)
    r = invoke(*args)
    assert r.exit_code == 4, r.output
    assert "not a Kafka log dir or partition dir" in r.stderr


@pytest.mark.parametrize("cmd", READS + MUTATES)
def test_partition_dirs_without_checkpoint_files_are_a_log_dir_for_every_command(tmp_path, cmd):
    ld = copy_examples(tmp_path, ignore=ROOT_FILES)
    args = read(cmd, ld, tmp_path) if cmd in READS else mutating_args(cmd, ld)
    r = invoke(*args)
    assert r.exit_code != 4 and "not a Kafka log dir" not in r.stderr, r.output
    if cmd == "verify-crc":
        assert "0 files" not in r.stdout


@pytest.mark.parametrize("keep_meta", [True, False])
@pytest.mark.parametrize("cmd", READS)
def test_a_log_dir_named_like_a_partition_is_read_as_a_log_dir(tmp_path, cmd, keep_meta):
    ld = copy_examples(tmp_path, "broker-0", ignore=None if keep_meta else ROOT_FILES)
    r = invoke(*read(cmd, ld, tmp_path))
    assert r.exit_code == 0, r.output
    if cmd == "verify-crc":
        assert "0 files" not in r.stdout
    elif cmd == "export":
        assert (tmp_path / "out.jsonl").stat().st_size > 0
    else:
        assert "Dumping" in r.stdout


@pytest.mark.parametrize("keep_meta", [True, False])
def test_a_log_dir_named_like_a_partition_is_a_log_dir_for_recover(tmp_path, keep_meta):
    ld = copy_examples(tmp_path, "kafka-1", ignore=None if keep_meta else ROOT_FILES)
    r = invoke("recover", "--dry-run", "--format", "json", ld)
    assert r.exit_code == (1 if log_dir_report(r.stdout)["actions"] else 0), r.output
    assert "txn-0" in log_dir_report(r.stdout)["partitions"]


# ------------------------------------------------------------------ dump-log --format json on non-segments
@pytest.mark.parametrize("name, code", [("x.log", 3), ("noext", 4), ("foo.checkpoint", 3)])
def test_dump_log_json_exits_as_kafka_mode_on_a_file_that_is_no_segment(tmp_path, name, code):
    f = tmp_path / name
    f.write_text("root:x:0:0:root:/root:/bin/bash\n")
    text = invoke("dump-log", f)
    js = invoke("dump-log", "--format", "json", f)
    assert text.exit_code == code, text.output
    assert js.exit_code == code, js.output
    assert js.stderr.strip().splitlines()[-1].startswith(f"kafkalog: {f}: ")


# ------------------------------------------------------------------ unreadable files
# Run without the file-permission override capabilities (as root, setpriv drops them), so that a
# mode 000 file cannot be read: each reader exits 4 with one line naming the file, never skips it.
SETPRIV = shutil.which("setpriv")
DROP = [
    "--bounding-set",
    "-dac_override,-dac_read_search",
    "--inh-caps",
    "-dac_override,-dac_read_search",
]
needs_setpriv = pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is not installed")


def run_unprivileged(*args, timeout: float = 60):
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [SETPRIV, *DROP, sys.executable, "-m", "kafkalog_cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _errors(stderr: str) -> list[str]:
    return [
        x
        for x in stderr.splitlines()
        if x.startswith("kafkalog: ") and not x.startswith("kafkalog: note:")
    ]


# (reader, the file made unreadable, its command line): every reader of a file in a log dir
UNREADABLE = {
    "export jsonl": (
        "multi-segment-0/00000000000000000000.log",
        lambda ld, t: ["export", ld, t / "o.jsonl", "--to", "jsonl"],
    ),
    "export parquet": (
        "multi-segment-0/00000000000000000000.log",
        lambda ld, t: ["export", ld, t / "o", "--to", "parquet"],
    ),
    "verify-crc": ("multi-segment-0/00000000000000000000.log", lambda ld, t: ["verify-crc", ld]),
    "describe segment": (
        "multi-segment-0/00000000000000000000.log",
        lambda ld, t: ["describe", ld],
    ),
    "describe index": (
        "multi-segment-0/00000000000000000000.timeindex",
        lambda ld, t: ["describe", ld],
    ),
    "dump-log dir": ("multi-segment-0/00000000000000000000.log", lambda ld, t: ["dump-log", ld]),
    "dump-index dir": (
        "multi-segment-0/00000000000000000000.index",
        lambda ld, t: ["dump-index", "--verify-index-only", ld],
    ),
    "transactions snapshot": (
        "txn-0/00000000000000000015.snapshot",
        lambda ld, t: ["transactions", ld],
    ),
    "consumer-groups": (
        "__consumer_offsets-0/00000000000000000000.log",
        lambda ld, t: ["consumer-groups", ld],
    ),
    "metadata": ("__cluster_metadata-0/00000000000000000000.log", lambda ld, t: ["metadata", ld]),
    "metadata quorum-state": ("__cluster_metadata-0/quorum-state", lambda ld, t: ["metadata", ld]),
    "get-offsets": ("multi-segment-0/00000000000000000300.log", lambda ld, t: ["get-offsets", ld]),
    "compare-replicas epochs": (
        "multi-segment-0/leader-epoch-checkpoint",
        lambda ld, t: ["compare-replicas", ld / "multi-segment-0", t / "b" / "multi-segment-0"],
    ),
    "compare-replicas dir": (
        "multi-segment-0",
        lambda ld, t: ["compare-replicas", ld / "multi-segment-0", t / "b" / "multi-segment-0"],
    ),
    "doctor partition dir": ("multi-segment-0", lambda ld, t: ["doctor", ld]),
    "doctor checkpoint": ("recovery-point-offset-checkpoint", lambda ld, t: ["doctor", ld]),
    "config meta.properties": ("meta.properties", lambda ld, t: ["describe", ld]),
    "config bootstrap.checkpoint": ("bootstrap.checkpoint", lambda ld, t: ["get-offsets", ld]),
    "config clean shutdown": (".kafka_cleanshutdown", lambda ld, t: ["describe", ld]),
    "server.properties": (
        "../server.properties",
        lambda ld, t: ["transactions", "--server-properties", t / "server.properties", ld],
    ),
    "recover": (
        "multi-segment-0/00000000000000000300.log",
        lambda ld, t: ["recover", "--dry-run", ld],
    ),
    # a segment retain deletes: what cannot be read cannot be kept in the quarantine
    "retain": (
        "multi-segment-0/00000000000000000000.log",
        lambda ld, t: ["retain", "--assume-kafka-defaults", "--now", "1900000000000", ld],
    ),
}


@needs_setpriv
@pytest.mark.parametrize("reader", list(UNREADABLE))
def test_an_unreadable_file_is_exit_4_naming_it_never_skipped(tmp_path, reader):
    rel, args = UNREADABLE[reader]
    ld = copy_examples(tmp_path)
    shutil.copytree(EXAMPLES, tmp_path / "b")
    (tmp_path / "server.properties").write_text("log.retention.hours=1\n")
    target = (ld / rel).resolve()
    target.chmod(0)
    try:
        r = run_unprivileged(*args(ld, tmp_path))
    finally:
        target.chmod(0o755 if target.is_dir() else 0o644)
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert target.exists()  # still in its place: nothing it could not read was removed
    errors = _errors(r.stderr)
    assert any(str(target) in line and "permission denied" in line.lower() for line in errors), (
        r.stderr
    )
    if reader.startswith("export"):
        assert (
            not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o").exists()
        )  # no partial export vouched for


@needs_setpriv
def test_export_of_a_readable_copy_has_every_record(tmp_path):
    """The same export, every file readable: all 1,248 records."""
    ld = copy_examples(tmp_path)
    r = run_unprivileged("export", ld, tmp_path / "o.jsonl", "--to", "jsonl")
    assert r.returncode == 0, r.stderr
    assert "exported 1248 records from 16 segments" in r.stdout
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 1248


def test_the_consumer_view_does_not_start_after_a_segment_it_cannot_open(tmp_path):
    """export's and the Spark source's listing (ops.consumer_view.views_for): a segment that cannot
    be opened is an InputError naming it, not damage after which the view starts."""
    from kafkalog_cli.errors import InputError
    from kafkalog_cli.ops.consumer_view import views_for
    from kafkalog_cli.storage.remote import segments_of_sources

    ld = copy_examples(tmp_path)
    seg = ld / "multi-segment-0" / "00000000000000000000.log"
    seg.unlink()
    os.mkfifo(seg)
    refs = segments_of_sources([str(ld / "multi-segment-0")])
    with pytest.raises(InputError) as e:
        views_for(refs, "read_uncommitted")
    assert e.value.path == str(seg) and "a FIFO" in e.value.message


# ------------------------------------------------------------------ compare-replicas, paths
@needs_setpriv
@pytest.mark.parametrize(
    "cmd", ["compare-replicas", "describe", "verify-crc", "dump-log", "recover", "doctor"]
)
def test_an_unreadable_dir_argument_is_exit_4_not_a_usage_error(tmp_path, cmd):
    a = copy_examples(tmp_path, "a")
    b = copy_examples(tmp_path, "b")
    args = {
        "compare-replicas": [cmd, a / "multi-segment-0", b / "multi-segment-0"],
        "recover": [cmd, "--dry-run", b / "multi-segment-0"],
    }.get(cmd, [cmd, b / "multi-segment-0"])
    (b / "multi-segment-0").chmod(0)
    try:
        r = run_unprivileged(*args)
    finally:
        (b / "multi-segment-0").chmod(0o755)
    assert r.returncode == 4, (r.stdout, r.stderr)
    assert "Usage:" not in r.stderr
    assert any(
        str(b / "multi-segment-0") in line and "ermission denied" in line
        for line in _errors(r.stderr)
    ), r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "--server-properties", "{t}/none.properties", "{t}/ld"],
        ["transactions", "--server-properties", "{t}/none.properties", "{t}/ld"],
        ["delete-records", "--offset-json", "{t}/none.json", "{t}/ld"],
    ],
)
def test_a_missing_file_option_is_exit_4_naming_it(tmp_path, args):
    copy_examples(tmp_path)
    r = invoke(*[a.format(t=tmp_path) for a in args])
    assert r.exit_code == 4, r.output
    assert r.stderr.strip().splitlines() == [
        f"kafkalog: {tmp_path}/{args[2].split('/')[-1]}: no such file or directory"
    ]
