"""CRC-32 (IEEE, legacy messages) and CRC-32C (Castagnoli: v2 batches, producer snapshots).

CRC-32C uses the hardware-accelerated `crc32c` package; `crcmod` is the portable fallback for
platforms where it does not install."""
from __future__ import annotations

import zlib

try:
    from crc32c import crc32c as _crc32c

    def crc32c(data, value: int = 0) -> int:
        return _crc32c(data, value)

    HARDWARE_CRC32C = True
except ImportError:  # pragma: no cover - exercised only where crc32c is missing
    import crcmod.predefined

    _fn = crcmod.predefined.mkCrcFun("crc-32c")

    def crc32c(data, value: int = 0) -> int:
        return _fn(bytes(data), value)

    HARDWARE_CRC32C = False


def crc32(data, value: int = 0) -> int:
    return zlib.crc32(data, value)
