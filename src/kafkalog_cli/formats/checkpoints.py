"""Checkpoint and metadata text files of a log dir.

- offset checkpoints (CheckpointFile + OffsetCheckpointFile): recovery-point-offset-checkpoint,
  replication-offset-checkpoint, log-start-offset-checkpoint, cleaner-offset-checkpoint;
- leader-epoch-checkpoint (LeaderEpochCheckpointFile) and LeaderEpochFileCache's edits;
- partition.metadata (PartitionMetadataFile);
- meta.properties (java.util.Properties load / store);
- .kafka_cleanshutdown (CleanShutdownFileHandler).

Reading mirrors Kafka 3.3.1 (the broker behind the corpus), message texts included, with the
path as the caller gives it where Kafka prints the absolute path. Text is split into lines the way
Java's BufferedReader.readLine does (\\n, \\r or \\r\\n) and fields the way Pattern.split("\\\\s+")
does (a leading separator yields an empty first field, which makes the line malformed).
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from kafkalog_cli.errors import CheckpointError, CorruptRecordError
from kafkalog_cli.formats.scala_order import CheckpointKind, broker_order

T = TypeVar("T")

CHECKPOINT_VERSION = 0
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|\Z)")
_JAVA_WS = re.compile(r"[ \t\n\x0b\f\r]+")  # Java's \s
_COLON_WS = re.compile(r":[ \t\n\x0b\f\r]+")  # PartitionMetadataFile's ":\s+"
_JAVA_INT = re.compile(r"[+-]?[0-9]+")  # Integer.parseInt / Long.parseLong (ASCII digits)


# ---------------------------------------------------------------------------------------------
# Java-compatible text helpers


def _decode_utf8(buf: bytes | bytearray | memoryview, loc: str, path: str | None) -> str:
    """Files.newBufferedReader decodes strict UTF-8 (MalformedInputException on a bad byte)."""
    try:
        return bytes(buf).decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckpointError(
            f"Malformed input in checkpoint file [{loc}]: not UTF-8 (MalformedInputException: "
            f"Input length = {e.end - e.start})",
            path=path,
            position=e.start,
        ) from None


def _java_lines(text: str) -> Iterator[tuple[str, int]]:
    """(line, char offset) pairs, as BufferedReader.readLine returns them."""
    n = len(text)
    for m in _LINE.finditer(text):
        if m.start() == n:
            return
        yield m.group(1), m.start()


def _java_split(pattern: re.Pattern[str], line: str) -> list[str]:
    """String.split(regex): trailing empty strings removed, a leading one kept."""
    parts = pattern.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_number(s: str, bounds: tuple[int, int]) -> int | None:
    """Integer.parseInt / Long.parseLong: optional sign, digits, in range; None where Java throws."""
    if not _JAVA_INT.fullmatch(s):
        return None
    v = int(s)
    return v if bounds[0] <= v <= bounds[1] else None


def _byte_pos(text: str, char_pos: int) -> int:
    return len(text[:char_pos].encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# CheckpointFile framing


def _read_checkpoint(
    buf: bytes | bytearray | memoryview,
    path: str | None,
    parse_entry: Callable[[list[str]], T | None],
    n_fields: int,
) -> list[T]:
    """CheckpointFile.CheckpointReadBuffer.read.

    Kafka's quirks kept: an empty file, or a file with only a version line, has no entries; the
    count may be larger or smaller than the entries ("but found only" either way)."""
    loc = path if path is not None else "<checkpoint>"
    text = _decode_utf8(buf, loc, path)
    lines = _java_lines(text)

    def malformed(line: str, at: int, why: str = "") -> CheckpointError:
        return CheckpointError(
            f"Malformed line in checkpoint file [{loc}]: {line}{why}",
            path=path,
            position=_byte_pos(text, at),
        )

    def next_int() -> tuple[int | None, int]:
        """`readLine` then `toInt`: the next line's int (None at the end of the file), where it starts."""
        line, at = next(lines, (None, len(text)))
        if line is None:
            return None, at
        value = _java_number(line, _INT32)
        if value is None:
            raise malformed(line, at)
        return value, at

    version, _ = next_int()
    if version is None:
        return []
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION} "
            f"in checkpoint file at: {loc}",
            path=path,
            position=0,
        )
    expected, count_at = next_int()
    if expected is None:
        return []
    if expected < 0:  # `new ArrayList<>(expectedSize)` throws before any entry is read
        raise CheckpointError(
            f"Illegal Capacity: {expected} (entry count in checkpoint file [{loc}])",
            path=path,
            position=_byte_pos(text, count_at),
        )
    entries: list[T] = []
    for line, at in lines:
        fields = _java_split(_JAVA_WS, line)
        if len(fields) != n_fields:
            raise malformed(line, at)
        entry = parse_entry(fields)
        if entry is None:
            # Kafka lets the formatter's NumberFormatException escape; we say which line it was
            raise malformed(line, at, " (not a number)")
        entries.append(entry)
    if len(entries) != expected:
        raise CheckpointError(
            f"Expected [{expected}] entries in checkpoint file [{loc}], but found "
            f"only [{len(entries)}]",
            path=path,
            position=_byte_pos(text, count_at),
        )
    return entries


