"""CRC-32 (IEEE, legacy messages) and CRC-32C (Castagnoli: v2 batches, producer snapshots).

CRC-32C uses the hardware-accelerated `crc32c` package; `crcmod` is the portable fallback for
platforms where it does not install."""

from __future__ import annotations

import zlib


def _load_crc32c():
    """The `crc32c` package's C extension, loaded without the package's __init__, which calls
    importlib.metadata.version() and so costs ~30 ms of every command's start-up."""
    import importlib.machinery
    import importlib.util
    import os

    spec = importlib.util.find_spec("crc32c")
    if spec is None or not spec.origin:
        raise ImportError("crc32c")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(os.path.dirname(spec.origin), "_crc32c" + suffix)
        if os.path.exists(path):
            loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
            ext = importlib.util.spec_from_file_location("crc32c._crc32c", path, loader=loader)
            mod = importlib.util.module_from_spec(ext)
            loader.exec_module(mod)
            return mod.crc32c
    from crc32c import crc32c  # an unusual layout: the ordinary import

    return crc32c


try:
    _crc32c = _load_crc32c()

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
