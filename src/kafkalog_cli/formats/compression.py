"""The four codecs, framed exactly as Kafka frames them (CompressionType.wrapForOutput,
wrapForInput).

- gzip: RFC 1952 as java.util.zip.GZIPOutputStream writes it; concatenated members are read.
- snappy: xerial snappy-java framing (16-byte header, then int32 length + raw block chunks of at
  most 32 KiB of input); a payload without the header is one raw snappy block (non-Java clients).
- lz4: an LZ4 frame, 64 KiB independent blocks, no checksums; magic 0 writes the header checksum
  over the wrong bytes and readers ignore it there (KafkaLZ4BlockOutputStream's old bug).
- zstd (magic 2 only): a standard frame, usually without a content size.

`CODECS` maps each Compression to its two functions; `compress` and `decompress` look the codec
up there, so a caller never branches on the codec itself.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import cramjam

from kafkalog_cli.errors import CompressionError


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name kafka-dump-log prints (lower case since 3.1)."""
        return self.name.lower()


# ---------------------------------------------------------------- gzip
# GZIPOutputStream's fixed header: no name, mtime 0, XFL 0, OS 0.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"


def _gzip_compress(data, magic: int) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)  # Deflater.DEFAULT_COMPRESSION is zlib's 6
    body = c.compress(data) + c.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def _gzip_decompress(data, magic: int) -> bytes:
    out = []
    data = bytes(data)
    while data:
        d = zlib.decompressobj(31)
        out.append(d.decompress(data))
        if not d.eof:
            raise CompressionError("gzip stream ended early (unexpected end of ZLIB input stream)")
        data = d.unused_data
        # GZIPInputStream stops at trailing bytes that do not start a new member
        if data[:2] != b"\x1f\x8b":
            break
    return b"".join(out)


# ---------------------------------------------------------------- snappy
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024


def _snappy_compress(data, magic: int) -> bytes:
    mv = memoryview(data)
    out = [_XERIAL_HEADER]
    for i in range(0, len(mv), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(mv[i : i + _XERIAL_BLOCK]))
        out.append(struct.pack(">i", len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data, magic: int) -> bytes:
    mv = memoryview(data)
    if mv[:8] != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(mv))
    out = []
    pos = 16
    end = len(mv)
    while pos < end:
        if mv[pos : pos + 8] == _XERIAL_MAGIC:  # snappy-java tolerates a header repeated mid-stream
            pos += 16
            continue
        if pos + 4 > end:
            raise CompressionError("snappy: truncated chunk length")
        (n,) = struct.unpack_from(">i", mv, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise CompressionError(f"snappy: chunk of {n} bytes overruns the payload")
        out.append(bytes(cramjam.snappy.decompress_raw(mv[pos : pos + n])))
        pos += n
    return b"".join(out)


# ---------------------------------------------------------------- lz4
_LZ4_MAGIC = 0x184D2204
_LZ4_FLG = 0x60  # version 01, independent blocks, no block or content checksum
_LZ4_BD = 0x40  # 64 KiB maximum block size
_LZ4_BLOCK = 64 * 1024
_LZ4_MAX_BLOCK = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


def _xxh32_byte(data: bytes) -> int:
    """(xxhash32(data, seed 0) >> 8) & 0xFF, the frame header checksum."""
    return (_xxh32(data) >> 8) & 0xFF


def _xxh32(data: bytes, seed: int = 0) -> int:
    # Only ever run over 2 to 14 header bytes, so a plain implementation is fast enough.
    P1, P2, P3, P4, P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    M = 0xFFFFFFFF
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed & M, (seed - P1) & M]
        while i + 16 <= n:
            for j in range(4):
                (w,) = struct.unpack_from("<I", data, i)
                x = (v[j] + w * P2) & M
                v[j] = (((x << 13) | (x >> 19)) & M) * P1 & M
                i += 4
        h = (
            sum((((v[k] << r) | (v[k] >> (32 - r))) & M) for k, r in zip(range(4), (1, 7, 12, 18)))
            & M
        )
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 4 <= n:
        (w,) = struct.unpack_from("<I", data, i)
        h = (h + w * P3) & M
        h = (((h << 17) | (h >> 15)) & M) * P4 & M
        i += 4
    while i < n:
        h = (h + data[i] * P5) & M
        h = (((h << 11) | (h >> 21)) & M) * P1 & M
        i += 1
    h ^= h >> 15
    h = (h * P2) & M
    h ^= h >> 13
    h = (h * P3) & M
    h ^= h >> 16
    return h


def lz4_frame_header(magic: int) -> bytes:
    prefix = struct.pack("<I", _LZ4_MAGIC)
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    # magic 0: Kafka hashed the magic too (useBrokenFlagDescriptorChecksum)
    hc = _xxh32_byte(prefix + descriptor if magic == 0 else descriptor)
    return prefix + descriptor + bytes((hc,))


