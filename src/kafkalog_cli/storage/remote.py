"""Segments on object and distributed storage (`s3a://`, `s3://`, `hdfs://`, `gs://`, ...), read
through pyarrow.fs with ranged reads: the index entries a seek needs and the batches from there,
chunk by chunk. Never a whole file through the JVM, never a local copy.

Local paths (and `file://`) keep storage.segment's mmap; `segments_of_sources` takes both kinds.
pyarrow is imported only when a remote URI is read, so the rest of kafkalog never needs it.
Credentials and endpoints are pyarrow's: the AWS_* environment (AWS_ENDPOINT_URL for an
S3-compatible server), ~/.aws, HADOOP_HOME/CLASSPATH for HDFS, Google's default credentials.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafkalog_cli.errors import InputError, KafkalogError
from kafkalog_cli.storage import names
from kafkalog_cli.storage.paths_given import expand_sources, has_glob, is_remote, scheme

CHUNK = 8 << 20  # bytes of batches fetched by one ranged read
_SCHEMES: dict[str | None, str] = {
    "s3a": "s3",
    "s3n": "s3",
}  # Hadoop's names for what pyarrow calls s3


def filesystem(uri: str):
    """(pyarrow FileSystem, path inside it) for a URI."""
    from pyarrow import fs

    s = scheme(uri)
    rest = uri.split("://", 1)[1]
    try:
        if s in ("s3", "s3a", "s3n"):
            return _s3(), rest.rstrip("/")
        return fs.FileSystem.from_uri(f"{_SCHEMES.get(s, s)}://{rest}")
    except Exception as e:  # an unknown scheme, a missing library (libhdfs), bad credentials
        raise InputError(
            f"cannot open this storage: {str(e).strip().splitlines()[0]}", path=uri
        ) from None


def _s3():
    """pyarrow's S3 filesystem with the AWS environment's endpoint (AWS_ENDPOINT_URL[_S3]), for
    S3-compatible servers, whatever the pyarrow version reads by itself."""
    import os
    from urllib.parse import urlparse

    from pyarrow import fs

    kwargs = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        u = urlparse(endpoint)
        kwargs = {"endpoint_override": u.netloc or u.path, "scheme": u.scheme or "https"}
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        kwargs["region"] = region
    return fs.S3FileSystem(**kwargs)


def read_whole(uri: str) -> bytes:
    """A small remote file's bytes (meta.properties); FileNotFoundError when it is missing."""
    fs, path = filesystem(uri)
    with fs.open_input_file(path) as f:
        return f.read()


def _uri(s: str, path: str) -> str:
    return f"{s}://{path}"


