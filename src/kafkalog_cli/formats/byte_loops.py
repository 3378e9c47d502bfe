"""The loops over a log's bytes that have a compiled twin, from the core chosen once: the
compiled one (Cython, built by `pip install` where a C compiler exists) or the pure-Python one,
the reference and the fallback, as fastavro keeps `_read.pyx` beside `_read_py.py`.

Each compiled module has a pure twin beside it with the same public names in the same order
(tests/formats/test_twins.py holds them so):

- formats/_scan.pyx and _scan_py.py: the record scanners (`SCAN`);
- formats/_framing_walk.pyx and _framing_walk_py.py: verify-crc's batch walk, the batch cuts,
  the byte search over a mapped segment and erase's walk past the batches it found nothing in
  (`FRAMING_WALK`).

Every caller imports these names from here. The compiled core runs when it is built and imports,
unless the environment variable KAFKALOG_PURE_PYTHON is set (to anything but "" or "0"); this is
the only place that reads it, and `kafkalog --version` says which core runs, and why. A twin is
imported when one of its names is first asked for: verify-crc loads the framing walk without the
record decoder the scanners import."""

from __future__ import annotations

import importlib
import os

ENV = "KAFKALOG_PURE_PYTHON"

# each compiled module's public names, in its order (its pure twin's are the same)
SCAN = (
    "batch_text",
    "text_of_batches",
    "batch_json",
    "lines_of_batches",
    "v2_records_ok",
    "scan_columns",
    "columns_of_batches",
    "search_v2",
    "gather_spans",
    "take_fixed_width",
)
FRAMING_WALK = (
    "CRC32C_IN_C",
    "check_sound_batches",
    "batch_cuts",
    "crc32c_of",
    "find_bytes",
    "pass_plain_batches",
)
TWINS = {"_scan": SCAN, "_framing_walk": FRAMING_WALK}
_TWIN_OF = {name: twin for twin, names in TWINS.items() for name in names}
_PACKAGE = "kafkalog_cli.formats"


def forced_pure() -> bool:
    """Whether KAFKALOG_PURE_PYTHON asks for the pure-Python core."""
    return os.environ.get(ENV, "").strip() not in ("", "0")


# why the pure core runs (None: the compiled one does, as far as it was imported)
_why_pure: str | None = f"{ENV} is set" if forced_pure() else None
_chosen: dict[str, object] = {}


def twin(name: str):
    """The module that runs twin `name` (_scan, _framing_walk): the compiled one, or its pure
    twin (name + "_py") when the pure core is asked for, or the compiled one is not built (an
    install without a C compiler) or does not import."""
    global _why_pure
    module = _chosen.get(name)
    if module is not None:
        return module
    full = f"{_PACKAGE}.{name}"
    if _why_pure is None:
        try:
            module = importlib.import_module(full)
        except ImportError as e:
            _why_pure = (
                "the compiled core is not built"
                if getattr(e, "name", None) == full
                else f"the compiled core does not import: {e}"
            )
    if module is None:
        module = importlib.import_module(full + "_py")
    _chosen[name] = module
    return module


def core() -> str:
    """ "compiled" or "pure": the core that runs the record paths."""
    twin("_scan")
    return "pure" if _why_pure is not None else "compiled"


def describe() -> str:
    """The core in use, in words, for `kafkalog --version`."""
    if core() == "compiled":
        return "compiled core (Cython)"
    return f"pure-Python core ({_why_pure})"


def __getattr__(name: str):
    """A twin's public name, from the module `twin` chose (then kept here: asked for once)."""
    owner = _TWIN_OF.get(name)
    if owner is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(twin(owner), name)
    globals()[name] = value
    return value
