"""The one exit-code table (errors.EXIT_CODE_TABLE), held for every command: one case per code a
command can return, each built as a user meets it, checked as the user sees it (the code, and
one line on stderr naming the reason where the command failed)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.errors import EXIT_CODE_TABLE, ExitCode, exit_code_of
from tests.helpers import bad_inputs as B
from tests.helpers import paths
from tests.helpers.compaction import DIRTY
from tests.helpers.exit_codes import EXIT_CODES
from tests.helpers.field_damage import base_offset_overflow, torn_tail
from tests.helpers.locks import hold_lock
from tests.helpers.paths import EXAMPLES
from tests.helpers.transactions import NOW as HANGING_NOW

NOW = "1795249186389"  # the clock the dry runs and the runs share


class Env:
    """What a case builds under tmp_path, and what it must undo (a held lock, a mount)."""

    def __init__(self, tmp_path: Path, stack: contextlib.ExitStack):
        self.tmp = tmp_path
        self.stack = stack

    def logdir(self, name: str = "ld") -> Path:
        d = self.tmp / name
        shutil.copytree(EXAMPLES, d)
        return d

    def locked(self, d: Path) -> Path:
        p = hold_lock(d / ".lock")
        self.stack.callback(lambda: (p.kill(), p.wait()))
        return d

    def read_only(self, d: Path) -> Path:
        """`d` as a read-only bind mount of itself: the EROFS a user meets."""
        if subprocess.run(["mount", "--bind", str(d), str(d)], capture_output=True).returncode != 0:
            pytest.skip(
                "mounting is not permitted here (needs root): no read-only file system to test on"
            )
        self.stack.callback(lambda: subprocess.run(["umount", "-l", str(d)], capture_output=True))
        r = subprocess.run(["mount", "-o", "remount,bind,ro", str(d)], capture_output=True)
        if r.returncode != 0:
            pytest.skip(f"cannot remount read-only: {r.stderr.decode().strip()}")
        return d

    def empty_dir(self, name: str) -> Path:
        d = self.tmp / name
        d.mkdir()
        return d

    def damaged_checkpoint(self, d: Path) -> Path:
        (d / "recovery-point-offset-checkpoint").write_text("0\n1\nmulti-segment 0 zz\n")
        return d

    def damaged_epochs(self, d: Path) -> Path:
        (d / "multi-segment-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")
        return d

    def torn(self) -> Path:
        """The examples' log dir after a kill mid-append: a torn batch at the end of an active segment."""
        d = self.logdir()
        with open(d / "txn-0" / "00000000000000000000.log", "ab") as f:
            f.write(B.good_batch(10_000)[:40])
        return d

    def offset_overflow(self) -> Path:
        return base_offset_overflow(self.logdir())

    def torn_unclean(self) -> Path:
        """After a kill -9 mid-append: the broker truncates the torn batch as it starts (a warning)."""
        return torn_tail(self.logdir())

    def without_meta(self) -> Path:
        d = self.logdir()
        (d / "meta.properties").unlink()
        return d

    def hanging(self) -> Path:
        """A transaction left open an hour ago (tests/commands/test_transactions_cli.py's log dir)."""
        from tests.helpers.transactions import log_dir

        return log_dir(self.tmp)

    def offsets(self, topic: str, partition: int, offset: int) -> Path:
        f = self.tmp / "offsets.json"
        f.write_text(
            json.dumps(
                {
                    "partitions": [{"topic": topic, "partition": partition, "offset": offset}],
                    "version": 1,
                }
            )
        )
        return f

    def no_high_watermark(self) -> Path:
        d = self.logdir()
        (d / "replication-offset-checkpoint").write_text("0\n0\n")
        return d

    def dirty(self) -> Path:
        """A compacted topic with overwritten keys the cleaner would remove."""
        from tests.helpers.compaction import restore

        return restore("keyed-overwrites", "before", self.tmp / "logs")

    def damaged_compacted(self) -> Path:
        d = self.dirty()
        seg = d / "cmp-none-0" / "00000000000000000174.log"
        data = bytearray(seg.read_bytes())
        data[57:61] = (1000).to_bytes(4, "big")  # the first batch claims 1000 records
        seg.write_bytes(bytes(data))
        return d

    def bad_crc_in(self, partition: str) -> Path:
        """The examples' log dir with the last byte of `partition`'s first segment flipped."""
        d = self.logdir()
        log = sorted((d / partition).glob("*.log"))[0]
        data = bytearray(log.read_bytes())
        data[-1] ^= 0xFF
        log.write_bytes(bytes(data))
        return d

    def replicas(self, diverged: bool, damaged: bool = False) -> list[str]:
        """Two copies of one partition (tests/ops/test_compare_replicas.py's): after an unclean
        election, or one a prefix of the other."""
        from tests.helpers.replicas import run, unclean_election, write_replica

        if diverged:
            a, b = unclean_election(self.tmp)
        else:
            a, b = (
                write_replica(self.tmp / "b1", 1, run(5, 0)),
                write_replica(self.tmp / "b2", 2, run(3, 0)),
            )
        if damaged:
            (a / "leader-epoch-checkpoint").write_text("0\n1\n0 x\n")
        return [str(a), str(b)]

    def move(
        self, damaged: bool = False, locked: bool = False, read_only: bool = False
    ) -> list[str]:
        """move-partition's source and destination log dirs (tests/ops/test_move_partition.py's)."""
        from .ops.move_helpers import TP, two_log_dirs

        src, dst = two_log_dirs(self.tmp)
        if damaged:
            (dst / "recovery-point-offset-checkpoint").write_text("0\n1\nmulti-segment 0 zz\n")
        if locked:
            self.locked(dst)
        if read_only:
            self.read_only(dst)
        return [str(src), str(dst), "--topic", TP.topic, "--partition", str(TP.partition)]

    def bad(self, builder) -> Path:
        """A log dir holding one partition built by tests/helpers/bad_inputs.py; the path it returns."""
        root = self.tmp / "bad"
        path = builder(root)
        (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=x\n")
        return path


def _schemas_not_json(e: Env) -> Path:
    """A log dir whose _schemas topic holds a record whose key is not the registry's JSON."""
    d = e.tmp / "registry"
    (d / "_schemas-0").mkdir(parents=True)
    (d / "_schemas-0" / "00000000000000000000.log").write_bytes(B.good_batch())
    (d / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=x\n")
    return d


def _rest_dir_not_json(e: Env) -> Path:
    """A dir shaped as the registry's REST answers whose one version is not JSON."""
    d = e.tmp / "rest"
    (d / "subjects" / "s" / "versions").mkdir(parents=True)
    (d / "subjects" / "s" / "versions" / "1").write_text("{")
    return d


SCHEMAS_FIXTURE = paths.SCHEMAS / "logdir"


# (command, code) -> build(env) -> (args, what stderr must say: a substring, or None for nothing)
def _missing(cmd, *extra):
    return lambda e: ([cmd, *extra, str(e.tmp / "nope")], "nope")


def _rotted(d: Path) -> Path:
    """Bit rot in multi-segment-0: one flipped byte in the batch of offsets 100..124."""
    log = d / "multi-segment-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[2593 + 70] ^= 0x10
    log.write_bytes(bytes(data))
    return d


def _usage(cmd, *extra):
    return lambda e: ([cmd, *extra, "--no-such-option", str(e.tmp)], "No such option")


ASSUME = ["--assume-kafka-defaults", "--now", NOW]
ERASE = ["erase", "--topic", "codec-gzip", "--key", "k025"]
RETAIN_DUE = ["--topic", "multi-segment", *ASSUME]


def _quarantined(e: Env) -> tuple[Path, str]:
    d = e.logdir()
    q = e.tmp / "q"
    r = CliRunner().invoke(
        cli,
        [
            "delete-records",
            str(d),
            "--topic",
            "multi-segment",
            "--before",
            "300",
            "--quarantine",
            str(q),
        ],
    )
    assert r.exit_code == 0, r.output
    (folder,) = [p for p in q.rglob("manifest.jsonl")]
    return d, str(folder.parent)


def _restore_conflict(e: Env):
    d, folder = _quarantined(e)
    (d / "multi-segment-0" / "00000000000000000000.log").write_bytes(b"someone else's file")
    return ["quarantine", "restore", folder], "changed"


def _restore_locked(e: Env):
    d, folder = _quarantined(e)
    e.locked(d)
    return ["quarantine", "restore", folder], "in use by process"


def _restore_read_only(e: Env):
    d, folder = _quarantined(e)
    e.read_only(d / "multi-segment-0")
    return ["quarantine", "restore", folder], "read-only file system"


def _zero_filled_index(e: Env) -> Path:
    """Zeros after segment 0's index entries, below the recovery point: the broker keeps them."""
    idx = e.logdir() / "multi-segment-0" / "00000000000000000000.index"
    with open(idx, "ab") as f:
        f.write(bytes(80))
    return idx


CASES = {
    # --------------------------------------------------------------- readers
    ("dump-log", 0): lambda e: (["dump-log", str(EXAMPLES / "txn-0")], None),
    ("dump-log", 1): lambda e: (
        [
            "dump-log",
            str(SCHEMAS_FIXTURE),
            "--topic",
            "legacy",
            "--format",
            "json",
            "--decode-schemas",
        ],
        "value kept as bytes",
    ),
    ("dump-log", 2): _usage("dump-log"),
    ("dump-log", 3): lambda e: (
        ["dump-log", str(e.bad(B.bad_name))],
        "does not start with an offset",
    ),
    ("dump-log", 4): _missing("dump-log"),
    ("dump-index", 0): lambda e: (
        ["dump-index", str(EXAMPLES / "multi-segment-0" / "00000000000000000000.index")],
        None,
    ),
    ("dump-index", 1): lambda e: (
        ["dump-index", "--verify-index-only", str(_zero_filled_index(e))],
        "zero-filled",
    ),
    ("dump-index", 2): _usage("dump-index"),
    ("dump-index", 3): lambda e: (
        ["dump-index", "--index-sanity-check", str(e.bad(B.index_odd_size))],
        "index",
    ),
    ("dump-index", 4): _missing("dump-index"),
    ("verify-crc", 0): lambda e: (["verify-crc", str(EXAMPLES)], None),
    ("verify-crc", 1): lambda e: (["verify-crc", str(e.bad(B.bad_crc))], None),
    ("verify-crc", 2): _usage("verify-crc"),
    ("verify-crc", 4): _missing("verify-crc"),
    ("export", 0): lambda e: (
        ["export", str(EXAMPLES / "txn-0"), "--to", "jsonl", str(e.tmp / "out.jsonl")],
        None,
    ),
    ("export", 2): _usage("export", "--to", "jsonl", "-"),
    ("export", 3): lambda e: (
        ["export", str(e.bad(B.bad_crc)), "--to", "jsonl", str(e.tmp / "o.jsonl")],
        "byte",
    ),
    ("export", 4): lambda e: (
        ["export", str(e.tmp / "nope"), "--to", "jsonl", str(e.tmp / "o.jsonl")],
        "nope",
    ),
    ("export", 6): lambda e: (
        [
            "export",
            str(EXAMPLES / "txn-0"),
            "--to",
            "jsonl",
            str(e.read_only(e.empty_dir("ro")) / "o.jsonl"),
        ],
        "read-only file system",
    ),
    ("describe", 0): lambda e: (["describe", str(EXAMPLES)], None),
    ("describe", 2): _usage("describe"),
    ("describe", 3): lambda e: (["describe", str(e.bad(B.bad_crc).parent.parent)], "byte"),
    ("describe", 4): _missing("describe"),
    ("get-offsets", 0): lambda e: (["get-offsets", str(EXAMPLES)], None),
    ("get-offsets", 2): lambda e: (
        ["get-offsets", str(EXAMPLES), "--time", "not-a-time"],
        "not-a-time",
    ),
    ("get-offsets", 3): lambda e: (
        ["get-offsets", str(e.bad(B.garbage_compressed).parent.parent), "--time", "0"],
        "gzip",
    ),
    ("get-offsets", 4): _missing("get-offsets"),
    ("transactions", 0): lambda e: (["transactions", str(EXAMPLES), "--find-hanging"], None),
    ("transactions", 1): lambda e: (
        [
            "transactions",
            str(e.hanging()),
            "--find-hanging",
            "--max-age",
            "10m",
            "--now",
            str(HANGING_NOW),
        ],
        None,
    ),
    ("transactions", 2): _usage("transactions"),
    ("transactions", 3): lambda e: (["transactions", str(e.bad(B.text).parent.parent)], "byte 0"),
    ("transactions", 4): _missing("transactions"),
    ("completion", 0): lambda e: (["completion", "bash"], None),
    ("completion", 2): lambda e: (["completion", "tcsh"], "tcsh"),
    # --------------------------------------------------------------- writers
    ("recover", 0): lambda e: (["recover", str(e.logdir()), "--now", NOW], None),
    ("recover", 1): lambda e: (
        ["recover", "--dry-run", str(e.torn()), "--all", "--now", NOW],
        None,
    ),
    ("recover", 2): _usage("recover"),
    ("recover", 3): lambda e: (
        ["recover", str(e.offset_overflow()), "--now", NOW],
        "the broker does not start",
    ),
    ("recover", 4): _missing("recover"),
    ("recover", 5): lambda e: (
        ["recover", str(e.locked(e.torn())), "--now", NOW],
        "in use by process",
    ),
    ("recover", 6): lambda e: (
        ["recover", str(e.read_only(e.torn())), "--all", "--now", NOW],
        "read-only file system",
    ),
    ("roll", 0): lambda e: (["roll", str(e.logdir()), "--if-needed", "--now", "0"], None),
    ("roll", 1): lambda e: (
        ["roll", "--dry-run", str(e.logdir()), "--topic", "txn", "--now", NOW],
        None,
    ),
    ("roll", 2): _usage("roll"),
    ("roll", 3): lambda e: (
        ["roll", str(e.torn()), "--topic", "txn", "--now", NOW],
        "run `kafkalog recover` first",
    ),
    ("roll", 4): _missing("roll"),
    ("roll", 5): lambda e: (["roll", str(e.locked(e.logdir())), "--now", NOW], "in use by process"),
    ("roll", 6): lambda e: (
        ["roll", str(e.read_only(e.logdir())), "--topic", "txn", "--now", NOW],
        "read-only file system",
    ),
    ("retain", 0): lambda e: (["retain", str(e.logdir()), "--topic", "txn", *ASSUME], None),
    ("retain", 1): lambda e: (["retain", "--dry-run", str(e.logdir()), *RETAIN_DUE], None),
    ("retain", 2): _usage("retain"),
    ("retain", 3): lambda e: (
        ["retain", str(e.damaged_checkpoint(e.logdir())), *ASSUME],
        "Malformed line",
    ),
    ("retain", 4): _missing("retain"),
    ("retain", 5): lambda e: (["retain", str(e.locked(e.logdir())), *ASSUME], "in use by process"),
    ("retain", 6): lambda e: (
        ["retain", str(e.read_only(e.logdir())), *RETAIN_DUE],
        "read-only file system",
    ),
    ("retain", 7): lambda e: (
        [
            "retain",
            str(e.logdir()),
            "--no-cluster-metadata",
            "--topic",
            "multi-segment",
            "--now",
            NOW,
        ],
        "retention",
    ),
    ("compact", 0): lambda e: (["compact", str(e.logdir()), "--topic", "txn", *ASSUME], None),
    ("compact", 1): lambda e: (["compact", "--dry-run", str(e.dirty()), *DIRTY], None),
    ("compact", 2): _usage("compact"),
    ("compact", 3): lambda e: (["compact", str(e.damaged_compacted()), *DIRTY], "byte"),
    ("compact", 4): _missing("compact"),
    ("compact", 5): lambda e: (
        ["compact", str(e.locked(e.logdir())), *ASSUME],
        "in use by process",
    ),
    ("compact", 6): lambda e: (
        ["compact", str(e.read_only(e.dirty())), *DIRTY],
        "read-only file system",
    ),
    ("compact", 7): lambda e: (
        ["compact", str(e.logdir()), "--no-cluster-metadata", "--topic", "compacted", "--now", NOW],
        "cleanup.policy",
    ),
    ("delete-records", 0): lambda e: (
        ["delete-records", str(e.logdir()), "--topic", "multi-segment", "--before", "300"],
        None,
    ),
    ("delete-records", 1): lambda e: (
        [
            "delete-records",
            "--dry-run",
            str(e.logdir()),
            "--topic",
            "multi-segment",
            "--before",
            "300",
        ],
        None,
    ),
    ("delete-records", 2): lambda e: (
        [
            "delete-records",
            str(e.logdir()),
            "--offset-json",
            str(e.offsets("__consumer_offsets", 0, 1)),
        ],
        "INVALID_TOPIC_EXCEPTION",
    ),
    ("delete-records", 3): lambda e: (
        [
            "delete-records",
            str(e.damaged_epochs(e.logdir())),
            "--topic",
            "multi-segment",
            "--before",
            "300",
        ],
        "leader-epoch-checkpoint",
    ),
    ("delete-records", 4): _missing("delete-records", "--before", "1"),
    ("delete-records", 5): lambda e: (
        ["delete-records", str(e.locked(e.logdir())), "--before", "1"],
        "in use by process",
    ),
    ("delete-records", 6): lambda e: (
        [
            "delete-records",
            str(e.read_only(e.logdir())),
            "--topic",
            "multi-segment",
            "--before",
            "300",
        ],
        "read-only file system",
    ),
    ("delete-records", 7): lambda e: (
        [
            "delete-records",
            str(e.no_high_watermark()),
            "--topic",
            "multi-segment",
            "--before",
            "-1",
        ],
        "high watermark",
    ),
    ("repair", 0): lambda e: (["repair", str(e.logdir()), "--from", str(EXAMPLES)], None),
    ("repair", 1): lambda e: (
        ["repair", str(_rotted(e.logdir())), "--from", str(e.damaged_epochs(e.logdir("d")))],
        None,
    ),
    ("repair", 2): _usage("repair", "--from", str(EXAMPLES)),
    ("repair", 3): lambda e: (
        [
            "repair",
            str(e.damaged_epochs(e.logdir())),
            "--topic",
            "multi-segment",
            "--from",
            str(EXAMPLES),
        ],
        "leader-epoch-checkpoint",
    ),
    ("repair", 4): _missing("repair", "--from", str(EXAMPLES)),
    ("repair", 5): lambda e: (
        ["repair", str(e.locked(_rotted(e.logdir()))), "--from", str(EXAMPLES)],
        "in use by process",
    ),
    ("repair", 6): lambda e: (
        ["repair", str(e.read_only(_rotted(e.logdir()))), "--from", str(EXAMPLES)],
        "read-only file system",
    ),
    ("erase", 0): lambda e: ([*ERASE, str(e.logdir())], None),
    ("erase", 1): lambda e: ([*ERASE, "--dry-run", str(e.logdir())], None),
    ("erase", 2): lambda e: (
        ["erase", "--topic", "__consumer_offsets", "--offsets", "0", str(e.logdir())],
        "internal topic",
    ),
    ("erase", 3): lambda e: (
        ["erase", "--topic", "codec-gzip", "--key", "k045", str(e.bad_crc_in("codec-gzip-0"))],
        "codec-gzip-0",
    ),
    ("erase", 4): _missing(*ERASE),
    ("erase", 5): lambda e: ([*ERASE, str(e.locked(e.logdir()))], "in use by process"),
    ("erase", 6): lambda e: ([*ERASE, str(e.read_only(e.logdir()))], "read-only file system"),
    ("doctor", 0): lambda e: (["doctor", str(EXAMPLES)], None),
    ("doctor", 1): lambda e: (["doctor", str(e.torn_unclean())], None),
    ("doctor", 2): lambda e: (["doctor"], "give the log dirs"),
    ("doctor", 4): lambda e: (["doctor", str(e.bad(B.text))], "not a directory"),
    ("doctor", 8): lambda e: (["doctor", str(e.without_meta())], None),
    ("consumer-groups", 0): lambda e: (["consumer-groups", str(EXAMPLES)], None),
    ("consumer-groups", 2): _usage("consumer-groups"),
    ("consumer-groups", 3): lambda e: (
        ["consumer-groups", str(e.bad_crc_in("__consumer_offsets-0"))],
        "Record is corrupt",
    ),
    ("consumer-groups", 4): _missing("consumer-groups"),
    ("metadata", 0): lambda e: (["metadata", str(EXAMPLES)], None),
    ("metadata", 2): _usage("metadata"),
    ("metadata", 3): lambda e: (
        ["metadata", str(e.bad_crc_in("__cluster_metadata-0"))],
        "Record is corrupt",
    ),
    ("metadata", 4): _missing("metadata"),
    ("compare-replicas", 0): lambda e: (["compare-replicas", *e.replicas(diverged=False)], None),
    ("compare-replicas", 1): lambda e: (["compare-replicas", *e.replicas(diverged=True)], None),
    ("compare-replicas", 2): lambda e: (
        ["compare-replicas", e.replicas(diverged=True)[0]],
        "at least two",
    ),
    ("compare-replicas", 3): lambda e: (
        ["compare-replicas", *e.replicas(diverged=True, damaged=True)],
        "leader-epoch-checkpoint",
    ),
    ("compare-replicas", 4): lambda e: (
        ["compare-replicas", e.replicas(diverged=True)[0], str(e.tmp / "nope")],
        "nope",
    ),
    ("move-partition", 0): lambda e: (["move-partition", *e.move()], None),
    ("move-partition", 1): lambda e: (["move-partition", *e.move(), "--dry-run"], None),
    ("move-partition", 2): lambda e: (
        ["move-partition", *e.move()[:2], "--topic", "multi-segment"],
        "--partition",
    ),
    ("move-partition", 3): lambda e: (["move-partition", *e.move(damaged=True)], "checkpoint"),
    ("move-partition", 4): lambda e: (
        ["move-partition", *e.move()[:2], "--topic", "nope", "--partition", "0"],
        "nope-0",
    ),
    ("move-partition", 5): lambda e: (
        ["move-partition", *e.move(locked=True)],
        "in use by process",
    ),
    ("move-partition", 6): lambda e: (
        ["move-partition", *e.move(read_only=True)],
        "read-only file system",
    ),
    ("schemas", 0): lambda e: (["schemas", str(SCHEMAS_FIXTURE)], None),
    ("schemas", 2): _usage("schemas"),
    ("schemas", 1): lambda e: (
        ["schemas", str(_schemas_not_json(e))],
        "offset 0: _schemas-0 record skipped, as the Schema Registry skips it: its key is not JSON",
    ),
    ("schemas", 3): lambda e: (["schemas", "--schemas", str(_rest_dir_not_json(e))], "not JSON"),
    ("schemas", 4): _missing("schemas"),
    ("quarantine", 0): lambda e: (["quarantine", "list", str(_quarantined(e)[1])], None),
    ("quarantine", 2): lambda e: (["quarantine", "restore"], "Missing argument"),
    ("quarantine", 3): _restore_conflict,
    ("quarantine", 4): lambda e: (["quarantine", "restore", str(e.tmp / "nope")], "nope"),
    ("quarantine", 5): _restore_locked,
    ("quarantine", 6): _restore_read_only,
}


def test_every_code_of_every_command_has_a_case():
    want = {(name, code) for name, codes in EXIT_CODES.items() for code in codes}
    assert want == set(CASES), sorted(want ^ set(CASES))


@pytest.mark.parametrize("command,code", sorted(CASES))
def test_exit_code(tmp_path, command, code):
    with contextlib.ExitStack() as stack:
        args, says = CASES[(command, code)](Env(tmp_path, stack))
        r = CliRunner().invoke(cli, args)
    assert r.exit_code == code, (args, r.stdout, r.stderr)
    assert "Traceback" not in r.output and "internal error" not in r.stderr
    if code in (2, 3, 4, 5, 6, 7):
        assert r.stderr.strip(), "a failure says why on stderr"
        assert says is None or says.lower() in r.stderr.lower(), r.stderr
        assert all(
            line.startswith(("kafkalog: ", "Usage:", "Try ", "Error:", "  ")) or not line
            for line in r.stderr.splitlines()
        ), r.stderr
    elif code == 0:
        assert "kafkalog: " not in r.stderr or "note:" in r.stderr or "warning:" in r.stderr, (
            r.stderr
        )


def test_the_table_is_in_help_in_order():
    text = CliRunner().invoke(cli, ["--help"]).output
    at = [text.index(f"\n    {int(code)}  ") for code, _ in EXIT_CODE_TABLE]
    assert at == sorted(at) and "Precedence" in text and "wins over 8" in text


@pytest.mark.parametrize(
    "codes,want",
    [
        ([], 0),
        ([0, 0], 0),
        ([1, 0], 1),
        ([5, 1], 5),
        ([1, 7, 5], 7),
        ([8, 7], 8),
        ([7, 8, 1], 8),
        ([1, 4, 3], 4),
        ([3, 4], 3),
        ([5, 6, 7], 6),
        ([8, 2], 2),
    ],
)
def test_precedence(codes, want):
    assert exit_code_of(codes) == want


def test_a_refused_internal_topic_is_2_on_stderr_and_the_others_are_done(tmp_path):
    d = tmp_path / "ld"
    shutil.copytree(EXAMPLES, d)
    f = tmp_path / "o.json"
    f.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": "__consumer_offsets", "partition": 0, "offset": 1},
                    {"topic": "multi-segment", "partition": 0, "offset": 300},
                ]
            }
        )
    )
    r = CliRunner().invoke(cli, ["delete-records", str(d), "--offset-json", str(f)])
    assert r.exit_code == ExitCode.REFUSED_BY_KAFKA == 2
    assert "INVALID_TOPIC_EXCEPTION" in r.stderr and "INVALID_TOPIC_EXCEPTION" not in r.stdout
    assert not (d / "multi-segment-0" / "00000000000000000000.log").exists()


@pytest.mark.parametrize(
    "command,args",
    [
        ("recover", []),
        ("roll", ["--if-needed", "--now", "0"]),
        ("retain", ["--topic", "txn", *ASSUME]),
        ("compact", ["--topic", "txn", *ASSUME]),
        ("delete-records", ["--topic", "multi-segment", "--before", "0"]),
    ],
)
def test_a_dry_run_with_nothing_to_do_is_0(tmp_path, command, args):
    d = tmp_path / "ld"
    shutil.copytree(EXAMPLES, d)
    if command == "recover":
        CliRunner().invoke(cli, ["recover", str(d), "--now", NOW, "--no-quarantine"])
    r = CliRunner().invoke(cli, [command, "--dry-run", str(d), *args])
    assert r.exit_code == 0, r.output


def test_codes_in_use_are_the_table():
    assert {int(c) for c, _ in EXIT_CODE_TABLE} == set(range(9))
    assert all(int(c) in range(9) for c in ExitCode if c is not ExitCode.INTERRUPTED)
    assert os.path.exists(paths.MAN / "kafkalog.1")
