"""How render/jsonl.py lays out record lines (`JsonLayout`), handed to the record JSON scanners
(`batch_json`, `lines_of_batches`), which know no JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kafkalog_cli.formats.records import RecordBatch

# the flags of a record line's variant (JsonLayout.line)
KEYS_WHOLE, VALUES_WHOLE, HEADERS_SLOT, SEQUENCE_SLOT = 1, 2, 4, 8


class JsonLayout(NamedTuple):
    """How render/jsonl.py writes record lines, handed to `batch_json` (which knows no JSON).

    A payload goes in a line as a JSON string or null. In a column (the keys, or the values, of
    a batch) without null the slot is inside the string's quotes, and `strings` fills it with
    the escaped texts of the whole column at once; otherwise the slot takes the whole value."""

    line: Callable[[RecordBatch, int], bytes]  # (batch, variant) -> %-format with offset %d,
    # timestamp %d, key %b, value %b, headers %b, sequence %d; the variant's flags say which
    # string slots take whole values, and whether there are slots for headers and sequences
    # (without, every record has none: the format holds them)
    string: bytes  # %-format of a JSON string around its escaped text
    null: bytes
    header: bytes  # %-format of one header: key %b (a JSON string), value: escaped text
    null_header: bytes  # ... whose value is null: key %b
    no_headers: bytes
    open: bytes  # a list of headers: open + sep.join(headers) + close
    sep: bytes
    close: bytes
    quote: Callable[[str], bytes]  # a str as a JSON string
    strings: Callable[
        [list[bytes]], list[bytes]
    ]  # payloads as escaped texts, in the payload encoding
    # UTF-8 text (payloads and ASCII between them) as the escaped text of a JSON string; None
    # when it is not valid UTF-8. None: the payload encoding has no such way (see _joined_lines)
    escaped: Callable[[bytes], bytes | None] | None = None
    # the payload encoding by name (utf8, hex, base64): the compiled core escapes these itself,
    # as `strings` and `escaped` do; None: it hands the batch to the pure batch_json
    encoding: str | None = None


# The separator of payloads escaped together: the one character below U+0080 that JSON text
# keeps as it is (render/jsonl.py's escapers keep it too), and rare in payloads
DEL = b"\x7f"
