"""verify-crc --deep over one batch's records: `deep_findings`, called by formats/framing.py's
`check_batches` (and its batch walk), asking the record walk `v2_records_ok` first and the
reference decoder (records.py) where that declines."""

from __future__ import annotations

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.batch_findings import INNER_CRC, OFFSETS, RECORDS, Finding
from kafkalog_cli.formats.byte_loops import v2_records_ok
from kafkalog_cli.formats.records import RecordBatch


def deep_findings(
    buf,
    pos: int,
    total: int,
    magic: int,
    file: str | None,
    base: int,
    last: int,
    findings: list[Finding],
) -> None:
    """What is wrong with the records of the batch buf[pos:pos+total) (offsets base..last),
    appended to `findings`."""
    if magic == 2:
        _deep_v2(buf, pos, total, file, base, last, findings)
    else:
        _deep_legacy(buf, pos, total, magic, file, base, findings)


def _deep_v2(buf, pos, total, file, base, last, findings) -> None:
    b = RecordBatch(buf, pos, total, 2)
    try:
        if v2_records_ok(b):
            return
    except Exception:  # the reference decoder below says what is wrong
        pass
    try:
        recs = b.records()
    except KafkalogError as e:
        findings.append(
            Finding(file, pos, RECORDS, f"records do not decode: {e.message}", base, last)
        )
        return
    except Exception as e:  # a decompressor's own error type
        findings.append(
            Finding(
                file, pos, RECORDS, f"records do not decode: {type(e).__name__}: {e}", base, last
            )
        )
        return
    if len(recs) != b.records_count:
        findings.append(
            Finding(
                file,
                pos,
                RECORDS,
                f"header says {b.records_count} records, {len(recs)} decoded",
                base,
                last,
            )
        )
    prev = None
    for r in recs:
        if r.offset < base or r.offset > last or (prev is not None and r.offset <= prev):
            findings.append(
                Finding(
                    file,
                    pos,
                    OFFSETS,
                    f"record offset {r.offset} is outside the batch's range or not increasing",
                    base,
                    last,
                )
            )
            break
        prev = r.offset


def _deep_legacy(buf, pos, total, magic, file, base, findings) -> None:
    b = RecordBatch(buf, pos, total, magic)
    if b.compression_id == 0:
        return
    try:
        recs = b.records()
    except KafkalogError as e:
        findings.append(
            Finding(
                file,
                pos,
                RECORDS,
                f"compressed message set does not decode: {e.message}",
                base,
                base,
            )
        )
        return
    except Exception as e:
        findings.append(
            Finding(
                file,
                pos,
                RECORDS,
                f"compressed message set does not decode: {type(e).__name__}: {e}",
                base,
                base,
            )
        )
        return
    prev = None
    for r in recs:
        if not r.valid:
            findings.append(
                Finding(
                    file,
                    pos,
                    INNER_CRC,
                    f"inner message at offset {r.offset} fails its CRC-32",
                    r.offset,
                    None,
                    r.crc,
                    None,
                )
            )
        if prev is not None and r.offset <= prev:
            findings.append(
                Finding(
                    file,
                    pos,
                    OFFSETS,
                    f"inner offsets do not increase ({prev} then {r.offset})",
                    r.offset,
                    None,
                )
            )
        prev = r.offset
