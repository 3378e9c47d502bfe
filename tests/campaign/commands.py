"""Every command the campaign runs, as one table: how to call it on a workspace, whether it
may change the log dir, and the exit codes it documents (its --help, else docs/safety.md "Exit codes").

To add a command: one Command entry in COMMANDS (and, if it changes log dirs, one KillTarget
in kills.py)."""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from . import mask_oracle, schema_oracle
from .workspace import Workspace

NOW_MS = "1800000000000"  # a fixed clock (2027-01-15): retention and transaction ages repeat


class Mode(enum.Enum):
    READ_ONLY = "read-only"  # must change nothing (invariant 5)
    DRY_RUN = "dry-run"  # a mutating command's --dry-run: read-only too
    MUTATING = "mutating"  # changes the log dir; a second run must change nothing (6)


class Second(enum.Enum):
    """What W/logdir2 is for a command that takes two log dirs."""

    NONE = "none"
    COPY = "copy"  # an unmutated copy of the same source (compare-replicas' other replica)
    EMPTY = "empty"  # a new log dir of the same broker (move-partition's destination)


@dataclass(frozen=True)
class Args:
    """What an argv builder may use: the workspace and the partition the case aims at."""

    ws: Workspace
    topic: str
    partition: int


@dataclass(frozen=True)
class Command:
    name: str
    argv: Callable[[Args], list[str]]
    mode: Mode
    fallback: frozenset[int]  # the exit codes docs/safety.md gives it, where --help lists none
    second: Second = Second.NONE
    dry_run: Callable[[Args], list[str]] | None = None  # a MUTATING command's --dry-run
    # reads schemas: run on the schemas fixture (always for a schema mutation, else half the time)
    schemas: bool = False
    # more work for the case's copy after its mutation (repair's damaged target), given the
    # mutation's target; what it did
    prepare: Callable[[Workspace, random.Random, str], str] | None = None
    # a promise of this command's own, checked after the run: (verdict, args, run, drop_caps)
    oracle: Callable | None = None
    weight: float = 1.0  # how often a case draws it, beside its mode's weight (cases.plan)

    @property
    def codes(self) -> frozenset[int]:
        """The exit codes the command documents: its own --help's "Exit codes:" paragraph, read
        from the kafkalog under test (so a code a fix documents counts at once), else the
        docs/safety.md table's."""
        return documented_codes(self.name) or self.fallback


_HELP_CODES = re.compile(r"(?:^|[;,]|Exit codes?:)\s*(\d)\s+(?=[a-z(-])")


# reading --help is not a run under test: the cases' own timeout (which a test sets to seconds
# to fake a hang) must not fail it on a loaded machine
_HELP_TIMEOUT_S = 300


