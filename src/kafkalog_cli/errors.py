"""One exception hierarchy. Every error knows the file and byte position it is about, when it
knows them, and the exit code the command line turns it into (documented in docs/safety.md and kafkalog(1))."""

from __future__ import annotations

import enum


def one_line(s: str) -> str:
    """A message fit for one stderr line: newlines and other control characters in file names
    (or anywhere) are escaped as Python does (\\n, \\t, \\x1b)."""
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def reason_of(e: BaseException) -> str:
    """What a library's exception (fastavro's, protobuf's, jsonschema's, pyarrow's, json's) says
    about the input, in words for a user: never the Python class name or a repr."""
    import json
    import struct

    if isinstance(e, json.JSONDecodeError):
        return f"not JSON ({_lowered(e.msg)} at character {e.pos})"
    if isinstance(e, UnicodeDecodeError):
        return f"not {e.encoding.upper()} text (byte {e.start})"
    if isinstance(e, (EOFError, struct.error)) or (
        isinstance(e, IndexError) and "string index" in str(e)  # fastavro's varint at the end
    ):
        return "the bytes end before the value does"
    if isinstance(e, IndexError):
        return "a number that indexes past what the schema has (an enum symbol, a union branch)"
    if isinstance(e, KeyError):
        return f"no {e.args[0]} where the schema needs one" if e.args else "a name is missing"
    if isinstance(e, RecursionError):
        return "nested deeper than Python's recursion limit"
    if isinstance(e, MemoryError):
        return "a size too large to hold in memory"
    text = " ".join(str(e).split())
    return _lowered(text) if text else f"{type(e).__module__.partition('.')[0]} refused it"


def _lowered(text: str) -> str:
    """A library's message, as the middle of our sentence ("Expecting value" -> "expecting
    value"); a name in capitals stays."""
    return text[0].lower() + text[1:] if text[:2].istitle() else text


class ExitCode(enum.IntEnum):
    """One table for every command (docs/safety.md "Exit codes", `kafkalog --help`, kafkalog(1))."""

    OK = 0  # done; nothing wrong found, nothing to do
    PROBLEMS = 1  # something found or pending: problems, hanging transactions, a dry run
    # with changes, doctor warnings
    USAGE = 2  # bad options (click's own code), or refused as Kafka itself refuses
    REFUSED_BY_KAFKA = 2  # (an internal topic for delete-records, a tiered topic for compact...)
    CORRUPT = 3  # the input is not what its name says: corrupt or truncated data
    INPUT = 4  # missing, unreadable or unrecognised path; not a log dir; a link out of it
    LOCKED = 5  # the log dir's .lock is held by a broker or another kafkalog
    IO = 6  # writing failed: read-only file system, full disk, quarantine full
    CONFIG_UNKNOWN = (
        7  # refused to delete on a guess (a deciding config unknown); everything else was done
    )
    BROKER_WONT_START = 8  # doctor: a broker would not start on these log dirs
    INTERRUPTED = 130


# The table every command follows, as `kafkalog --help`, kafkalog(1) and docs/safety.md
# print it: (code, meaning). One line each, so --help can print it as it is.
EXIT_CODE_TABLE: tuple[tuple[int, str], ...] = (
    (ExitCode.OK, "done; nothing wrong found, nothing to do"),
    (
        ExitCode.PROBLEMS,
        "something found or pending: problems (verify-crc), hanging transactions,"
        " a --dry-run that would change something, doctor warnings",
    ),
    (
        ExitCode.USAGE,
        "usage error, or refused as Kafka refuses (an internal topic, an offset out of range)",
    ),
    (ExitCode.CORRUPT, "corrupt input: a record, index or checkpoint that cannot be right"),
    (
        ExitCode.INPUT,
        "a path that is missing, unreadable, or not a log dir, partition dir or Kafka file; or a"
        " symbolic link out of the log dir that kafkalog will not write through (left unchanged)",
    ),
    (
        ExitCode.LOCKED,
        "a log dir is locked by a running broker or another kafkalog (it was skipped)",
    ),
    (
        ExitCode.IO,
        "a change could not be written: read-only file system, full disk, full quarantine",
    ),
    (
        ExitCode.CONFIG_UNKNOWN,
        "refused to delete on a guess (a deciding config is unknown); the rest was done",
    ),
    (ExitCode.BROKER_WONT_START, "doctor: a broker would not start on these log dirs"),
)

