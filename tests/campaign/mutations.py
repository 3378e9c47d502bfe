"""The damage the campaign does to a copy of a log dir: one Mutation per case, chosen and
carried out from a seeded random.Random, so a case id gives back the same bytes.

Each kind names what it damages (records, indexes, snapshots, checkpoints, properties, names,
file types, links, permissions). To add one: a member of Kind and a function registered with
@mutation(Kind.X) that changes `ws.logdir` (and may plant targets under `ws.outside`) and
returns the Mutation it did, or None where the copy has nothing it applies to."""

from __future__ import annotations

import enum
import os
import random
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .workspace import Workspace


class Family(enum.Enum):
    RECORDS = "records"
    INDEXES = "indexes"
    SNAPSHOTS = "snapshots"
    CHECKPOINTS = "checkpoints"
    PROPERTIES = "properties"
    NAMES = "names"
    FILE_TYPES = "file types"
    LINKS = "links"
    PERMISSIONS = "permissions"
    SCHEMAS = "schemas"  # the schemas fixture's _schemas records and framed payloads
    NONE = "none"


class Kind(enum.Enum):
    NONE = ("none", Family.NONE)
    LOG_BIT_FLIP = ("log-bit-flip", Family.RECORDS)
    LOG_TRUNCATE = ("log-truncate", Family.RECORDS)
    LOG_ZERO_RANGE = ("log-zero-range", Family.RECORDS)
    LOG_TEXT = ("log-text", Family.RECORDS)
    LOG_SPLICE = ("log-splice", Family.RECORDS)
    LOG_LENGTH_EXTREME = ("log-length-extreme", Family.RECORDS)
    LOG_BATCH_FIELD = ("log-batch-field", Family.RECORDS)
    LOG_TAIL_GARBAGE = ("log-tail-garbage", Family.RECORDS)
    LOG_PREALLOCATED = ("log-preallocated", Family.RECORDS)
    INDEX_ODD_SIZE = ("index-odd-size", Family.INDEXES)
    INDEX_BAD_ENTRY = ("index-bad-entry", Family.INDEXES)
    INDEX_OUT_OF_ORDER = ("index-out-of-order", Family.INDEXES)
    INDEX_MISSING = ("index-missing", Family.INDEXES)
    SNAPSHOT_DAMAGE = ("snapshot-damage", Family.SNAPSHOTS)
    ROOT_CHECKPOINT = ("root-checkpoint", Family.CHECKPOINTS)
    LEADER_EPOCH_CHECKPOINT = ("leader-epoch-checkpoint", Family.CHECKPOINTS)
    CLEANER_CHECKPOINT = ("cleaner-checkpoint", Family.CHECKPOINTS)
    BOOTSTRAP_CHECKPOINT = ("bootstrap-checkpoint", Family.CHECKPOINTS)
    META_NODE_ID = ("meta-node-id", Family.PROPERTIES)
    META_KEYS = ("meta-keys", Family.PROPERTIES)
    META_IDS = ("meta-ids", Family.PROPERTIES)
    META_NON_UTF8 = ("meta-non-utf8", Family.PROPERTIES)
    PARTITION_METADATA = ("partition-metadata", Family.PROPERTIES)
    NAME_NON_UTF8 = ("name-non-utf8", Family.NAMES)
    NAME_ODD_SUFFIX = ("name-odd-suffix", Family.NAMES)
    NAME_BAD_OFFSET = ("name-bad-offset", Family.NAMES)
    NAME_SPECIAL_DIR = ("name-special-dir", Family.NAMES)
    TYPE_FIFO = ("type-fifo", Family.FILE_TYPES)
    TYPE_DIRECTORY = ("type-directory", Family.FILE_TYPES)
    TYPE_SOCKET = ("type-socket", Family.FILE_TYPES)
    LINK_DANGLING = ("link-dangling", Family.LINKS)
    LINK_FILE_OUT = ("link-file-out", Family.LINKS)
    LINK_PARTITION_OUT = ("link-partition-out", Family.LINKS)
    PERM_FILE_000 = ("perm-file-000", Family.PERMISSIONS)
    PERM_DIR_000 = ("perm-dir-000", Family.PERMISSIONS)
    SCHEMA_TEXT = ("schema-text", Family.SCHEMAS)
    SCHEMA_REFERENCES = ("schema-references", Family.SCHEMAS)
    SCHEMA_RECORD_JSON = ("schema-record-json", Family.SCHEMAS)
    PAYLOAD_MAGIC = ("payload-magic", Family.SCHEMAS)
    PAYLOAD_UNKNOWN_ID = ("payload-unknown-id", Family.SCHEMAS)
    PAYLOAD_TRUNCATED = ("payload-truncated", Family.SCHEMAS)
    PAYLOAD_PROTOBUF_INDEXES = ("payload-protobuf-indexes", Family.SCHEMAS)
    SCHEMAS_FILE = ("schemas-file", Family.SCHEMAS)

    def __init__(self, label: str, family: Family):
        self.label = label
        self.family = family

    @classmethod
    def by_label(cls, label: str) -> Kind:
        return next(k for k in cls if k.label == label)


