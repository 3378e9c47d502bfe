"""Every record of every fixture under tests/fixtures/internal must print exactly as
kafka-dump-log 3.3.1 printed it with --offsets-decoder, --transaction-log-decoder or
--cluster-metadata-decoder (the fixtures' goldens; see SOURCES.md)."""

from __future__ import annotations

import pytest

from kafkalog_cli.formats.internal.cluster_metadata import format_metadata_record
from kafkalog_cli.formats.internal.consumer_offsets import format_offsets_record
from kafkalog_cli.formats.internal.transaction_state import format_transaction_record

from ._logfile import FIXTURES, Rec, fixture_records, golden_lines, manifest


def _parse(decoder: str, r: Rec) -> tuple[str | None, str | None]:
    if decoder == "offsets-decoder":
        return format_offsets_record(r.key, r.value)
    if decoder == "transaction-log-decoder":
        return format_transaction_record(r.key, r.value)
    assert decoder == "cluster-metadata-decoder"
    return None, format_metadata_record(r.value, offset=r.offset)


def test_every_fixture_is_listed():
    listed = {m["name"] for m in manifest()}
    on_disk = {p.name[: -len(".golden.xz")] for p in FIXTURES.glob("*.golden.xz")}
    assert listed == on_disk and len(listed) == 50


@pytest.mark.parametrize("entry", manifest(), ids=lambda m: m["name"])
def test_fixture_matches_golden(entry):
    lines = golden_lines(entry["name"])
    recs = fixture_records(entry["name"])
    assert len(recs) == len(lines)
    checked = 0
    for r, line in zip(recs, lines):
        expected = r.metadata_line()
        if not r.control:  # control records print no key/payload
            key, payload = _parse(entry["decoder"], r)
            expected += (f" key: {key}" if key is not None else "") + (
                f" payload: {payload}" if payload is not None else ""
            )
            checked += 1
            assert expected.encode("utf-8") == line, f"offset {r.offset}"
        else:
            assert line.startswith(expected.encode("utf-8"))
    assert checked > 0