# When one run meets several outcomes, the code is the first that applies, in this order: a
# failure (2, 3, 4 or 6: the first one met), then 8, 7, 5, 1, and 0.
EXIT_CODE_PRECEDENCE = (
    "a failure (2, 3, 4, 6: the first met) wins over 8, 8 over 7, 7 over 5, 5 over 1, and 1 over 0"
)
_RANKED = (ExitCode.BROKER_WONT_START, ExitCode.CONFIG_UNKNOWN, ExitCode.LOCKED, ExitCode.PROBLEMS)


def exit_code_of(codes) -> int:
    """The one code for a run that met `codes` (EXIT_CODE_PRECEDENCE); 0 for none."""
    codes = [int(c) for c in codes if int(c) != ExitCode.OK]
    failures = [c for c in codes if c not in _RANKED]
    if failures:
        return failures[0]
    return next((int(c) for c in _RANKED if c in codes), int(ExitCode.OK))


class KafkalogError(Exception):
    """Base class. `path` and `position` locate the problem; `str()` is the one line we print."""

    exit_code = ExitCode.CORRUPT

    def __init__(self, message: str, path: str | None = None, position: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.position = position

    def located(self, path: str | None = None, position: int | None = None) -> KafkalogError:
        """Fill in the location when a lower layer raised without knowing it."""
        if self.path is None and path is not None:
            self.path = path
        if self.position is None and position is not None:
            self.position = position
        return self

    def in_record(self, offset: int, batch_position: int) -> KafkalogError:
        """A decoder's error, whose position is inside a key or value, moved to the position of
        the record's batch in the .log (the record is named by its offset)."""
        inner = f" (byte {self.position} of the key or value)" if self.position is not None else ""
        self.message = f"record at offset {offset}: {self.message}{inner}"
        self.position = batch_position
        return self

    def line(self) -> str:
        """`str(self)` as one line: control characters in the path or message escaped."""
        return one_line(str(self))

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.position is not None:
            where.append(f"byte {self.position}")
        return f"{': '.join(where)}: {self.message}" if where else self.message


class KafkaToolError(KafkalogError):
    """Where kafka-dump-log itself would die with an exception (it exits 1)."""


class CorruptRecordError(KafkalogError):
    """Kafka's CorruptRecordException: a size or CRC that cannot be right."""


class InvalidRecordError(KafkalogError):
    """Kafka's InvalidRecordException: a batch or record whose fields break the format."""


class CompressionError(InvalidRecordError):
    """A compressed payload that does not decompress."""


class CorruptIndexError(KafkalogError):
    """Kafka's CorruptIndexException."""


class OffsetOverflowError(CorruptIndexError):
    """Kafka's LogSegmentOffsetOverflowException: an offset too far from the segment's base to
    index (the broker splits such a segment). `offset` is that offset, where known."""

    def __init__(
        self,
        message: str,
        path: str | None = None,
        position: int | None = None,
        offset: int | None = None,
    ):
        super().__init__(message, path, position)
        self.offset = offset


class InvalidOffsetError(CorruptIndexError):
    """Kafka's InvalidOffsetException: offsets that do not increase within a segment (recovery
    empties the whole segment)."""


class CorruptSnapshotError(KafkalogError):
    """Kafka's CorruptSnapshotException (producer snapshots)."""


class CheckpointError(KafkalogError):
    """A checkpoint or metadata text file that does not parse."""


class UsageError(KafkalogError):
    """Options that contradict each other or the file system (an output inside the input...)."""

    exit_code = ExitCode.USAGE


class InputError(KafkalogError):
    """A path that is missing, unreadable, or not the kind of file or directory asked for."""

    exit_code = ExitCode.INPUT


class OutsideLogDirError(KafkalogError):
    """A change that would land outside the log dir and its quarantine: through a symbolic link
    that leads out of it (without --follow-symlinks), or anywhere else. Nothing of it is written."""

    exit_code = ExitCode.INPUT


class LockedError(KafkalogError):
    """The log dir's .lock is held by another process."""

    exit_code = ExitCode.LOCKED


class WriteError(KafkalogError):
    """A change could not be written: read-only file system, full disk, full quarantine."""

    exit_code = ExitCode.IO