@dataclass(frozen=True)
class Mutation:
    kind: Kind
    target: str  # the path changed, relative to the log dir
    detail: str  # what was done to it
    drop_caps: bool = False  # run the command without the file-permission override (root)

    def __str__(self) -> str:
        return f"{self.kind.label} {self.target}: {self.detail}"


_REGISTRY: dict[Kind, Callable[[random.Random, Workspace], Mutation | None]] = {}


def mutation(kind: Kind):
    def register(fn):
        _REGISTRY[kind] = fn
        return fn

    return register


def kinds() -> list[Kind]:
    return [k for k in Kind if k in _REGISTRY]


def apply(kind: Kind, rng: random.Random, ws: Workspace) -> Mutation:
    """Carry out `kind` on the workspace's log dir; a kind with nothing to damage in this copy
    (no .txnindex, no snapshot) falls back to a bit flip in a segment, said in the detail."""
    done = _REGISTRY[kind](rng, ws)
    if done is None:
        done = _REGISTRY[Kind.LOG_BIT_FLIP](rng, ws)
        if done is None:
            return Mutation(Kind.NONE, ".", f"{kind.label}: nothing to damage in this copy")
        return Mutation(done.kind, done.target, f"{done.detail} (no target for {kind.label})")
    return done


# -- helpers ---------------------------------------------------------------------------------


def _files(ws: Workspace, suffixes: tuple[str, ...], nonempty: bool = False) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(ws.logdir):
        dirnames.sort()
        for n in sorted(filenames):
            p = Path(dirpath) / n
            if n.endswith(suffixes) and p.is_file() and not p.is_symlink():
                if not nonempty or p.stat().st_size > 0:
                    out.append(p)
    return out


def _partitions(ws: Workspace) -> list[Path]:
    return sorted(
        p
        for p in ws.logdir.iterdir()
        if p.is_dir() and not p.is_symlink() and "-" in p.name and not p.name.startswith(".")
    )


def _rel(ws: Workspace, p: Path) -> str:
    return os.fsdecode(os.path.relpath(p, ws.logdir))


def _pick(rng: random.Random, items: list):
    return rng.choice(items) if items else None


def _rewrite(p: Path, data: bytes) -> None:
    """Change the bytes but keep the mtime: retention and the cleaner read it."""
    st = p.stat()
    p.write_bytes(data)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


