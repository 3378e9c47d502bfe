"""Producer state reads transaction markers as ProducerAppendInfo does (EndTransactionMarker.deserialize):
a marker Kafka cannot deserialize stops LogSegment.recover right after that batch."""

from __future__ import annotations

import struct

import pytest

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch, iter_batches
from kafkalog_cli.ops.producer_rebuild import ProducerState
from kafkalog_cli.storage.recovery import recover_segment

T = 1_700_000_000_000
PID = 7


def data(offset: int) -> bytes:
    return build_v2_batch(
        [SimpleRecord(b"k", b"v", T)],
        offset,
        producer_id=PID,
        producer_epoch=0,
        is_transactional=True,
    )


def marker(offset: int, value: bytes | None, ctype: int = 1) -> bytes:
    return build_v2_batch(
        [SimpleRecord(struct.pack(">hh", 0, ctype), value, T)],
        offset,
        producer_id=PID,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )


def test_a_marker_sets_the_coordinator_epoch_whatever_its_version():
    st = ProducerState()
    for b in iter_batches(data(0) + marker(1, struct.pack(">hi", 3, 42))):
        st.update(b)
    assert st.entries[PID].coordinator_epoch == 42
    assert st.entries[PID].current_txn_first_offset == -1


@pytest.mark.parametrize("value", [None, b"\0\0\0\0\0", struct.pack(">hi", -1, 42)])
def test_a_marker_kafka_cannot_deserialize_is_an_invalid_record(value):
    st = ProducerState()
    batches = list(iter_batches(data(0) + marker(1, value)))
    st.update(batches[0])
    with pytest.raises(InvalidRecordError, match="end transaction marker"):
        st.update(batches[1])


def test_recover_keeps_the_bad_marker_and_drops_what_follows_as_kafka_does():
    head = data(0) + marker(1, struct.pack(">hi", -1, 42))
    buf = head + build_v2_batch([SimpleRecord(b"k", b"v", T)], 2)
    r = recover_segment(buf, 0, 4096, ProducerState(), [])
    # LogSegment.recover counts the batch in validBytes before updating producer state
    assert (r.valid_bytes, r.next_offset) == (len(head), 2)
    assert isinstance(r.error, InvalidRecordError)
