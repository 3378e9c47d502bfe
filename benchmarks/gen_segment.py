"""Builds the benchmark's input: a log dir with one partition whose first segment holds `size`
bytes of v2 batches (~16 KiB each, a producer's default batch.size) of ~100-byte records over
`keys` keys, followed by an empty active segment and the producer snapshot a roll writes."""

from __future__ import annotations

import random
import struct
import sys
from pathlib import Path

from kafkalog_cli.formats.crc import crc32c
from kafkalog_cli.formats.varint import write_varint, write_varlong


def _record(off_delta: int, ts_delta: int, key: bytes, value: bytes) -> bytes:
    body = (
        b"\x00"
        + write_varlong(ts_delta)
        + write_varint(off_delta)
        + write_varint(len(key))
        + key
        + write_varint(len(value))
        + value
        + b"\x00"
    )
    return write_varint(len(body)) + body


def build(path: Path, size: int, nkeys: int, seed: int = 7, batch_bytes: int = 16384) -> int:
    rnd = random.Random(seed)
    values = [
        bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(78)) for _ in range(64)
    ]
    keys = [b"key-%06d" % i for i in range(nkeys)]
    offset, written, ts0 = 0, 0, 1_700_000_000_000
    with open(path, "wb") as f:
        while written < size:
            recs, n, blen = [], 0, 0
            while blen < batch_bytes - 200:
                r = _record(n, n, keys[rnd.randrange(nkeys)], values[n & 63])
                recs.append(r)
                blen += len(r)
                n += 1
            body = b"".join(recs)
            after_crc = struct.pack(
                ">hiqqqhii", 0, n - 1, ts0 + offset, ts0 + offset + n - 1, -1, -1, -1, n
            )
            crc = crc32c(after_crc + body)
            head = struct.pack(">qiibI", offset, 49 + len(body), 0, 2, crc)
            f.write(head + after_crc + body)
            written += 61 + len(body)
            offset += n
    return offset


def build_logdir(root: Path, size: int, nkeys: int) -> Path:
    part = root / "bench-0"
    part.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=1\nnode.id=1\n")
    leo = build(part / f"{0:020d}.log", size, nkeys)
    for suffix in (".index", ".timeindex"):
        (part / f"{0:020d}{suffix}").write_bytes(b"")
    for suffix in (".log", ".index", ".timeindex"):
        (part / f"{leo:020d}{suffix}").write_bytes(b"")
    # the producer snapshot a roll writes (no producers): version 1, crc, 0 entries
    snap = struct.pack(">i", 0)
    (part / f"{leo:020d}.snapshot").write_bytes(struct.pack(">hI", 1, crc32c(snap)) + snap)
    # every record replicated: the high watermark at the log end, as a broker checkpoints it
    (root / "replication-offset-checkpoint").write_text(f"0\n1\nbench 0 {leo}\n")
    return root


if __name__ == "__main__":
    build_logdir(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