@dataclass(eq=False)
class RemoteSegment:
    """A `.log` on remote storage, with what planning and reading need (as storage.Segment):
    its topic-partition from its dir's name, its size, and its next base offset."""

    uri: str  # of the .log, as named in rows and errors
    base_offset: int
    size: int
    next_base_offset: int | None = None
    _fs: object = field(default=None, repr=False)
    topic: str | None = field(init=False)
    partition: int | None = field(init=False)

    is_log = True

    def __post_init__(self):
        tp = names.parse_partition_dir(posixpath.basename(self.directory))
        self.topic, self.partition = (tp.topic, tp.partition) if tp else (None, None)

    def __getstate__(self):  # sent to executors: each opens its own filesystem
        state = dict(self.__dict__)
        state["_fs"] = None
        return state

    @property
    def path(self) -> str:
        return self.uri

    @property
    def directory(self) -> str:
        return posixpath.dirname(self.uri)

    @property
    def log_dir(self) -> str:
        return posixpath.dirname(self.directory)

    # -- ranged reads
    def _filesystem(self):
        if self._fs is None:
            self._fs = filesystem(self.uri)
        return self._fs

    def read_range(self, suffix: str, position: int, size: int) -> bytes:
        """`size` bytes at `position` of this segment's file with `suffix` (fewer at its end;
        b"" when the file is missing, for an index)."""
        fs, path = self._filesystem()
        path = path[: -len(names.LOG_SUFFIX)] + suffix
        try:
            with fs.open_input_file(path) as f:
                size = min(size, f.size() - position)
                return f.read_at(size, position) if size > 0 else b""
        except FileNotFoundError:
            if suffix == names.LOG_SUFFIX:
                raise InputError("no such file", path=self.uri) from None
            return b""
        except OSError as e:
            raise InputError(
                f"cannot read: {str(e).strip().splitlines()[0]}", path=self.uri
            ) from None

    def ranges(self, start: int = 0) -> Iterator[tuple[int, bytes, bool]]:
        """(position, bytes, last) from `start` on, by ranged reads of about CHUNK bytes, each
        ending at a batch boundary found by the size fields alone; a batch bigger than CHUNK is
        read whole. The last range (last=True) is the rest of the file, or what was read where a
        size field cannot be right, a batch is incomplete or the file shrank while it was read:
        the bytes a reader then judges."""
        pos, want = start, CHUNK
        while pos < self.size:
            asked = min(want, self.size - pos)
            data = self.read_range(names.LOG_SUFFIX, pos, asked)
            if len(data) < asked:  # the file shrank while it was read
                yield pos, data, True
                return
            end, need = _whole_batches(data)
            if end == 0 and need > len(data) and pos + len(data) < self.size:
                want = need  # one batch bigger than a range: fetch it whole
                continue
            if end == 0 or pos + len(data) >= self.size:
                yield pos, data, True
                return
            yield pos, data[:end], False
            pos += end
            want = CHUNK

    def chunks(self, start: int = 0) -> Iterator[tuple[int, bytes]]:
        """(position, bytes) of `ranges`: formats.records.iter_batches over a chunk sees whole
        batches; the last may end with the bytes iter_batches stops at or reports."""
        for pos, data, _ in self.ranges(start):
            yield pos, data

    # -- seeking through the indexes, checked against the log as storage.Segment does
    def position_for_offset(self, offset: int) -> int:
        """A byte position at or before the first batch whose last offset is >= `offset`: the
        offset index's last entry at or below it, if the batch there starts at or before the
        entry's offset; else 0."""
        from kafkalog_cli.formats.indexes import parse_offset_index

        entries = parse_offset_index(self._index(names.INDEX_SUFFIX), self.base_offset)
        best = None
        for e in entries:
            if e.offset > offset:
                break
            best = e
        if best is None or best.position <= 0 or best.position >= self.size:
            return 0
        return best.position if self._batch_at_starts_by(best.position, best.offset) else 0

    def position_for_timestamp(self, timestamp: int) -> int:
        """A byte position at or before the first batch that may hold a record with timestamp
        >= `timestamp`: the time index's last entry below it gives an offset, whose batch must
        have the entry's timestamp as its max timestamp; else 0."""
        from kafkalog_cli.formats.indexes import parse_time_index

        best = None
        for e in parse_time_index(self._index(names.TIME_INDEX_SUFFIX), self.base_offset):
            if e.timestamp >= timestamp:
                break
            best = e
        if best is None:
            return 0
        pos = self.position_for_offset(best.offset)
        head = self._batch_header(pos)
        if (
            head is None
            or head.magic < 2
            or head.max_timestamp != best.timestamp
            or head.base_offset_field > best.offset
        ):
            return 0
        return pos

    def _index(self, suffix: str) -> bytes:
        return self.read_range(suffix, 0, 1 << 40)

    def _batch_header(self, position: int):
        data = self.read_range(names.LOG_SUFFIX, position, 64)
        try:
            return next(iter(_headers(data)), None)
        except KafkalogError:
            return None

    def _batch_at_starts_by(self, position: int, offset: int) -> bool:
        head = self._batch_header(position)
        return head is not None and (head.magic < 2 or head.base_offset_field <= offset)


def _headers(data: bytes):
    """The batch header at the start of `data` (a batch cut short after its header is fine)."""
    from kafkalog_cli.formats.records import RecordBatch

    if len(data) < 61:
        return []
    magic = data[16] - 0x100 if data[16] >= 0x80 else data[16]
    return [RecordBatch(data, 0, int.from_bytes(data[8:12], "big", signed=True) + 12, magic)]


def _whole_batches(data: bytes) -> tuple[int, int]:
    """(where the whole batches at the start of `data` end, the size of the batch after them if its
    size field can be right, else 0), by the size fields alone."""
    from kafkalog_cli.formats.sizes import LOG_OVERHEAD, RECORD_OVERHEAD_V0

    end = 0
    while end + LOG_OVERHEAD <= len(data):
        size = int.from_bytes(data[end + 8 : end + 12], "big", signed=True)
        if size < RECORD_OVERHEAD_V0:
            return end, 0
        if end + LOG_OVERHEAD + size > len(data):
            return end, LOG_OVERHEAD + size
        end += LOG_OVERHEAD + size
    return end, 0


def remote_file(uri: str) -> RemoteSegment:
    """One remote `.log` file by its URI, with its size (an InputError when it is missing)."""
    from pyarrow import fs as pafs

    fs, path = filesystem(uri)
    try:
        info = fs.get_file_info(path)
    except OSError as e:
        raise InputError(f"cannot read: {str(e).strip().splitlines()[0]}", path=uri) from None
    if info.type != pafs.FileType.File:
        raise InputError(
            "no such file" if info.type == pafs.FileType.NotFound else "not a file", path=uri
        )
    return RemoteSegment(
        uri, names.offset_from_name(info.base_name) or 0, info.size, _fs=(fs, path)
    )