def _batches(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of each batch or message by its length field, up to the first that does
    not fit."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if length < 0 or pos + 12 + length > len(data):
            break
        out.append((pos, 12 + length))
        pos += 12 + length
    return out


def _fix_crc(data: bytearray, pos: int, size: int) -> None:
    from kafkalog_cli.formats.crc import crc32c

    if size > 61 and data[pos + 16] == 2:
        struct.pack_into(">I", data, pos + 17, crc32c(memoryview(data)[pos + 21 : pos + size]))


_EXTREMES_32 = (0, -1, 1, 11, 2**31 - 1, -(2**31), 0x7FFFFF00)
_EXTREMES_64 = (0, -1, 2**63 - 1, -(2**63), 2**31, 2**32)
TEXT = b"This is not a Kafka log.\nJust some text, line after line.\n"


# -- records ---------------------------------------------------------------------------------


@mutation(Kind.LOG_BIT_FLIP)
def _log_bit_flip(rng, ws):
    f = _pick(rng, _files(ws, (".log",), nonempty=True))
    if f is None:
        return None
    data = bytearray(f.read_bytes())
    flips = sorted(rng.randrange(len(data) * 8) for _ in range(rng.choice((1, 1, 2, 8))))
    for bit in flips:
        data[bit // 8] ^= 1 << (bit % 8)
    _rewrite(f, bytes(data))
    return Mutation(Kind.LOG_BIT_FLIP, _rel(ws, f), "bits " + ",".join(map(str, flips)))


@mutation(Kind.LOG_TRUNCATE)
def _log_truncate(rng, ws):
    f = _pick(rng, _files(ws, (".log",), nonempty=True))
    if f is None:
        return None
    size = f.stat().st_size
    at = rng.choice((0, rng.randrange(size), max(0, size - rng.randrange(1, 70))))
    st = f.stat()
    os.truncate(f, at)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    return Mutation(Kind.LOG_TRUNCATE, _rel(ws, f), f"cut at byte {at} of {size}")


@mutation(Kind.LOG_ZERO_RANGE)
def _log_zero_range(rng, ws):
    f = _pick(rng, _files(ws, (".log",), nonempty=True))
    if f is None:
        return None
    data = bytearray(f.read_bytes())
    start = rng.randrange(len(data))
    n = min(len(data) - start, rng.choice((4, 12, 61, 512, len(data))))
    data[start : start + n] = bytes(n)
    _rewrite(f, bytes(data))
    return Mutation(Kind.LOG_ZERO_RANGE, _rel(ws, f), f"zeroed bytes {start}..{start + n}")


@mutation(Kind.LOG_TEXT)
def _log_text(rng, ws):
    f = _pick(rng, _files(ws, (".log",)))
    if f is None:
        return None
    data = bytearray(f.read_bytes())
    if rng.random() < 0.5 or not data:
        _rewrite(f, TEXT[:43] if rng.random() < 0.5 else TEXT * 4)
        return Mutation(Kind.LOG_TEXT, _rel(ws, f), "whole file replaced by text")
    at = rng.randrange(len(data))
    data[at : at + len(TEXT)] = TEXT
    _rewrite(f, bytes(data))
    return Mutation(Kind.LOG_TEXT, _rel(ws, f), f"text written at byte {at}")


@mutation(Kind.LOG_SPLICE)
def _log_splice(rng, ws):
    logs = _files(ws, (".log",), nonempty=True)
    if not logs:
        return None
    f, g = rng.choice(logs), rng.choice(logs)
    data, other = f.read_bytes(), g.read_bytes()
    a = rng.randrange(len(data) + 1)
    b0 = rng.randrange(len(other))
    piece = other[b0 : b0 + rng.choice((12, 61, 300, len(other)))]
    _rewrite(f, data[:a] + piece + data[a:])
    return Mutation(
        Kind.LOG_SPLICE, _rel(ws, f), f"{len(piece)} bytes of {_rel(ws, g)}@{b0} inserted at {a}"
    )


@mutation(Kind.LOG_LENGTH_EXTREME)
def _log_length_extreme(rng, ws):
    cands = [(f, b) for f in _files(ws, (".log",), nonempty=True) for b in _batches(f.read_bytes())]
    if not cands:
        return None
    f, (pos, _) = rng.choice(cands)
    data = bytearray(f.read_bytes())
    value = rng.choice(_EXTREMES_32)
    struct.pack_into(">i", data, pos + 8, value)
    _rewrite(f, bytes(data))
    return Mutation(Kind.LOG_LENGTH_EXTREME, _rel(ws, f), f"batch@{pos} length={value}")


_BATCH_FIELDS = {
    "baseOffset": (0, ">q"),
    "partitionLeaderEpoch": (12, ">i"),
    "magic": (16, ">b"),
    "attributes": (21, ">h"),
    "lastOffsetDelta": (23, ">i"),
    "baseTimestamp": (27, ">q"),
    "maxTimestamp": (35, ">q"),
    "producerId": (43, ">q"),
    "producerEpoch": (51, ">h"),
    "baseSequence": (53, ">i"),
    "recordsCount": (57, ">i"),
}


@mutation(Kind.LOG_BATCH_FIELD)
def _log_batch_field(rng, ws):
    cands = [
        (f, b)
        for f in _files(ws, (".log",), nonempty=True)
        for b in _batches(f.read_bytes())
        if b[1] > 61
    ]
    if not cands:
        return None
    f, (pos, size) = rng.choice(cands)
    data = bytearray(f.read_bytes())
    name = rng.choice(sorted(_BATCH_FIELDS))
    off, fmt = _BATCH_FIELDS[name]
    width = struct.calcsize(fmt)
    extremes = {
        1: (0, 1, 3, -1, 127),
        2: (-1, 0x7FFF, 5, 7, 0x27),
        4: _EXTREMES_32,
        8: _EXTREMES_64,
    }[width]
    value = rng.choice(extremes)
    if name == "attributes":
        value = rng.choice((5, 6, 7, 0x10, 0x20, 0x30, -1))  # codecs 5-7 do not exist
    struct.pack_into(fmt, data, pos + off, value)
    fixed = rng.random() < 0.6
    if fixed:
        _fix_crc(data, pos, size)
    _rewrite(f, bytes(data))
    return Mutation(
        Kind.LOG_BATCH_FIELD,
        _rel(ws, f),
        f"batch@{pos} {name}={value}" + (" (CRC fixed)" if fixed else ""),
    )


@mutation(Kind.LOG_TAIL_GARBAGE)
def _log_tail_garbage(rng, ws):
    f = _pick(rng, _files(ws, (".log",)))
    if f is None:
        return None
    junk = rng.choice(
        (bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))), bytes(4096), TEXT)
    )
    _rewrite(f, f.read_bytes() + junk)
    return Mutation(Kind.LOG_TAIL_GARBAGE, _rel(ws, f), f"{len(junk)} bytes appended")


