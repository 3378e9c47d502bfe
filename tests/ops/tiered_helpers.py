"""Log dirs with tiered topics, built with kafkalog's own writer from Kafka's schemas
(storage/src/main/resources/message/RemoteLogSegmentMetadata*.json at 3.9.0-rc3): a copy of
examples/logdir, and a __remote_log_metadata partition recording uploads, as
TopicBasedRemoteLogMetadataManager writes them (RemoteLogMetadataSerde: frame version, apiKey,
version, then the message)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from kafkalog_cli.formats.checkpoints import parse_partition_metadata, topic_id_bytes
from kafkalog_cli.formats.internal.kafka_protocol import write_struct
from kafkalog_cli.formats.internal.remote_log_metadata import metadata_partition
from kafkalog_cli.formats.internal.schemas import MESSAGES
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from tests.helpers.paths import EXAMPLES as EXAMPLE

COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED = 0, 1


def copy_example(tmp: Path) -> Path:
    d = tmp / "logdir"
    shutil.copytree(EXAMPLE, d)
    return d


def topic_id_of(partition_dir: Path) -> bytes:
    meta = parse_partition_metadata((partition_dir / "partition.metadata").read_bytes())
    return topic_id_bytes(meta.topic_id)


def segment_record(
    topic: str,
    topic_id: bytes,
    partition: int,
    start: int,
    end: int,
    state: int = COPY_SEGMENT_FINISHED,
    segment_id: bytes | None = None,
) -> bytes:
    fields = {
        "remoteLogSegmentId": {
            "topicIdPartition": {"name": topic, "id": topic_id, "partition": partition},
            "id": segment_id or uuid.uuid4().bytes,
        },
        "startOffset": start,
        "endOffset": end,
        "brokerId": 1,
        "maxTimestampMs": 1700000000000,
        "eventTimestampMs": 1700000000000,
        "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": start}],
        "segmentSizeInBytes": 1000,
        "customMetadata": None,
        "remoteLogSegmentState": state,
        "txnIndexEmpty": True,
    }
    return bytes([1, 0, 0]) + write_struct(MESSAGES["RemoteLogSegmentMetadataRecord"], fields, 0)


def update_record(
    topic: str, topic_id: bytes, partition: int, segment_id: bytes, state: int
) -> bytes:
    fields = {
        "remoteLogSegmentId": {
            "topicIdPartition": {"name": topic, "id": topic_id, "partition": partition},
            "id": segment_id,
        },
        "brokerId": 1,
        "eventTimestampMs": 1700000000001,
        "customMetadata": None,
        "remoteLogSegmentState": state,
    }
    return bytes([1, 1, 0]) + write_struct(
        MESSAGES["RemoteLogSegmentMetadataUpdateRecord"], fields, 0
    )


def write_remote_log_metadata(
    log_dir: Path, topic: str, partition: int, values: list[bytes], partitions: int = 50
) -> Path:
    """`__remote_log_metadata-N` (N as the broker computes it) holding `values`, one batch each."""
    topic_id = topic_id_of(log_dir / f"{topic}-{partition}")
    d = log_dir / f"__remote_log_metadata-{metadata_partition(topic_id, partition, partitions)}"
    d.mkdir()
    data = b"".join(
        build_v2_batch([SimpleRecord(None, v, 1700000000000)], i) for i, v in enumerate(values)
    )
    (d / "00000000000000000000.log").write_bytes(data)
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "00000000000000000000.timeindex").write_bytes(b"")
    return d


def uploaded(log_dir: Path, topic: str, partition: int, *ranges: tuple[int, int]) -> Path:
    """Record segments `ranges` ((start, end) offsets) as uploaded: started, then finished."""
    topic_id = topic_id_of(log_dir / f"{topic}-{partition}")
    values = []
    for start, end in ranges:
        sid = uuid.uuid4().bytes
        values.append(
            segment_record(topic, topic_id, partition, start, end, COPY_SEGMENT_STARTED, sid)
        )
        values.append(update_record(topic, topic_id, partition, sid, COPY_SEGMENT_FINISHED))
    return write_remote_log_metadata(log_dir, topic, partition, values)