def _write_checkpoint(lines: Iterable[str]) -> bytes:
    body = list(lines)
    return "".join(
        [f"{CHECKPOINT_VERSION}\n{len(body)}\n"] + [f"{line}\n" for line in body]
    ).encode("utf-8")


# ---------------------------------------------------------------------------------------------
# Offset checkpoints: `topic partition offset`


def _offset_entry(fields: list[str]) -> tuple[str, int, int] | None:
    partition = _java_number(fields[1], _INT32)
    offset = _java_number(fields[2], _INT64)
    if partition is None or offset is None:
        return None
    return fields[0], partition, offset


def parse_offset_checkpoint_entries(
    buf: bytes | bytearray | memoryview, *, path: str | None = None
) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) in file order, duplicates kept."""
    return _read_checkpoint(buf, path, _offset_entry, 3)


def parse_offset_checkpoint(
    buf: bytes | bytearray | memoryview, *, path: str | None = None
) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset}; a repeated partition keeps its last value (Scala `toMap`)."""
    return {(t, p): o for t, p, o in parse_offset_checkpoint_entries(buf, path=path)}


def encode_offset_checkpoint(
    offsets: Mapping[tuple[str, int], int],
    order: Iterable[tuple[str, int]] | None = None,
    kind: CheckpointKind | str = CheckpointKind.RECOVERY_POINT,
) -> bytes:
    """The file, entries in the order the broker writes a checkpoint of `kind` (a CheckpointKind or
    the file's name) in: a function of the keys (formats.scala_order), so that a file the broker
    wrote and we rewrite with the same keys stays byte-identical. `order` is the file's current
    order: where the cleaner checkpoint's rewrite starts from, and how keys with equal hashCodes
    are ordered, which the broker decides by insertion order."""
    for topic, _ in offsets:
        if not topic or _JAVA_WS.search(topic):
            raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint file")
    for (topic, partition), offset in offsets.items():
        if (
            not _INT64[0] <= offset <= _INT64[1]
        ):  # offsets that overflowed a batch's long arithmetic
            raise CorruptRecordError(
                f"{topic}-{partition}: offset {offset} is not a Kafka long: a batch whose "
                f"offsets overflow Long.MAX_VALUE (the broker's recovery fails on it too)"
            )
    if isinstance(kind, str):
        named = CheckpointKind.of_file(kind)
        if named is None:
            raise ValueError(f"{kind!r} is not a root offset checkpoint file")
        kind = named
    keys = broker_order(kind, offsets, order or ())
    return _write_checkpoint(f"{t} {p} {offsets[(t, p)]}" for t, p in keys)