@mutation(Kind.LOG_PREALLOCATED)
def _log_preallocated(rng, ws):
    """A segment as log.preallocate (or an unclean shutdown of it) leaves it: its batches, then
    zeros to the file's length, sparse. Tens of MiB are enough to make a byte-by-byte walk or a
    whole copy of them show as a hang; a real one is segment.bytes (a GiB)."""
    f = _pick(rng, _files(ws, (".log",)))
    if f is None:
        return None
    length = f.stat().st_size + rng.choice((64 << 20, 160 << 20))
    st = f.stat()
    os.truncate(f, length)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    return Mutation(Kind.LOG_PREALLOCATED, _rel(ws, f), f"zeros to {length} bytes (sparse)")


# -- indexes ---------------------------------------------------------------------------------


@mutation(Kind.INDEX_ODD_SIZE)
def _index_odd_size(rng, ws):
    f = _pick(rng, _files(ws, (".index", ".timeindex", ".txnindex")))
    if f is None:
        return None
    size = f.stat().st_size
    new = max(0, rng.choice((size + 1, size - 1, size + 5, 7, 3)))
    st = f.stat()
    os.truncate(f, new)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    return Mutation(Kind.INDEX_ODD_SIZE, _rel(ws, f), f"size {size} -> {new}")


@mutation(Kind.INDEX_BAD_ENTRY)
def _index_bad_entry(rng, ws):
    f = _pick(rng, _files(ws, (".index", ".timeindex", ".txnindex")))
    if f is None:
        return None
    data = bytearray(f.read_bytes())
    width = {".index": 8, ".timeindex": 12, ".txnindex": 34}[f.suffix]
    n = max(1, len(data) // width)
    i = rng.randrange(n) if len(data) >= width else 0
    if len(data) < (i + 1) * width:
        data.extend(bytes((i + 1) * width - len(data)))
    pos = i * width
    if f.suffix == ".index":
        entry = (
            rng.choice((0x7FFFFFFF, -1, 0, 2**31 - 2)),
            rng.choice((-1, 2**31 - 1, -(2**31), 10**9)),
        )
        struct.pack_into(">ii", data, pos, *entry)
    elif f.suffix == ".timeindex":
        entry = (rng.choice((-1, 2**63 - 1, 0, -(2**63))), rng.choice((0x7FFFFFFF, -1, -(2**31))))
        struct.pack_into(">qi", data, pos, *entry)
    else:
        entry = (
            rng.choice((-1, 2**63 - 1)),
            rng.choice((-1, 2**63 - 1, 0)),
            rng.choice((-1, 2**63 - 1)),
        )
        struct.pack_into(">hqqq", data, pos, 0, *entry)
    _rewrite(f, bytes(data))
    return Mutation(Kind.INDEX_BAD_ENTRY, _rel(ws, f), f"entry {i} = {entry}")


@mutation(Kind.INDEX_OUT_OF_ORDER)
def _index_out_of_order(rng, ws):
    cands = [
        f
        for f in _files(ws, (".index", ".timeindex"))
        if f.stat().st_size >= 2 * 12 and any(f.read_bytes()[:24])
    ]
    f = _pick(rng, cands)
    if f is None:
        return None
    width = 8 if f.suffix == ".index" else 12
    data = bytearray(f.read_bytes())
    used = [k for k in range(len(data) // width) if any(data[k * width : (k + 1) * width])] or [
        0,
        1,
    ]
    i, j = (used[0], used[-1]) if len(used) > 1 else (0, 1)
    a, b = data[i * width : (i + 1) * width], data[j * width : (j + 1) * width]
    data[i * width : (i + 1) * width], data[j * width : (j + 1) * width] = b, a
    _rewrite(f, bytes(data))
    return Mutation(Kind.INDEX_OUT_OF_ORDER, _rel(ws, f), f"entries {i} and {j} swapped")


@mutation(Kind.INDEX_MISSING)
def _index_missing(rng, ws):
    f = _pick(rng, _files(ws, (".index", ".timeindex", ".txnindex")))
    if f is None:
        return None
    f.unlink()
    return Mutation(Kind.INDEX_MISSING, _rel(ws, f), "deleted")


# -- snapshots -------------------------------------------------------------------------------


@mutation(Kind.SNAPSHOT_DAMAGE)
def _snapshot_damage(rng, ws):
    snaps = _files(ws, (".snapshot",))
    f = _pick(rng, snaps)
    if f is None:
        part = _pick(rng, _partitions(ws))
        if part is None:
            return None
        f = part / "00000000000000000001.snapshot"
        f.write_bytes(TEXT[:10])
        return Mutation(Kind.SNAPSHOT_DAMAGE, _rel(ws, f), "a 10-byte text snapshot planted")
    data = bytearray(f.read_bytes())
    how = rng.choice(("truncate", "flip", "version", "count"))
    if how == "truncate" or len(data) < 10:
        data = data[: rng.randrange(len(data) + 1)] if data else bytearray(b"\x00\x01")
    elif how == "flip":
        k = rng.randrange(len(data))
        data[k] ^= 0x40
    elif how == "version":
        struct.pack_into(">h", data, 0, rng.choice((0, 2, -1, 99)))
    else:
        data[6:10] = struct.pack(">i", rng.choice((-1, 2**31 - 1, 1000)))
    _rewrite(f, bytes(data))
    return Mutation(Kind.SNAPSHOT_DAMAGE, _rel(ws, f), how)


# -- checkpoints -----------------------------------------------------------------------------

_CHECKPOINT_TEXTS = (
    "0\n1\n{tp} -1\n",
    "0\n1\n{tp} 9223372036854775807\n",
    "0\n3\n{tp} 5\n",
    "1\n1\n{tp} 5\n",
    "0\n1\n{tp} abc\n",
    "0\nX\n",
    "",
    "0\n1\n{tp}\n",
    "0\n1\n{tp} 5 6\n",
    "0\n-1\n",
    "0\n1\nno-such-topic 0 5\n",
    "0\n2\n{tp} 5\n{tp} 6\n",
    "0\n1\n{tp} 5",
    "\xff\xfe\n",
)


def _tp_line(ws: Workspace, rng) -> str:
    part = _pick(rng, _partitions(ws))
    if part is None:
        return "t 0"
    topic, _, n = part.name.rpartition("-")
    return f"{topic} {n}"


def _write_checkpoint(rng, ws, kind, f: Path) -> Mutation:
    if f.exists() and rng.random() < 0.3:
        data = bytearray(f.read_bytes())
        if data:
            k = rng.randrange(len(data))
            data[k] = rng.choice(b"-9 \n\x00x")
            _rewrite(f, bytes(data))
            return Mutation(kind, _rel(ws, f), f"byte {k} replaced")
    text = rng.choice(_CHECKPOINT_TEXTS).format(tp=_tp_line(ws, rng))
    if f.exists():
        _rewrite(f, text.encode("utf-8", "surrogateescape"))
    else:
        f.write_bytes(text.encode("utf-8", "surrogateescape"))
    return Mutation(kind, _rel(ws, f), f"text {text!r}")


@mutation(Kind.ROOT_CHECKPOINT)
def _root_checkpoint(rng, ws):
    name = rng.choice(
        (
            "recovery-point-offset-checkpoint",
            "replication-offset-checkpoint",
            "log-start-offset-checkpoint",
        )
    )
    return _write_checkpoint(rng, ws, Kind.ROOT_CHECKPOINT, ws.logdir / name)


@mutation(Kind.CLEANER_CHECKPOINT)
def _cleaner_checkpoint(rng, ws):
    return _write_checkpoint(
        rng, ws, Kind.CLEANER_CHECKPOINT, ws.logdir / "cleaner-offset-checkpoint"
    )


@mutation(Kind.LEADER_EPOCH_CHECKPOINT)
def _leader_epoch_checkpoint(rng, ws):
    part = _pick(rng, _partitions(ws))
    if part is None:
        return None
    f = part / "leader-epoch-checkpoint"
    text = rng.choice(
        (
            "0\n1\n-1 0\n",
            "0\n1\n5 9223372036854775807\n",
            "0\n2\n3 100\n2 50\n",
            "0\n1\n0\n",
            "0\n5\n0 0\n",
            "9\n0\n",
            "0\n1\n2147483648 0\n",
            "zz\n",
        )
    )
    if f.exists():
        _rewrite(f, text.encode())
    else:
        f.write_text(text)
    return Mutation(Kind.LEADER_EPOCH_CHECKPOINT, _rel(ws, f), f"text {text!r}")


@mutation(Kind.BOOTSTRAP_CHECKPOINT)
def _bootstrap_checkpoint(rng, ws):
    f = ws.logdir / "bootstrap.checkpoint"
    if not f.exists():
        cands = _files(ws, (".checkpoint",))
        f = _pick(rng, [c for c in cands if c.parent != ws.logdir] or cands)
        if f is None:
            return None
    data = bytearray(f.read_bytes())
    how = rng.choice(("truncate", "flip", "text", "empty"))
    if how == "truncate" and data:
        data = data[: rng.randrange(len(data))]
    elif how == "flip" and data:
        data[rng.randrange(len(data))] ^= 0x10
    elif how == "text":
        data = bytearray(TEXT)
    else:
        data = bytearray()
    _rewrite(f, bytes(data))
    return Mutation(Kind.BOOTSTRAP_CHECKPOINT, _rel(ws, f), how)


# -- properties ------------------------------------------------------------------------------


def _meta_lines(ws: Workspace) -> list[str]:
    f = ws.logdir / "meta.properties"
    return f.read_text("utf-8", "surrogateescape").splitlines() if f.exists() else []


def _write_meta(ws: Workspace, lines: list[str], raw: bytes | None = None) -> None:
    f = ws.logdir / "meta.properties"
    data = raw if raw is not None else ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    if f.exists():
        _rewrite(f, data)
    else:
        f.write_bytes(data)


def _set_key(lines: list[str], key: str, value: str) -> list[str]:
    out = [ln for ln in lines if not ln.startswith(key + "=")]
    return out + [f"{key}={value}"]


@mutation(Kind.META_NODE_ID)
def _meta_node_id(rng, ws):
    value = rng.choice(
        ("2147483648", "-1", "-2", "abc", "", "99999999999999999999", " 1", "1.0", "0x10")
    )
    key = (
        "node.id"
        if any(ln.startswith("node.id") for ln in _meta_lines(ws)) or rng.random() < 0.5
        else "broker.id"
    )
    _write_meta(ws, _set_key(_meta_lines(ws), key, value))
    return Mutation(Kind.META_NODE_ID, "meta.properties", f"{key}={value!r}")


@mutation(Kind.META_KEYS)
def _meta_keys(rng, ws):
    lines = _meta_lines(ws)
    how = rng.choice(("drop", "dup", "version", "empty", "garbage"))
    if how == "drop" and lines:
        k = rng.randrange(len(lines))
        detail = f"line {lines[k]!r} removed"
        del lines[k]
    elif how == "dup" and lines:
        k = rng.randrange(len(lines))
        key = lines[k].split("=")[0]
        lines.append(f"{key}=other-value")
        detail = f"{key} given twice"
    elif how == "version":
        v = rng.choice(("2", "-1", "x", "0"))
        lines = _set_key(lines, "version", v)
        detail = f"version={v}"
    elif how == "empty":
        lines = []
        detail = "emptied"
    else:
        lines.append("=\\u12")
        detail = "a line '=\\u12' appended"
    _write_meta(ws, lines)
    return Mutation(Kind.META_KEYS, "meta.properties", detail)


@mutation(Kind.META_IDS)
def _meta_ids(rng, ws):
    key = rng.choice(("cluster.id", "directory.id"))
    value = rng.choice(
        (
            "",
            "not-base64!",
            "AAAAAAAAAAAAAAAAAAAAAA",
            "x" * 300,
            "AAAAAAAAAAAAAAAAAAAAAQ",
            "////////////////////// ",
        )
    )
    _write_meta(ws, _set_key(_meta_lines(ws), key, value))
    return Mutation(Kind.META_IDS, "meta.properties", f"{key}={value!r}")


@mutation(Kind.META_NON_UTF8)
def _meta_non_utf8(rng, ws):
    f = ws.logdir / "meta.properties"
    raw = f.read_bytes() if f.exists() else b"version=1\n"
    raw = raw.replace(b"=", b"=\xff\xfe", 1) if rng.random() < 0.5 else b"\xc3\x28" + raw
    _write_meta(ws, [], raw)
    return Mutation(Kind.META_NON_UTF8, "meta.properties", "invalid UTF-8 bytes")


@mutation(Kind.PARTITION_METADATA)
def _partition_metadata(rng, ws):
    part = _pick(rng, _partitions(ws))
    if part is None:
        return None
    f = part / "partition.metadata"
    text = rng.choice(
        (
            "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n",
            "version: 1\ntopic_id: x\n",
            "topic_id: \n",
            "",
            "version: 0\n",
            "\xff\xfe\n",
            "version: 0\ntopic_id: " + "A" * 40 + "\n",
        )
    )
    data = text.encode("utf-8", "surrogateescape") if text != "\xff\xfe\n" else b"\xff\xfe\n"
    if f.exists():
        _rewrite(f, data)
    else:
        f.write_bytes(data)
    return Mutation(Kind.PARTITION_METADATA, _rel(ws, f), f"text {text!r}")


# -- names -----------------------------------------------------------------------------------


@mutation(Kind.NAME_NON_UTF8)
def _name_non_utf8(rng, ws):
    part = _pick(rng, _partitions(ws))
    if part is None:
        return None
    if rng.random() < 0.5:
        new = Path(os.fsdecode(os.fsencode(part.parent) + b"/t\xff\xfeopic-0"))
        os.rename(part, new)
        return Mutation(
            Kind.NAME_NON_UTF8, _rel(ws, part), "partition dir renamed to b't\\xff\\xfeopic-0'"
        )
    f = _pick(rng, sorted(part.iterdir()))
    if f is None:
        return None
    new = Path(os.fsdecode(os.fsencode(f) + b"\xff"))
    os.rename(f, new)
    return Mutation(Kind.NAME_NON_UTF8, _rel(ws, f), "a \\xff byte appended to the name")


@mutation(Kind.NAME_ODD_SUFFIX)
def _name_odd_suffix(rng, ws):
    f = _pick(rng, _files(ws, (".log", ".index", ".timeindex", ".snapshot")))
    if f is None:
        return None
    suffix = rng.choice(
        (".cleaned", ".swap", ".deleted", ".bak", ".kafkalog-tmp", "~", ".LOG", ".log.log")
    )
    new = f.with_name(f.name + suffix)
    if rng.random() < 0.5:
        new.write_bytes(f.read_bytes())
        how = "copied to"
    else:
        os.rename(f, new)
        how = "renamed to"
    return Mutation(Kind.NAME_ODD_SUFFIX, _rel(ws, f), f"{how} {new.name}")


@mutation(Kind.NAME_BAD_OFFSET)
def _name_bad_offset(rng, ws):
    f = _pick(rng, _files(ws, (".log", ".index", ".snapshot")))
    if f is None:
        return None
    stem = rng.choice(
        (
            "99999999999999999999",
            "9223372036854775808",
            "0000000000000000000",
            "000000000000000000000",
            "-0000000000000000001",
            "0000000000000000000a",
            "18446744073709551615",
            "09223372036854775807",
        )
    )
    new = f.with_name(stem + f.suffix)
    if new.exists():
        return None
    os.rename(f, new)
    return Mutation(Kind.NAME_BAD_OFFSET, _rel(ws, f), f"renamed to {new.name}")


@mutation(Kind.NAME_SPECIAL_DIR)
def _name_special_dir(rng, ws):
    import shutil

    part = _pick(rng, _partitions(ws))
    if part is None:
        return None
    suffix = rng.choice(
        (
            ".0123456789abcdef0123456789abcdef-delete",
            ".0123456789abcdef0123456789abcdef-future",
            "-stray",
            ".zz-delete",
            "-future",
        )
    )
    new = part.with_name(part.name + suffix)
    if rng.random() < 0.5:
        shutil.copytree(part, new, symlinks=True)
        how = "copied to"
    else:
        os.rename(part, new)
        how = "renamed to"
    return Mutation(Kind.NAME_SPECIAL_DIR, _rel(ws, part), f"{how} {new.name}")


# -- file types ------------------------------------------------------------------------------

_ANY_FILE = (
    ".log",
    ".index",
    ".timeindex",
    ".txnindex",
    ".snapshot",
    "checkpoint",
    "meta.properties",
    "partition.metadata",
)


def _replace_target(rng, ws) -> Path | None:
    f = _pick(rng, _files(ws, _ANY_FILE))
    if f is not None:
        f.unlink()
    return f


@mutation(Kind.TYPE_FIFO)
def _type_fifo(rng, ws):
    f = _replace_target(rng, ws)
    if f is None:
        return None
    os.mkfifo(f)
    return Mutation(Kind.TYPE_FIFO, _rel(ws, f), "replaced by a FIFO")


@mutation(Kind.TYPE_DIRECTORY)
def _type_directory(rng, ws):
    f = _replace_target(rng, ws)
    if f is None:
        return None
    f.mkdir()
    return Mutation(Kind.TYPE_DIRECTORY, _rel(ws, f), "replaced by a directory")


@mutation(Kind.TYPE_SOCKET)
def _type_socket(rng, ws):
    f = _replace_target(rng, ws)
    if f is None:
        return None
    # a unix socket path is limited to ~107 bytes: bind from inside the directory
    cwd = os.getcwd()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.chdir(f.parent)
        s.bind(f.name)
    finally:
        os.chdir(cwd)
        s.close()
    return Mutation(Kind.TYPE_SOCKET, _rel(ws, f), "replaced by a unix socket")


# -- links -----------------------------------------------------------------------------------


@mutation(Kind.LINK_DANGLING)
def _link_dangling(rng, ws):
    f = _replace_target(rng, ws)
    if f is None:
        return None
    os.symlink(ws.outside / "parked" / "no-such-file", f)
    return Mutation(Kind.LINK_DANGLING, _rel(ws, f), "replaced by a dangling symlink")


@mutation(Kind.LINK_FILE_OUT)
def _link_file_out(rng, ws):
    f = _pick(rng, _files(ws, _ANY_FILE))
    if f is None:
        return None
    target = ws.outside / "parked" / f"{f.parent.name}__{f.name}"
    os.rename(f, target)
    os.symlink(target, f)
    return Mutation(
        Kind.LINK_FILE_OUT, _rel(ws, f), "moved out of the log dir, a symlink left in its place"
    )


@mutation(Kind.LINK_PARTITION_OUT)
def _link_partition_out(rng, ws):
    part = _pick(rng, _partitions(ws))
    if part is None:
        return None
    target = ws.outside / "parked" / part.name
    os.rename(part, target)
    os.symlink(target, part)
    return Mutation(
        Kind.LINK_PARTITION_OUT,
        _rel(ws, part),
        "partition dir moved out, a symlink left in its place",
    )


# -- permissions -----------------------------------------------------------------------------


@mutation(Kind.PERM_FILE_000)
def _perm_file_000(rng, ws):
    f = _pick(rng, _files(ws, _ANY_FILE))
    if f is None:
        return None
    os.chmod(f, 0)
    return Mutation(Kind.PERM_FILE_000, _rel(ws, f), "mode 000", drop_caps=True)


@mutation(Kind.PERM_DIR_000)
def _perm_dir_000(rng, ws):
    part = _pick(rng, _partitions(ws))
    if part is None:
        return None
    os.chmod(part, 0)
    return Mutation(Kind.PERM_DIR_000, _rel(ws, part), "mode 000", drop_caps=True)


@mutation(Kind.NONE)
def _none(rng, ws):
    return Mutation(Kind.NONE, ".", "the copy as it is")


# the schema family registers itself here, so every importer of this module sees all kinds
from . import schema_mutations  # noqa: E402, F401
