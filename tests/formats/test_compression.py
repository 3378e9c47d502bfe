"""The codecs framed as Kafka frames them, and failures as CompressionError."""

from __future__ import annotations

import gzip

import cramjam
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import CompressionError
from kafkalog_cli.formats.compression import (
    CODECS,
    Compression,
    codec_for,
    compress,
    decompress,
    lz4_frame_header,
)


def test_lz4_frame_headers_are_kafkas_including_magic_0s_wrong_checksum():
    assert lz4_frame_header(1).hex() == "04224d18604082"
    assert lz4_frame_header(2).hex() == "04224d18604082"
    assert lz4_frame_header(0).hex() == "04224d1860401a"


def test_magic_0_lz4_is_read_despite_its_checksum_and_others_are_checked():
    data = b"kafka" * 100
    framed = compress(Compression.LZ4, data, magic=0)
    assert decompress(Compression.LZ4, framed, magic=0) == data
    with pytest.raises(CompressionError, match="descriptor"):
        decompress(Compression.LZ4, framed, magic=1)


def test_snappy_reads_xerial_framing_and_raw_blocks():
    data = bytes(range(256)) * 300  # more than one 32 KiB xerial chunk
    framed = compress(Compression.SNAPPY, data)
    assert framed.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert decompress(Compression.SNAPPY, framed) == data
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(Compression.SNAPPY, raw) == data


def test_zstd_frames_without_a_content_size_are_read():
    data = b"z" * 10000
    cobj = zstandard.ZstdCompressor().compressobj()
    streamed = cobj.compress(data) + cobj.flush()
    assert decompress(Compression.ZSTD, streamed) == data
    assert decompress(Compression.ZSTD, compress(Compression.ZSTD, data)) == data


def test_gzip_is_written_as_javas_gzipoutputstream_and_reads_concatenated_members():
    data = b"hello" * 50
    out = compress(Compression.GZIP, data)
    assert out[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"
    assert gzip.decompress(out) == data
    assert decompress(Compression.GZIP, gzip.compress(b"a") + gzip.compress(b"b")) == b"ab"


def test_zstd_is_refused_below_magic_2():
    with pytest.raises(CompressionError):
        compress(Compression.ZSTD, b"x", magic=1)


@pytest.mark.parametrize(
    "codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
)
def test_garbage_is_a_compression_error_never_a_library_exception(codec):
    good = compress(codec, b"payload " * 100)
    bad = good[:8] + bytes(b ^ 0x5A for b in good[8:])
    with pytest.raises(CompressionError):
        decompress(codec, bad)


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=200_000),
    codec=st.sampled_from(list(Compression)),
    magic=st.sampled_from([0, 1, 2]),
)
def test_round_trip(data, codec, magic):
    if codec == Compression.ZSTD and magic < 2:
        return
    assert decompress(codec, compress(codec, data, magic), magic) == data


def test_the_registry_holds_every_codec_and_refuses_unknown_ids():
    assert sorted(CODECS) == list(Compression)
    assert all(CODECS[c].compression is c for c in Compression)
    assert [c for c in Compression if CODECS[c].min_magic == 2] == [Compression.ZSTD]
    for codec_id in (5, 6, 7, -1):
        with pytest.raises(CompressionError, match=f"Unknown compression type id: {codec_id}"):
            codec_for(codec_id)
        with pytest.raises(CompressionError, match="Unknown compression type id"):
            decompress(codec_id, b"")
    assert decompress(3, compress(3, b"by id")) == b"by id"  # an attributes' id is a codec too