@functools.cache
def documented_codes(name: str) -> frozenset[int]:
    """The codes in `kafkalog <subcommand> --help`'s "Exit codes:" paragraph (empty if none)."""
    import subprocess

    from . import runner

    words = list(itertools.takewhile(lambda w: not w.startswith(("-", "(")), name.split()))
    env = {**os.environ, "PYTHONPATH": runner.package_root(), "COLUMNS": "200"}
    out = subprocess.run(
        [*runner.PROGRAM, *words, "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=_HELP_TIMEOUT_S,
    ).stdout
    text = " ".join(out.split())
    m = re.search(r"Exit codes?:(.*?)(?:Precedence|$)", text)
    return frozenset(int(c) for c in _HELP_CODES.findall(m.group(1))) if m else frozenset()


def _l(a: Args) -> str:
    return str(a.ws.logdir)


def _mask(a: Args) -> list[str]:
    return mask_oracle.options(a.ws)


def _q(a: Args) -> list[str]:
    return ["--quarantine", str(a.ws.quarantine)]


READER = frozenset({0, 2, 3, 4})
WRITER = frozenset({0, 2, 3, 4, 5, 6})
PLANNER = frozenset({0, 1, 2, 3, 4, 5, 6})  # a --dry-run: 1 when the plan would change something


def _rot(ws: Workspace, rng: random.Random, target: str = "") -> str:
    """Bit rot in W/logdir2 (repair's target when the mutated W/logdir is its donor): one to
    three flipped bytes in batches of its segments, so repair has ranges to take from the donor;
    in the segment the mutation damaged in the donor when it damaged one (`target`), so repair
    meets the donor's damage where it needs the donor."""
    segs = sorted(
        s
        for p in ws.logdir2.iterdir()
        if p.is_dir() and not p.is_symlink()
        for s in p.glob("*.log")
        if s.is_file() and not s.is_symlink() and s.stat().st_size > 200
    )
    same = ws.logdir2 / target
    if target.endswith(".log") and same in segs:
        segs = [same]
    done = []
    for seg in rng.sample(segs, min(len(segs), rng.randint(1, 3))):
        data = bytearray(seg.read_bytes())
        k = rng.randrange(70, len(data))
        data[k] ^= 0x5A
        st = seg.stat()
        seg.write_bytes(bytes(data))
        os.utime(seg, ns=(st.st_atime_ns, st.st_mtime_ns))
        done.append(f"{seg.parent.name}/{seg.name} byte {k}")
    return "target logdir2: " + (", ".join(done) or "nothing to rot")


def _mutating(
    name: str,
    args: Callable[[Args], list[str]],
    codes: frozenset[int],
    second: Second = Second.NONE,
    **more,
) -> list[Command]:
    """The command, and its --dry-run as a read-only command of its own (`more`: the other
    Command fields of both)."""
    run = lambda a: args(a) + _q(a)  # noqa: E731
    dry = lambda a: args(a) + ["--dry-run"]  # noqa: E731
    return [
        Command(name, run, Mode.MUTATING, codes, second, dry_run=dry, **more),
        Command(name + " --dry-run", dry, Mode.DRY_RUN, codes | {1}, second, **more),
    ]


COMMANDS: list[Command] = [
    Command("describe", lambda a: ["describe", _l(a)], Mode.READ_ONLY, READER),
    Command(
        "describe --format json",
        lambda a: ["describe", "--format", "json", _l(a)],
        Mode.READ_ONLY,
        READER,
    ),
    Command("verify-crc", lambda a: ["verify-crc", _l(a)], Mode.READ_ONLY, READER | {1}),
    Command(
        "verify-crc --deep", lambda a: ["verify-crc", "--deep", _l(a)], Mode.READ_ONLY, READER | {1}
    ),
    Command(
        "dump-log --deep-iteration",
        lambda a: [
            "dump-log",
            "--deep-iteration",
            "--print-data-log",
            f"{_l(a)}/{a.topic}-{a.partition}",
        ],
        Mode.READ_ONLY,
        READER,
    ),
    Command(
        "dump-log --format json",
        lambda a: ["dump-log", "--format", "json", f"{_l(a)}/{a.topic}-{a.partition}"],
        Mode.READ_ONLY,
        READER,
    ),
    Command("dump-index", lambda a: ["dump-index", _l(a)], Mode.READ_ONLY, READER | {1}),
    Command(
        "dump-index --verify-index-only",
        lambda a: ["dump-index", "--verify-index-only", _l(a)],
        Mode.READ_ONLY,
        READER | {1},
    ),
    Command(
        "dump-index --index-sanity-check",
        lambda a: ["dump-index", "--index-sanity-check", _l(a)],
        Mode.READ_ONLY,
        READER | {1},
    ),
    Command("get-offsets", lambda a: ["get-offsets", _l(a)], Mode.READ_ONLY, READER),
    Command(
        "get-offsets --time max-timestamp",
        lambda a: ["get-offsets", "--time", "max-timestamp", _l(a)],
        Mode.READ_ONLY,
        READER,
    ),
    Command(
        "transactions", lambda a: ["transactions", "--now", NOW_MS, _l(a)], Mode.READ_ONLY, READER
    ),
    Command(
        "transactions --find-hanging",
        lambda a: ["transactions", "--find-hanging", "--now", NOW_MS, _l(a)],
        Mode.READ_ONLY,
        READER | {1},
    ),
    Command("consumer-groups", lambda a: ["consumer-groups", _l(a)], Mode.READ_ONLY, READER),
    Command("doctor", lambda a: ["doctor", _l(a)], Mode.READ_ONLY, frozenset({0, 1, 2, 4, 8})),
    Command("metadata", lambda a: ["metadata", _l(a)], Mode.READ_ONLY, READER),
    Command(
        "export --to jsonl",
        lambda a: ["export", "--to", "jsonl", _l(a), str(a.ws.out / "x.jsonl")],
        Mode.READ_ONLY,
        READER | {6},
    ),
    Command(
        "export --to parquet",
        lambda a: ["export", "--to", "parquet", _l(a), str(a.ws.out / "x.parquet")],
        Mode.READ_ONLY,
        READER | {6},
    ),
    Command(
        "compare-replicas",
        lambda a: [
            "compare-replicas",
            "--topic",
            a.topic,
            "--partition",
            str(a.partition),
            _l(a),
            str(a.ws.logdir2),
        ],
        Mode.READ_ONLY,
        READER | {1},
        Second.COPY,
    ),
    Command("quarantine list", lambda a: ["quarantine", "list", _l(a)], Mode.READ_ONLY, READER),
    Command("schemas", lambda a: ["schemas", _l(a)], Mode.READ_ONLY, READER, schemas=True),
    Command(
        "schemas --show-schema",
        lambda a: ["schemas", "--show-schema", _l(a)],
        Mode.READ_ONLY,
        READER,
        schemas=True,
    ),
    Command(
        "schemas --deleted --format json",
        lambda a: ["schemas", "--deleted", "--format", "json", _l(a)],
        Mode.READ_ONLY,
        READER,
        schemas=True,
    ),
    Command(
        "dump-log --decode-schemas",
        lambda a: ["dump-log", "--format", "json", "--decode-schemas", _l(a)],
        Mode.READ_ONLY,
        READER | {1},
        schemas=True,
        oracle=schema_oracle.check_dump_log,
        weight=3.0,  # the decoder's every path: drawn more often than a listing
    ),
    Command(
        "export --to jsonl --decode-schemas",
        lambda a: ["export", "--to", "jsonl", "--decode-schemas", _l(a), str(a.ws.out / "x.jsonl")],
        Mode.READ_ONLY,
        READER | {6},
        schemas=True,
        oracle=schema_oracle.check_export_jsonl,
    ),
    Command(
        "export --to parquet --decode-schemas",
        lambda a: ["export", "--to", "parquet", "--decode-schemas", _l(a), str(a.ws.out / "x")],
        Mode.READ_ONLY,
        READER | {6},
        schemas=True,
        oracle=schema_oracle.check_export,
        weight=2.0,
    ),
    Command(
        "dump-log --decode-schemas --mask",
        lambda a: ["dump-log", "--format", "json", "--decode-schemas", *_mask(a), _l(a)],
        Mode.READ_ONLY,
        READER | {1},
        schemas=True,
        prepare=mask_oracle.write_key,
        oracle=mask_oracle.check_dump_log,
        weight=2.0,
    ),
    Command(
        "export --to jsonl --decode-schemas --mask",
        lambda a: [
            "export",
            "--to",
            "jsonl",
            "--decode-schemas",
            *_mask(a),
            _l(a),
            str(a.ws.out / "x.jsonl"),
        ],
        Mode.READ_ONLY,
        READER | {6},
        schemas=True,
        prepare=mask_oracle.write_key,
        oracle=mask_oracle.check_export_jsonl,
    ),
    Command(
        "export --to parquet --decode-schemas --mask",
        lambda a: [
            "export",
            "--to",
            "parquet",
            "--decode-schemas",
            *_mask(a),
            _l(a),
            str(a.ws.out / "x"),
        ],
        Mode.READ_ONLY,
        READER | {6},
        schemas=True,
        prepare=mask_oracle.write_key,
        oracle=mask_oracle.check_export,
    ),
    *_mutating("recover", lambda a: ["recover", "--now", NOW_MS, _l(a)], WRITER),
    *_mutating(
        "recover --repair", lambda a: ["recover", "--repair", "--now", NOW_MS, _l(a)], WRITER
    ),
    *_mutating(
        "recover --salvage", lambda a: ["recover", "--salvage", "--now", NOW_MS, _l(a)], WRITER
    ),
    *_mutating(
        "retain",
        lambda a: ["retain", "--now", NOW_MS, "--assume-kafka-defaults", _l(a)],
        WRITER | {7},
    ),
    *_mutating("compact", lambda a: ["compact", "--force", "--now", NOW_MS, _l(a)], WRITER | {7}),
    *_mutating(
        "delete-records",
        lambda a: [
            "delete-records",
            "--topic",
            a.topic,
            "--partition",
            str(a.partition),
            "--before",
            "5",
            _l(a),
        ],
        WRITER | {7},
    ),
    *_mutating("roll", lambda a: ["roll", "--now", NOW_MS, _l(a)], WRITER),
    *_mutating(
        "move-partition",
        lambda a: [
            "move-partition",
            "--topic",
            a.topic,
            "--partition",
            str(a.partition),
            _l(a),
            str(a.ws.logdir2),
        ],
        WRITER,
        Second.EMPTY,
    ),
    *_mutating(
        "repair",
        lambda a: ["repair", _l(a), "--from", str(a.ws.logdir2)],
        WRITER | {1},
        Second.COPY,
    ),
    # the mutated copy as the donor of a copy with bit rot: repair reads a donor only where its
    # target has damage (the rarer path, drawn more often)
    *_mutating(
        "repair (donor mutated)",
        lambda a: ["repair", str(a.ws.logdir2), "--from", _l(a)],
        WRITER | {1},
        Second.COPY,
        prepare=_rot,
        weight=3.0,
    ),
]
COMMANDS = [
    dataclasses.replace(c, weight=2.0) if c.name == "repair --dry-run" else c for c in COMMANDS
]

BY_NAME = {c.name: c for c in COMMANDS}


def restore_argv(folder) -> list[str]:
    return ["quarantine", "restore", str(folder)]


RESTORE_CODES = frozenset(
    {0, 2, 3, 4, 5, 6}
)  # docs/safety.md: quarantine restore's --help lists none
