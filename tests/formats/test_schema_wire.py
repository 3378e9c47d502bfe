"""Confluent's wire framing read as confluent-kafka's own SchemaId writes and reads it."""

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalog_cli.formats.schema_wire import (
    WireError,
    encode_message_indexes,
    message_indexes,
    read_header,
    read_prefix,
)

serde = pytest.importorskip("confluent_kafka.schema_registry.common.serde")

indexes = st.lists(st.integers(min_value=0, max_value=2**31), min_size=1, max_size=6)


@given(st.integers(min_value=0, max_value=2**32 - 1), indexes, st.binary(max_size=8))
def test_prefix_as_confluent_kafka_writes_and_reads_it(schema_id, idx, payload):
    framed = serde.SchemaId("PROTOBUF", schema_id, message_indexes=idx).id_to_bytes() + payload
    theirs = serde.SchemaId("PROTOBUF")
    rest = theirs.from_bytes(io.BytesIO(framed)).read()
    ref = read_prefix(framed, protobuf=True)
    assert (ref.schema_id, list(ref.message_indexes), framed[ref.start :]) == (
        theirs.id,
        theirs.message_indexes,
        rest,
    )
    assert (
        encode_message_indexes(idx)
        == serde.SchemaId("PROTOBUF", 0, message_indexes=idx).id_to_bytes()[5:]
    )


def test_first_message_is_the_single_byte_zero():
    assert encode_message_indexes([0]) == b"\x00"
    assert message_indexes(b"\x00", 0) == ((0,), 1)


def test_guid_header_as_header_schema_id_serializer_writes_it():
    guid = "65a13f86-1648-4aed-b437-381b6a0bf0c4"
    value = serde.SchemaId("AVRO", guid=guid).guid_to_bytes()
    ref = read_header(value)
    assert (str(ref.guid), ref.schema_id, ref.start) == (guid, None, 0)


@pytest.mark.parametrize(
    "data, position, what",
    [
        (b"", 0, "empty"),
        (b"\x00\x00\x00", 3, "shorter than the 5-byte"),
        (b"\x07abcd", 0, "magic byte 7"),
        (b"\x00\x00\x00\x00\x01\x04", 6, "end before"),
    ],
)
def test_bytes_not_in_the_wire_format_say_where(data, position, what):
    with pytest.raises(WireError) as e:
        read_prefix(data, protobuf=True)
    assert e.value.position == position and what in str(e.value)
