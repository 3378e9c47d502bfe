"""The keys of a batch's records, for the cleaner's offset-map pass: `scan_keys`, `scan_keys_into`,
hand-inlined over the records' bytes (no Record objects). On anything unusual they raise
`Declined` (or let a decoder's error through) and the caller decodes the batch with the reference
decoder (records.py); tests/formats/test_scan.py holds them equal to it."""

from __future__ import annotations

from kafkalog_cli.formats.v2_region import Declined
from kafkalog_cli.formats.varint import read_varlong


def scan_keys(
    data, pos: int, end: int, count: int, base_offset: int, keys: list, offsets: list
) -> None:
    """Append (key, offset) of every keyed record to `keys`/`offsets`. Varints of one and two
    bytes are decoded inline: a Python call costs more than the rest of a record."""
    kappend, oappend = keys.append, offsets.append
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                nxt = pos + 1 + ((b >> 1) ^ -(b & 1))
                p = pos + 2
            else:
                length, p = read_varlong(data, pos)
                nxt = p + length
                p += 1
            while data[p] > 0x7F:  # timestampDelta: skipped
                p += 1
            b = data[p + 1]  # offsetDelta
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                b2 = data[p + 2]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    od = (v >> 1) ^ -(v & 1)
                    p += 3
                else:
                    od, p = read_varlong(data, p + 1)
            b = data[p]  # keyLength
            if b < 0x80:
                if not b & 1:  # odd: a negative length, no key (keySize < 0)
                    kl = b >> 1
                    p += 1
                    if p + kl > nxt:
                        raise Declined()
                    kappend(data[p : p + kl])
                    oappend(base_offset + od)
            else:
                kl, p = read_varlong(data, p)
                if kl >= 0:
                    if p + kl > nxt:
                        raise Declined()
                    kappend(data[p : p + kl])
                    oappend(base_offset + od)
            pos = nxt
    except IndexError:
        raise Declined() from None
    if pos != end:
        raise Declined()


def scan_keys_into(
    data, pos: int, end: int, count: int, base_offset: int, d: dict, start_offset: int
) -> tuple[int, int]:
    """The map pass's loop when the offset map is a dict with room for `count` more keys:
    `d[key] = offset` for every keyed record at or after `start_offset`, in order (later offsets
    win, as SkimpyOffsetMap.put). Returns (records stored, length of the last key). The record
    length's varint, two bytes for records of 64 to 8191 bytes, is decoded inline as well."""
    kl = -1
    n = 0
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                nxt = pos + 1 + ((b >> 1) ^ -(b & 1))
                p = pos + 2
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    nxt = pos + 2 + ((v >> 1) ^ -(v & 1))
                    p = pos + 3
                else:
                    length, p = read_varlong(data, pos)
                    nxt = p + length
                    p += 1
            while data[p] > 0x7F:  # timestampDelta: skipped
                p += 1
            b = data[p + 1]  # offsetDelta
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                b2 = data[p + 2]
                if b2 < 0x80:
                    v = (b & 0x7F) | (b2 << 7)
                    od = (v >> 1) ^ -(v & 1)
                    p += 3
                else:
                    od, p = read_varlong(data, p + 1)
            b = data[p]  # keyLength
            if b < 0x80:
                if not b & 1:  # odd: a negative length, no key (keySize < 0)
                    kl = b >> 1
                    p += 1
                    if p + kl > nxt:
                        raise Declined()
                    o = base_offset + od
                    if o >= start_offset:
                        d[data[p : p + kl]] = o
                        n += 1
            else:
                k, p = read_varlong(data, p)
                if k >= 0:
                    kl = k
                    if p + kl > nxt:
                        raise Declined()
                    o = base_offset + od
                    if o >= start_offset:
                        d[data[p : p + kl]] = o
                        n += 1
            pos = nxt
    except IndexError:
        raise Declined() from None
    if pos != end:
        raise Declined()
    return n, kl