# ------------------------------------------------------------------ listing
def remote_segments(uri: str, only=None) -> list[RemoteSegment]:
    """The `.log` segments under `uri` (a segment, a partition dir, a log dir, an archive of log
    dirs, or a glob over any of these): those of the logs a broker loads (live and -future
    partition dirs), in log dir, topic, partition and offset order."""
    from pyarrow import fs as pafs

    fs, root = filesystem(uri)
    s = scheme(uri)
    assert s is not None  # a remote URI (is_remote): filesystem() opens no other
    if has_glob(root):
        static = root[: min(root.index(c) for c in "*?[" if c in root)].rsplit("/", 1)[0]
        pattern = root
    else:
        static, pattern = root, None
    info = fs.get_file_info(static)
    if info.type == pafs.FileType.NotFound:
        raise InputError(
            "no such file or directory", path=uri if pattern is None else _uri(s, static)
        )
    if info.type == pafs.FileType.File:
        files = [info]
    else:
        files = [
            f
            for f in fs.get_file_info(pafs.FileSelector(static, recursive=True))
            if f.type == pafs.FileType.File
        ]
    if pattern is not None:
        depth = pattern.count("/") + 1
        files = [
            f for f in files if fnmatch.fnmatchcase("/".join(f.path.split("/")[:depth]), pattern)
        ]
    by_dir: dict[str, list] = {}
    for f in files:
        base = names.offset_from_name(f.base_name)
        if base is None or f.base_name != f"{base:020d}{names.LOG_SUFFIX}":
            continue
        directory = posixpath.dirname(f.path)
        parsed = names.parse_partition_dir_name(posixpath.basename(directory))
        if info.type != pafs.FileType.File and (parsed is None or not parsed.kind.loaded):
            continue
        if only and not only.matches_dir(directory):
            continue
        by_dir.setdefault(directory, []).append((base, f))
    if not by_dir:
        what = (
            "no segment of a partition that matches " + only.describe()
            if only
            else "no Kafka segment (.log)"
        )
        raise InputError(f"{what} under this URI", path=uri)
    out: list[RemoteSegment] = []
    for directory in sorted(by_dir, key=_dir_order):
        segs = [
            RemoteSegment(_uri(s, f.path), base, f.size) for base, f in sorted(by_dir[directory])
        ]
        for seg, nxt in zip(segs, segs[1:]):
            seg.next_base_offset = nxt.base_offset
        out += segs
    return out


def _dir_order(directory: str):
    tp = names.parse_partition_dir(posixpath.basename(directory))
    return (
        posixpath.dirname(directory),
        tp.topic if tp else "",
        tp.partition if tp else -1,
        directory,
    )


def segments_of_sources(paths, only=None, on_left_out=None) -> list:
    """storage.logdir.segments_of over expand_sources(paths): local segments (mmap'd when read)
    and RemoteSegments, in the order of the paths."""
    from kafkalog_cli.storage.logdir import segments_of

    out: list = []
    local: list[str] = []
    for p in expand_sources(paths):
        if is_remote(p):
            if local:
                out += segments_of(local, on_left_out=on_left_out, only=only)
                local = []
            out += remote_segments(p, only)
        else:
            local.append(p)
    if local:
        out += segments_of(local, on_left_out=on_left_out, only=only)
    return out


def segment_chunks(ref, start: int = 0):
    """(position, bytes) of a segment from `start`: one mmap of a local file (unmapped when
    done), or a remote segment's ranged reads, each ending at a batch boundary."""
    if hasattr(ref, "chunks"):
        yield from ref.chunks(start)
        return
    with ref.mapped() as buf:
        yield 0, buf


def segment_batches(ref):
    """(position of its chunk, batch) for every batch of the segment, local or remote; a batch's
    own position is within its chunk."""
    from kafkalog_cli.formats.records import iter_batches

    chunks = segment_chunks(ref, 0)
    try:
        for off, buf in chunks:
            for b in iter_batches(buf, 0, len(buf)):
                yield off, b
    finally:
        chunks.close()


def read_any(path: str) -> bytes:
    """A small file's bytes, local or remote (a log dir's meta.properties, its checkpoints);
    OSError or KafkalogError (InputError for a local file: storage.files) when it cannot be read."""
    if is_remote(path):
        return read_whole(path)
    from kafkalog_cli.storage.files import read_bytes

    return read_bytes(path)
