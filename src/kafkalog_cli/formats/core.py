"""Which core runs the record paths: the compiled one (Cython: formats/_cscan.pyx, built by
`pip install` where a C compiler exists) or the pure-Python one (formats/scan.py), which is the
reference and the fallback, as fastavro keeps its pure modules beside its compiled ones.

The compiled core is used when it is built and imports, unless the environment variable
KAFKALOG_PURE_PYTHON is set (to anything but "" or "0"); `kafkalog --version` says which core
runs, and why."""
from __future__ import annotations

import os

ENV = "KAFKALOG_PURE_PYTHON"

# set by compiled_module(): why the pure core runs, when it does
_why_pure: str | None = None


def forced_pure() -> bool:
    """Whether KAFKALOG_PURE_PYTHON asks for the pure-Python core."""
    return os.environ.get(ENV, "").strip() not in ("", "0")


def compiled_module(name: str):
    """The compiled module kafkalog_cli.formats.<name> (_cscan: the scanners; _cframing:
    verify-crc's batch walk), or None: the pure core is asked for, or the compiled one is not built
    (an install without a C compiler) or does not import."""
    global _why_pure
    if forced_pure():
        _why_pure = f"{ENV} is set"
        return None
    import importlib

    full = f"kafkalog_cli.formats.{name}"
    try:
        return importlib.import_module(full)
    except ImportError as e:
        _why_pure = ("the compiled core is not built" if getattr(e, "name", None) == full
                     else f"the compiled core does not import: {e}")
        return None


def compiled_scan():
    """The compiled scanners (formats/_cscan), or None."""
    return compiled_module("_cscan")


def name() -> str:
    """"compiled" or "pure": the core formats/scan.py chose at its import."""
    from kafkalog_cli.formats import scan

    return scan.CORE


def describe() -> str:
    """The core in use, in words, for `kafkalog --version`."""
    if name() == "compiled":
        return "compiled core (Cython)"
    return f"pure-Python core ({_why_pure})"