def _lz4_compress(data, magic: int) -> bytes:
    mv = memoryview(data)
    out = [lz4_frame_header(magic)]
    for i in range(0, len(mv), _LZ4_BLOCK):
        chunk = mv[i : i + _LZ4_BLOCK]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):  # incompressible: store it, flagged by the high bit
            out.append(struct.pack("<I", len(chunk) | 0x80000000))
            out.append(bytes(chunk))
        else:
            out.append(struct.pack("<I", len(block)))
            out.append(block)
    out.append(b"\x00\x00\x00\x00")
    return b"".join(out)


def _lz4_decompress(data, magic: int) -> bytes:
    mv = memoryview(data)
    end = len(mv)
    if end < 7 or struct.unpack_from("<I", mv, 0)[0] != _LZ4_MAGIC:
        raise CompressionError("lz4: stream unsupported (invalid magic bytes)")
    flg, bd = mv[4], mv[5]
    if (flg >> 6) != 1:
        raise CompressionError("lz4: stream unsupported (version must be 01)")
    if flg & 0x03 or not flg & 0x20 or bd & 0x8F:
        raise CompressionError("lz4: stream unsupported (reserved bits or dependent blocks)")
    has_block_checksum = bool(flg & 0x10)
    has_content_size = bool(flg & 0x08)
    has_content_checksum = bool(flg & 0x04)
    header_end = 6 + (8 if has_content_size else 0)
    if end < header_end + 1:
        raise CompressionError("lz4: truncated frame header")
    if magic != 0:  # magic 0's checksum is wrong by design and Kafka's reader skips it
        if _xxh32_byte(bytes(mv[4:header_end])) != mv[header_end]:
            raise CompressionError("lz4: stream frame descriptor corrupted")
    max_block = _LZ4_MAX_BLOCK.get((bd >> 4) & 7)
    if max_block is None:
        raise CompressionError("lz4: unsupported block size")
    pos = header_end + 1
    out = []
    while True:
        if pos + 4 > end:
            raise CompressionError("lz4: stream ended without an end mark")
        (n,) = struct.unpack_from("<I", mv, pos)
        pos += 4
        if n == 0:
            break
        stored = n & 0x80000000
        n &= 0x7FFFFFFF
        if n > max_block or pos + n > end:
            raise CompressionError(
                f"lz4: block of {n} bytes is larger than allowed or overruns the payload"
            )
        block = mv[pos : pos + n]
        pos += n + (4 if has_block_checksum else 0)
        if stored:
            out.append(bytes(block))
        else:
            try:
                buf = bytearray(max_block)
                n = cramjam.lz4.decompress_block_into(block, buf)
                out.append(bytes(memoryview(buf)[:n]))
            except Exception as e:
                raise CompressionError(f"lz4: {e}") from None
    if has_content_checksum:
        pos += 4
    return b"".join(out)


# ---------------------------------------------------------------- zstd
_zstd_c = None


def _zstd_compress(data, magic: int) -> bytes:
    global _zstd_c
    import zstandard

    if _zstd_c is None:
        # zstd-jni's ZstdOutputStream streams, so its frames carry no content size
        _zstd_c = zstandard.ZstdCompressor(level=3, write_content_size=False)
    return _zstd_c.compress(data)


def _zstd_decompress(data, magic: int) -> bytes:
    import zstandard

    d = zstandard.ZstdDecompressor().decompressobj()
    out = d.decompress(bytes(data))
    return out


# ---------------------------------------------------------------- the registry
def _none(data, magic: int) -> bytes:
    return bytes(data)


@dataclass(frozen=True, slots=True)
class Codec:
    """One codec: its framing both ways, `(data, magic) -> bytes`, and the oldest message format
    that may use it (CompressionType's minimum magic)."""

    compression: Compression
    compress: Callable[[object, int], bytes]
    decompress: Callable[[object, int], bytes]
    min_magic: int = 0


CODECS: dict[int, Codec] = {
    c.compression: c
    for c in (
        Codec(Compression.NONE, _none, _none),
        Codec(Compression.GZIP, _gzip_compress, _gzip_decompress),
        Codec(Compression.SNAPPY, _snappy_compress, _snappy_decompress),
        Codec(Compression.LZ4, _lz4_compress, _lz4_decompress),
        Codec(Compression.ZSTD, _zstd_compress, _zstd_decompress, min_magic=2),
    )
}


def codec_for(codec_id: int) -> Codec:
    """The codec of an attributes' compression id (a Compression is one too)."""
    try:
        return CODECS[codec_id]
    except KeyError:
        raise CompressionError(f"Unknown compression type id: {int(codec_id)}") from None


def compression_from_id(codec_id: int) -> Compression:
    return codec_for(codec_id).compression


def compress(codec: int, data, magic: int = 2) -> bytes:
    c = codec_for(codec)
    if magic < c.min_magic:
        raise CompressionError(
            f"Compression type {c.compression.kafka_name} is only supported with magic {c.min_magic}"
        )
    return c.compress(data, magic)


def decompress(codec: int, data, magic: int = 2) -> bytes:
    """Decompress a batch payload; any failure is a CompressionError (never a library's own)."""
    c = codec_for(codec)
    try:
        return c.decompress(data, magic)
    except CompressionError:
        raise
    except Exception as e:  # zlib.error, cramjam.DecompressionError, zstandard.ZstdError
        raise CompressionError(f"{c.compression.kafka_name}: {e}") from None
