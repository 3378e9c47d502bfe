"""The wire-format reader and the Java/Jackson/Scala details the decoders' text depends on."""

from __future__ import annotations

import pytest

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.internal.kafka_protocol import (
    ALL,
    BufferUnderflowError,
    Field,
    Readable,
    ScalaHashOrder,
    Struct,
    bigint_hex,
    java_double,
    java_string_hash,
    json_node,
    member,
    read_struct,
    to_json,
    uuid_to_string,
    versions,
)


def test_fixed_reads_and_underflow():
    r = Readable(bytes.fromhex("ff 8001 ffffffff 00000000000000ff ffff"))
    assert (r.read_int8(), r.read_int16(), r.read_int32(), r.read_int64(), r.read_uint16()) == (
        -1,
        -32767,
        -1,
        255,
        65535,
    )
    assert r.remaining() == 0
    with pytest.raises(BufferUnderflowError) as e:
        r.read_int8()
    assert e.value.position == 17


def test_unsigned_varint_wraps_like_java():
    assert Readable(b"\x96\x01").read_unsigned_varint() == 150
    assert Readable(b"\xff\xff\xff\xff\x0f").read_unsigned_varint() == -1  # Java int overflow
    with pytest.raises(InvalidRecordError, match="Varint is too long"):
        Readable(b"\xff\xff\xff\xff\xff\x01").read_unsigned_varint()
    assert Readable(b"\x03").read_varint() == -2
    assert Readable(b"\x80\x01").read_varlong() == 64


def test_too_long_varints_fail_with_byteutils_text():
    # the value so far is a Java int: the fifth byte's bits above 32 are gone (0x71 << 28 -> 0x10000000)
    with pytest.raises(InvalidRecordError) as e:
        Readable(b"\x81\x80\x80\x80\xf1\x01").read_unsigned_varint()
    assert (e.value.position, str(e.value)) == (
        5,
        "byte 5: java.lang.IllegalArgumentException: Varint is too long, "
        "the most significant bit in the 5th byte is set, converted value: "
        "10000001",
    )
    with pytest.raises(InvalidRecordError) as e:
        Readable(b"\xff" * 10 + b"\x01").read_varlong()
    assert (e.value.position, str(e.value)) == (
        10,
        "byte 10: java.lang.IllegalArgumentException: Varlong is too long",
    )
    assert Readable(b"\xff" * 9 + b"\x01").read_varlong() == -(1 << 63)
    r = Readable(
        b"\x01\xff\xff\x01", limit=3
    )  # a varint cut by the limit: Java's underflow, where it stopped
    assert r.read_int8() == 1
    with pytest.raises(BufferUnderflowError) as e:
        r.read_unsigned_varint()
    assert (e.value.position, r.position) == (3, 3)


def test_read_array_checks_like_bytebufferaccessor():
    with pytest.raises(
        InvalidRecordError, match=r"Error reading byte array of 5 byte\(s\): only 2 byte\(s\)"
    ):
        Readable(b"ab").read_array(5)
    assert Readable(b"\xc3\x28ok").read_string(4) == "\ufffd(ok"  # malformed UTF-8 -> U+FFFD


def test_uuid_is_base64url_without_padding():
    assert (
        uuid_to_string(bytes.fromhex("eefb97e3fb2a434a9dcce999b12b9e49"))
        == "7vuX4_sqQ0qdzOmZsSueSQ"
    )


def test_member_follows_the_generated_version_checks():
    valid = versions("0-1")
    assert member(versions("0+"), valid, 9)  # unconditional: 3.3.1 reads v9 with its own layout
    assert not member(versions("1+"), valid, 0) and member(versions("1+"), valid, 5)
    assert member(versions("1"), versions("0-3"), 1) and not member(
        versions("1"), versions("0-3"), 2
    )
    assert not member(None, valid, 0)


def test_read_struct_tagged_and_nullable():
    spec = Struct(
        "S",
        versions("0"),
        ALL,
        (
            Field("a", "int32"),
            Field("s", "string", nullable=ALL),
            Field("t", "[]int32", tagged=ALL, tag=0, nullable=ALL, default=None),
        ),
    )
    # a = 7, s = null (compact length 0), one tagged field: tag 0, size 5, compact array [5]
    raw = b"\x00\x00\x00\x07" + b"\x00" + b"\x01\x00\x05\x02\x00\x00\x00\x05"
    d = read_struct(Readable(raw), spec, 0)
    assert d == {"a": 7, "s": None, "t": [5]}
    assert to_json(json_node(spec, d, 0)) == '{"a":7,"s":null,"t":[5]}'


def test_jackson_json():
    assert (
        to_json(
            {"a": 'q"\\\b\t\f\n\r\x00\x1f\x7f\u2028é/', "b": b"\xfb\xff", "c": [True, None, 1.5]}
        )
        == '{"a":"q\\"\\\\\\b\\t\\f\\n\\r\\u0000\\u001F\x7f\u2028é/","b":"+/8=","c":[true,null,1.5]}'
    )


@pytest.mark.parametrize(
    "d,text",
    [
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (9.99e-4, "9.99E-4"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (-0.0, "-0.0"),
        (0.1, "0.1"),
        (1e23, "1.0E23"),
    ],
)
def test_java_double(d, text):
    assert java_double(d) == text


def test_bigint_hex():
    assert bigint_hex(b"") == ""
    assert bigint_hex(b"\x00\x00") == "0"
    assert bigint_hex(b"\x00\x01\x00\xab") == "100AB"


def test_java_string_hash():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("rdkafka-68d84c5d-68c8-4027-955a-b24c32315bcc") == java_string_hash(
        "rdkafka-68d84c5d-68c8-4027-955a-b24c32315bcc"
    )
    assert (
        java_string_hash("polygenelubricants") == -2147483648
    )  # the classic Integer.MIN_VALUE hash


def test_scala_hash_order_grows_at_threshold():
    t = ScalaHashOrder()
    t.put("x16", 16)
    t.put("x1", 1)
    assert t.keys() == ["x16", "x1"]  # buckets 0 and 1 of 16
    for i in range(10):
        t.put(f"f{i}", 1000 + 32 * i)  # all in bucket 8 of 16 and of 32
    assert t.length == 32  # the 12th insert doubled the table first
    assert t.keys()[:2] == ["x1", "f0"]  # 16 now sits in bucket 16
    assert t.keys()[-1] == "x16"
