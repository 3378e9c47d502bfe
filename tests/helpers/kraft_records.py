"""A KRaft log dir whose __cluster_metadata holds chosen TopicRecords and ConfigRecords, for the
tests of where a config value comes from."""

from __future__ import annotations

from pathlib import Path

from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch


def topic_record(name: str, n: int) -> bytes:
    return bytes([1, 2, 0]) + cstr(name) + bytes([n]) * 16 + b"\x00"


def config_record(resource_type: int, resource: str, key: str, value: str | None) -> bytes:
    return bytes([1, 4, 0, resource_type]) + cstr(resource) + cstr(key) + cstr(value) + b"\x00"


def kraft_log_dir(root: Path, values: list[bytes], node_id: int | None = 1) -> Path:
    """A log dir whose __cluster_metadata-0 holds `values`, one record per batch."""
    meta = root / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (meta / "00000000000000000000.log").write_bytes(
        b"".join(build_v2_batch([SimpleRecord(None, v)], i) for i, v in enumerate(values))
    )
    if node_id is not None:
        (root / "meta.properties").write_text(f"#\nnode.id={node_id}\nversion=1\ncluster.id=x\n")
    return root


def cstr(s: str | None) -> bytes:
    return b"\x00" if s is None else bytes([len(s) + 1]) + s.encode()