# ---------------------------------------------------------------------------------------------
# leader-epoch-checkpoint and LeaderEpochFileCache


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """A line of leader-epoch-checkpoint: the first offset a leader wrote in `epoch`."""

    epoch: int
    start_offset: int


def _epoch_entry(fields: list[str]) -> EpochEntry | None:
    epoch = _java_number(fields[0], _INT32)
    offset = _java_number(fields[1], _INT64)
    return None if epoch is None or offset is None else EpochEntry(epoch, offset)


def parse_leader_epoch_checkpoint(
    buf: bytes | bytearray | memoryview, *, path: str | None = None
) -> list[EpochEntry]:
    """The entries as written, in file order. What a broker holds after loading them is
    `load_leader_epoch_cache(entries)`."""
    return _read_checkpoint(buf, path, _epoch_entry, 2)


def encode_leader_epoch_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    """The file, entries in the order given (the cache writes them in epoch order)."""
    return _write_checkpoint(f"{e.epoch} {e.start_offset}" for e in entries)


def assign_epoch(entries: list[EpochEntry], epoch: int, start_offset: int) -> list[EpochEntry]:
    """LeaderEpochFileCache.assign: a new list. An entry is added unless the latest entry already
    has this epoch with a start offset <= this one; entries with epoch >= `epoch` or start offset >=
    `start_offset` are removed from the end first (maybeTruncateNonMonotonicEntries)."""
    if epoch < 0 or start_offset < 0:
        # Kafka's message, with EpochEntry.toString
        raise ValueError(
            "Received invalid partition leader epoch entry "
            f"EpochEntry(epoch={epoch}, startOffset={start_offset})"
        )
    if entries and not (entries[-1].epoch != epoch or start_offset < entries[-1].start_offset):
        return list(entries)
    kept = list(entries)
    while kept and (kept[-1].epoch >= epoch or kept[-1].start_offset >= start_offset):
        kept.pop()
    kept.append(EpochEntry(epoch, start_offset))
    return kept


def load_leader_epoch_cache(entries: Iterable[EpochEntry]) -> list[EpochEntry]:
    """What LeaderEpochFileCache holds after reading a checkpoint: `checkpoint.read().foreach(assign)`.
    Raises ValueError on a negative epoch or offset, as Kafka's assign does."""
    cache: list[EpochEntry] = []
    for e in entries:
        cache = assign_epoch(cache, e.epoch, e.start_offset)
    return cache


