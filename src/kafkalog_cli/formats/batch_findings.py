"""What a check over a log's bytes finds: a Finding of one kind at one position of a file. The
batch walk (framing.py) and the record-level checks (deep_findings.py) both report in it."""

from __future__ import annotations

from dataclasses import dataclass

# the kinds of verify-crc's problems that a check over bytes finds
CRC = "crc"  # stored CRC != computed (v2 CRC-32C, legacy CRC-32 of the entry)
INNER_CRC = "inner_crc"  # deep: a legacy inner message's CRC-32
SIZE = "size"  # a size field below 14, or a v2 batch below 61 bytes
TRAILING = "trailing_bytes"  # an incomplete batch at the end of the file (its bytes are ignored)
MAGIC = "magic"  # a magic byte other than 0, 1, 2
OFFSETS = "offsets"  # offsets not increasing within or across batches
RECORDS = "records"  # deep: records that do not decode, or do not match the header


@dataclass
class Finding:
    """Something wrong at `position` of `file`: of `kind`, said by `message`, about the batch with
    these offsets (and CRCs, for a CRC mismatch)."""

    file: str | None
    position: int | None
    kind: str
    message: str
    base_offset: int | None = None
    last_offset: int | None = None
    stored_crc: int | None = None
    computed_crc: int | None = None