def truncate_from_end(entries: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
    """LeaderEpochFileCache.truncateFromEnd: drop entries with startOffset >= end_offset (only if
    end_offset >= 0 and the latest entry starts there or later)."""
    kept = list(entries)
    if end_offset >= 0 and kept and kept[-1].start_offset >= end_offset:
        while kept and kept[-1].start_offset >= end_offset:
            kept.pop()
    return kept


def truncate_from_start(entries: list[EpochEntry], start_offset: int) -> list[EpochEntry]:
    """LeaderEpochFileCache.truncateFromStart: drop leading entries with startOffset <= start_offset,
    then re-add the last dropped one's epoch starting at `start_offset`. Exclusive: an entry that
    starts exactly at `start_offset` stays (rewritten to itself)."""
    i = 0
    while i < len(entries) and entries[i].start_offset <= start_offset:
        i += 1
    if i == 0:
        return list(entries)
    return [EpochEntry(entries[i - 1].epoch, start_offset)] + list(entries[i:])


# ---------------------------------------------------------------------------------------------
# partition.metadata


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    version: int
    topic_id: str  # Kafka's Uuid.toString: 22 characters of unpadded base64url


def _uuid_bytes(s: str) -> bytes:
    """Uuid.fromString; raises ValueError with Kafka's (or Java Base64's) message."""
    if len(s) > 24:
        raise ValueError(
            f"Input string with prefix `{s[:24]}` is too long to be decoded as a base64 UUID"
        )
    bad = re.search(r"[^A-Za-z0-9_\-=]", s)
    if bad:
        raise ValueError(f"Illegal base64 character {ord(bad.group()):x}")
    core = s.rstrip("=")
    if "=" in core or len(core) % 4 == 1:
        raise ValueError("Last unit does not have enough valid bits")
    raw = base64.urlsafe_b64decode(core + "=" * (-len(core) % 4))
    if len(raw) != 16:
        raise ValueError(
            f"Input string `{s}` decoded as {len(raw)} bytes, which is not equal to the "
            f"expected 16 bytes of a base64-encoded UUID"
        )
    return raw


def topic_id_bytes(topic_id: str) -> bytes:
    """The 16 bytes of a topic id as Uuid.toString writes it (ValueError where Uuid.fromString fails)."""
    return _uuid_bytes(topic_id)


class PartitionMetadataError(CheckpointError):
    """A partition.metadata Kafka's reader refuses, with what it throws: an IOException
    (`offline`: PartitionMetadataFile.read takes the log dir offline), or NullPointerException (a
    line missing: WhiteSpacesPattern.split(null)) or IllegalArgumentException (Uuid.fromString),
    which LogManager.loadLogs does not catch: the broker exits."""

    def __init__(self, message: str, path: str | None, position: int | None, kafka_exception: str):
        super().__init__(message, path=path, position=position)
        self.kafka_exception = kafka_exception

    @property
    def offline(self) -> bool:
        return self.kafka_exception == "IOException"


def parse_partition_metadata(
    buf: bytes | bytearray | memoryview, *, path: str | None = None, newer_versions: bool = False
) -> PartitionMetadata:
    """PartitionMetadataReadBuffer.read: `<anything>: 0` then `<anything>: <uuid>`; later lines are
    ignored, the keys are not checked, a zero Uuid is invalid. `newer_versions`: a version above 0
    is read too (3.7+: "To ensure downgrade compatibility"). Raises PartitionMetadataError."""
    loc = path if path is not None else "<partition.metadata>"
    try:
        text = _decode_utf8(buf, loc, path)
    except CheckpointError as e:  # MalformedInputException: an IOException
        raise PartitionMetadataError(
            e.message, path, e.position, kafka_exception="IOException"
        ) from None
    lines = _first_lines(text, 2)

    def malformed(line: str, at: int) -> PartitionMetadataError:
        return PartitionMetadataError(
            f"Malformed line in checkpoint file ({loc}): '{line}'",
            path,
            _byte_pos(text, at),
            kafka_exception="IOException",
        )

    def missing(at: int) -> PartitionMetadataError:
        return PartitionMetadataError(
            f"a line is missing in the partition metadata file ({loc})",
            path,
            _byte_pos(text, at),
            kafka_exception="NullPointerException",
        )

    if not lines:
        raise missing(0)
    line, at = lines[0]
    parts = _java_split(_COLON_WS, line)
    if len(parts) != 2:
        raise malformed(line, at)
    version = _java_number(parts[1], _INT32)
    if version is None:
        raise malformed(line, at)
    if version < 0 or version > 0 and not newer_versions:
        raise PartitionMetadataError(
            f"Unrecognized version of partition metadata file ({loc}): {parts[1]}",
            path,
            0,
            kafka_exception="IOException",
        )
    if len(lines) < 2:
        raise missing(len(text))
    line, at = lines[1]
    parts = _java_split(_COLON_WS, line)
    if len(parts) != 2:
        raise malformed(line, at)
    try:
        raw = _uuid_bytes(parts[1])
    except ValueError as e:
        raise PartitionMetadataError(
            str(e), path, _byte_pos(text, at), kafka_exception="IllegalArgumentException"
        ) from None
    if raw == bytes(16):
        raise PartitionMetadataError(
            f"Invalid topic ID in partition metadata file ({loc})",
            path,
            _byte_pos(text, at),
            kafka_exception="IOException",
        )
    return PartitionMetadata(version, parts[1])


def _first_lines(text: str, n: int) -> list[tuple[str, int]]:
    out = []
    for item in _java_lines(text):
        out.append(item)
        if len(out) == n:
            break
    return out


def encode_partition_metadata(topic_id: str) -> bytes:
    """`version: 0\\ntopic_id: <id>` with NO trailing newline, as PartitionMetadataFileFormatter writes."""
    _uuid_bytes(topic_id)
    return f"version: 0\ntopic_id: {topic_id}".encode()


def topic_id_to_string(raw: bytes) -> str:
    """Uuid.toString of 16 bytes."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


# ---------------------------------------------------------------------------------------------
# meta.properties (java.util.Properties)


_PROP_WS = " \t\f"


def _natural_lines(text: str) -> Iterator[str]:
    for line, _ in _java_lines(text):
        yield line


def _logical_lines(text: str) -> Iterator[str]:
    """Properties.LineReader: skip blank and comment lines, join `\\`-continued lines."""
    pending: list[str] = []
    for raw in _natural_lines(text):
        line = raw.lstrip(_PROP_WS)
        if not pending and (not line or line[0] in "#!"):
            continue
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2 == 1:
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield "".join(pending)
        pending = []
    if pending:
        yield "".join(pending)


# Properties.loadConvert: \uXXXX, \t \n \r \f, and a backslash before any other character is that
# character; a backslash that ends the text stays
_ESCAPE = re.compile(r"\\(u.{0,4}|.)", re.DOTALL)
_ESCAPED = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    return _ESCAPE.sub(_unescaped, s)


def _unescaped(m: re.Match[str]) -> str:
    e = m.group(1)
    if e[0] != "u":
        return _ESCAPED.get(e, e)
    if not re.fullmatch(r"u[0-9A-Fa-f]{4}", e):
        raise CheckpointError("Malformed \\uxxxx encoding.")
    return chr(int(e[1:], 16))


def parse_properties(
    buf: bytes | bytearray | memoryview, *, path: str | None = None
) -> dict[str, str]:
    """Properties.load(InputStream): ISO-8859-1, `#`/`!` comments, `key=value`, `key: value` or
    `key value`, backslash escapes and continuations. A repeated key keeps its last value."""
    text = bytes(buf).decode("latin-1")
    props: dict[str, str] = {}
    try:
        for line in _logical_lines(text):
            i, n = 0, len(line)
            while i < n and line[i] not in "=:" and line[i] not in _PROP_WS:
                i += 2 if line[i] == "\\" else 1
            i = min(i, n)
            key = line[:i]
            if i == n:
                rest = ""
            elif line[i] in "=:":
                rest = line[i + 1 :].lstrip(_PROP_WS)
            else:  # a blank ends the key; one `=` or `:` may still follow it
                rest = line[i + 1 :].lstrip(_PROP_WS)
                if rest[:1] in ("=", ":"):
                    rest = rest[1:].lstrip(_PROP_WS)
            props[_unescape(key)] = _unescape(rest)
    except CheckpointError as e:
        raise e.located(path=path) from None
    return props


def _save_convert(s: str, escape_space: bool, unicode_escapes: bool) -> str:
    """Properties.saveConvert."""
    out: list[str] = []
    for x, c in enumerate(s):
        o = ord(c)
        if 61 < o < 127:
            out.append("\\\\" if c == "\\" else c)
        elif c == " ":
            out.append("\\ " if x == 0 or escape_space else " ")
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif c in "=:#!":
            out.append("\\" + c)
        elif (o < 0x20 or o > 0x7E) and unicode_escapes:
            units = c.encode("utf-16-be")
            out.extend(f"\\u{units[k]:02X}{units[k + 1]:02X}" for k in range(0, len(units), 2))
        else:
            out.append(c)
    return "".join(out)


def _store_order(keys: list[str], order: str) -> list[str]:
    """The order Properties.store writes keys in, which depends on the JVM:
    `sorted` (JDK 18+ sorts), `jdk9` (JDK 9-17: ConcurrentHashMap of 16 bins, exact below 12 keys),
    `jdk8` (Hashtable of 11 buckets walked from the top, newest first in a bucket; exact below 9 keys)."""
    if order == "sorted":
        return sorted(keys)
    # (imported here: the protocol module costs every checkpoint reader's start-up a few ms)
    from kafkalog_cli.formats.internal.kafka_protocol import java_string_hash

    if order == "jdk9":
        n = 16
        while len(keys) >= n * 3 // 4:
            n *= 2

        def spread(h: int) -> int:
            return (h ^ (h >> 16)) & 0x7FFFFFFF

        return sorted(
            keys, key=lambda k: spread(java_string_hash(k) & 0xFFFFFFFF) & (n - 1)
        )  # stable: insertion order in a bin
    if order == "jdk8":
        n = 11
        while len(keys) > n * 3 // 4:
            n = n * 2 + 1
        indexed = list(enumerate(keys))
        indexed.sort(key=lambda ik: (-((java_string_hash(ik[1]) & 0x7FFFFFFF) % n), -ik[0]))
        return [k for _, k in indexed]
    raise ValueError(f"unknown order {order!r}; use 'sorted', 'jdk9' or 'jdk8'")


def java_date(when: _dt.datetime) -> str:
    """java.util.Date.toString: `EEE MMM dd HH:mm:ss zzz yyyy` (English names)."""
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    zone = when.tzname() or "UTC"
    return (
        f"{days[when.weekday()]} {months[when.month - 1]} {when.day:02d} "
        f"{when.hour:02d}:{when.minute:02d}:{when.second:02d} {zone} {when.year}"
    )


def encode_meta_properties(
    props: Mapping[str, str],
    *,
    date: str | _dt.datetime,
    order: str = "jdk9",
    unicode_escapes: bool = True,
    comments: str = "",
) -> bytes:
    """Properties.store(out, "") as Kafka writes meta.properties: `#`, `#<date>`, then `key=value`.

    `order="jdk9"` reproduces Kafka 3.x on JDK 11/17 (the corpus: node.id, version, cluster.id);
    `unicode_escapes=True` is store(OutputStream) (Kafka 3.3: ISO-8859-1 with \\uXXXX), False is
    store(Writer) (Kafka 3.7+: UTF-8). `date` is the text after `#`, or a datetime to format."""
    header = date if isinstance(date, str) else java_date(date)
    lines = [f"#{comments}", f"#{header}"]
    for key in _store_order(list(props), order):
        lines.append(
            _save_convert(key, True, unicode_escapes)
            + "="
            + _save_convert(props[key], False, unicode_escapes)
        )
    text = "".join(line + "\n" for line in lines)
    return text.encode("latin-1" if unicode_escapes else "utf-8")


# ---------------------------------------------------------------------------------------------
# .kafka_cleanshutdown


def parse_clean_shutdown(buf: bytes | bytearray | memoryview) -> int | None:
    """The broker epoch in `.kafka_cleanshutdown`, or None. Never raises: like
    CleanShutdownFileHandler.read, anything unreadable is "no epoch". Kafka 3.3 writes an EMPTY
    file (corpus); the JSON `{"version":0,"brokerEpoch":N}` came later. Either way, what makes a
    shutdown clean is that the file exists."""
    try:
        content = json.loads(bytes(buf).decode("utf-8"))
        epoch = content["brokerEpoch"]
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not _INT64[0] <= epoch <= _INT64[1]:
        return None
    return epoch


def encode_clean_shutdown(broker_epoch: int | None) -> bytes:
    """None: Kafka 3.3's empty file; otherwise the JSON of later versions."""
    if broker_epoch is None:
        return b""
    return b'{"version":0,"brokerEpoch":%d}' % broker_epoch
