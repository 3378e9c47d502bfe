"""The twin rule (docs/design.md): each compiled module (formats/*.pyx) has a pure module beside it
(the same name + "_py") with the same public names in the same order, formats/byte_loops.py
re-exports exactly those names, and the two give the same answers on the same input (here for the
loops tested nowhere else; tests/formats/test_core.py holds the scanners and the walks equal).

The name checks read the sources and run on either core; the comparisons skip, with the reason,
when the compiled core is not built."""

from __future__ import annotations

import ast
import importlib
import io
import re
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.formats import byte_loops
from tests.formats.test_scan import damaged_chains
from tests.helpers.strategies import batch_chains, v2_batches

FORMATS = Path(byte_loops.__file__).parent
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# a function of a compiled module that Python sees: `def` or `cpdef` at the top level
_PYX_DEF = re.compile(r"^c?p?def\s+(?:[\w\[\]*]+\s+)*?(\w+)\s*\(", re.M)


def _pyx_names(twin: str) -> list[str]:
    """The public functions of formats/<twin>.pyx, in source order."""
    text = (FORMATS / f"{twin}.pyx").read_text()
    return [
        n
        for n, line in ((m.group(1), m.group(0)) for m in _PYX_DEF.finditer(text))
        if not n.startswith("_") and not line.startswith("cdef")
    ]


def _py_names(twin: str, functions_only: bool = True) -> list[str]:
    """The public top-level names of formats/<twin>_py.py (functions, and with not
    `functions_only` the names assigned too), in source order."""
    tree = ast.parse((FORMATS / f"{twin}_py.py").read_text())
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.append(node.name)
        elif not functions_only and isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def _compiled(twin: str):
    try:
        return importlib.import_module(f"kafkalog_cli.formats.{twin}")
    except ImportError as e:
        pytest.skip(f"the compiled core is not built ({e})")


def test_every_compiled_module_has_a_pure_twin_and_byte_loops_knows_both():
    pyx = sorted(p.stem for p in FORMATS.glob("*.pyx"))
    assert pyx == sorted(byte_loops.TWINS)
    for twin in pyx:
        assert (FORMATS / f"{twin}_py.py").exists(), (
            f"formats/{twin}.pyx has no pure twin {twin}_py.py"
        )


@pytest.mark.parametrize("twin", sorted(byte_loops.TWINS))
def test_the_twins_have_the_same_public_functions_in_the_same_order(twin):
    assert _pyx_names(twin) == _py_names(twin)
    assert _py_names(twin)  # the check reads something


@pytest.mark.parametrize("twin", sorted(byte_loops.TWINS))
def test_byte_loops_re_exports_the_pure_twins_public_names_in_order(twin):
    assert list(byte_loops.TWINS[twin]) == _py_names(twin, functions_only=False)


@pytest.mark.parametrize("twin", sorted(byte_loops.TWINS))
def test_the_built_compiled_module_has_every_name_of_its_pure_twin(twin):
    compiled = _compiled(twin)
    pure = importlib.import_module(f"kafkalog_cli.formats.{twin}_py")
    for name in byte_loops.TWINS[twin]:
        assert callable(getattr(pure, name)) == callable(getattr(compiled, name)), name


@pytest.mark.parametrize("twin", sorted(byte_loops.TWINS))
def test_neither_twin_imports_the_other(twin):
    pure = (FORMATS / f"{twin}_py.py").read_text()
    compiled = (FORMATS / f"{twin}.pyx").read_text()
    assert not re.search(rf"\b{twin}\b(?!_py)", re.sub(r'"""[\s\S]*?"""|#.*', "", pure))
    assert not re.search(rf"\b{twin}_py\b", re.sub(r'"""[\s\S]*?"""|#.*', "", compiled))


def test_only_byte_loops_reads_the_environment_variable():
    src = FORMATS.parent
    readers = sorted(
        str(p.relative_to(src)) for p in src.rglob("*.py") if byte_loops.ENV in p.read_text()
    )
    assert readers == ["formats/byte_loops.py"]


# ------------------------------------------------------------------ the loops, compiled == pure
@PROPERTY
@given(
    buf=st.one_of(batch_chains(), damaged_chains()),
    deep=st.booleans(),
    limit=st.sampled_from([1, 200, 1 << 20]),
    flags=st.sampled_from([(True, False), (True, True), (False, True)]),
)
def test_text_of_batches_compiled_is_pure(buf, deep, limit, flags):
    """The same text, stopping place and pairs; a batch one of them stops at, the caller's loop
    writes (so stopping earlier is allowed only at a batch the other writes the same)."""
    compiled = _compiled("_scan")
    from kafkalog_cli.formats import _scan_py as pure

    got = []
    for twin in (compiled, pure):
        pairs: list = []
        text, pos, last = twin.text_of_batches(buf, 0, len(buf), -1, pairs, *flags, limit, deep)
        got.append((text, pos, last, pairs))
    assert got[0] == got[1]


def _chains():
    """Chains of any batches (legacy, damaged, cut short), and of v2 batches of every record shape
    (null keys and values, headers, sequences) and codec."""
    return st.one_of(
        batch_chains(),
        damaged_chains(),
        st.lists(v2_batches(), min_size=1, max_size=4).map(b"".join),
    )


@PROPERTY
@given(
    buf=_chains(),
    deep=st.booleans(),
    limit=st.sampled_from([1, 200, 1 << 20]),
    encoding=st.sampled_from(["utf8", "base64", "hex"]),
)
def test_lines_of_batches_compiled_is_pure(buf, deep, limit, encoding):
    """The same JSON Lines and stopping place, with the batch and record formats render/jsonl.py
    hands over: the twins run inside a dump, each run asked of both."""
    compiled = _compiled("_scan")
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.formats import _scan_py as pure
    from kafkalog_cli.render.jsonl import JsonDumper, record_prefix

    given_path = "t-0/00000000000000000000.log"
    runs = []

    def both(buf, pos, end, layout, batch_format, record_format, _, records):
        got = [
            twin.lines_of_batches(
                buf, pos, end, layout, batch_format, record_format, limit, records
            )
            for twin in (compiled, pure)
        ]
        runs.append(got)
        return got[0]

    d = JsonDumper(io.BytesIO(), deep=deep, payload_encoding=encoding)
    d._prefix_bytes = record_prefix(given_path).encode()
    d._run = both
    try:
        d._batches(buf, 0, len(buf), given_path)
    except KafkalogError:
        pass
    assert runs
    for c, p in runs:
        assert c == p


@PROPERTY
@given(buf=_chains(), data=st.data())
def test_columns_of_batches_compiled_is_pure(buf, data):
    """The same columns, batch values, rows' batch indexes and stopping place, under any view
    bounds, transactional choice, CRC check and rows and bytes limits."""
    compiled = _compiled("_scan")
    from kafkalog_cli.formats import _scan_py as pure
    from kafkalog_cli.formats.record_columns import RecordColumns

    lo = data.draw(st.sampled_from([-(2**63), 0, 5, 20]))
    hi = data.draw(st.sampled_from([2**63 - 1, 3, 25]))
    txn, verify = data.draw(st.booleans()), data.draw(st.booleans())
    rows, size = (
        data.draw(st.sampled_from([1, 4, 8192])),
        data.draw(st.sampled_from([1, 100, 1 << 20])),
    )
    got = []
    for twin in (compiled, pure):
        cols, values, of_row = RecordColumns(), tuple([] for _ in range(6)), array("i")
        pos = twin.columns_of_batches(
            buf, 0, len(buf), cols, values, of_row, lo, hi, txn, verify, rows, size
        )
        got.append(
            (
                pos,
                cols.rows,
                b"".join(cols.data),
                cols.size,
                cols.payload,
                cols.offsets,
                cols.timestamps,
                cols.sequences,
                cols.spans,
                cols.null_keys,
                cols.null_values,
                cols.header_ends,
                cols.header_spans,
                cols.null_header_values,
                values,
                of_row,
            )
        )
    assert got[0] == got[1]


@PROPERTY
@given(
    data=st.data(), whole=st.binary(max_size=200), utf8=st.booleans(), first=st.sampled_from([0, 2])
)
def test_gather_spans_compiled_is_pure(data, whole, utf8, first):
    compiled = _compiled("_scan")
    from kafkalog_cli.formats import _scan_py as pure

    n = data.draw(st.integers(0, 8))
    bound = st.integers(0, len(whole) + 2)
    spans = array("i")
    for _ in range(n):
        a, b = sorted((data.draw(bound), data.draw(bound)))
        c, d = sorted((data.draw(bound), data.draw(bound)))
        spans.extend([a, b, c, d])

    def outcome(f):
        try:
            return f(whole, spans, first, n, utf8)
        except ValueError as e:
            return "ValueError", str(e)

    assert outcome(compiled.gather_spans) == outcome(pure.gather_spans)


@PROPERTY
@given(
    data=st.data(),
    whole=st.binary(min_size=1, max_size=600) | st.text(max_size=200).map(str.encode),
    utf8=st.booleans(),
    first=st.sampled_from([0, 2]),
    forward=st.booleans(),
)
def test_gather_spans_of_many_rows_compiled_is_pure(data, whole, utf8, first, forward):
    """Past the rows where the pure twin gathers by numpy and pyarrow: spans running forward
    through the bytes (as RecordColumns' do) or not, a span out of range, UTF-8 or not."""
    compiled = _compiled("_scan")
    from kafkalog_cli.formats import _scan_py as pure

    n = data.draw(st.integers(64, 160))
    bound = st.integers(0, len(whole) + (0 if forward else 1))
    bounds = [data.draw(bound) for _ in range(4 * n)]
    if forward:
        bounds.sort()
    else:
        for i in range(0, 4 * n, 2):
            bounds[i : i + 2] = sorted(bounds[i : i + 2])
    spans = array("i", bounds)

    def outcome(f):
        try:
            return f(whole, spans, first, n, utf8)
        except ValueError as e:
            return "ValueError", str(e)

    assert outcome(compiled.gather_spans) == outcome(pure.gather_spans)


@PROPERTY
@given(data=st.data(), width=st.sampled_from([1, 2, 4, 8, 3]))
def test_take_fixed_width_compiled_is_pure(data, width):
    compiled = _compiled("_scan")
    from kafkalog_cli.formats import _scan_py as pure

    values = data.draw(st.binary(max_size=8 * 6))
    rows = array(
        "i",
        data.draw(
            st.lists(st.integers(-1, 7), max_size=12)
            | st.lists(st.integers(0, 5), min_size=64, max_size=100)
        ),
    )

    def outcome(f):
        try:
            return f(values, width, rows)
        except ValueError as e:
            return "ValueError", str(e)

    assert outcome(compiled.take_fixed_width) == outcome(pure.take_fixed_width)


@PROPERTY
@given(data=st.data(), alphabet=st.sampled_from([b"ab", b"abc\x00\xff", bytes(range(256))]))
def test_find_bytes_compiled_is_pure_is_bytes_find(data, alphabet):
    """The place bytes.find gives, on either core, over bytes and over an mmap: needles of 0 to
    40 bytes (the compiled search tests 16 places at a time on the first and last byte) made of
    few letters, so that near misses and overlapping matches abound, anywhere in the haystack
    and across the range's ends."""
    import mmap

    compiled = _compiled("_framing_walk")
    from kafkalog_cli.formats import _framing_walk_py as pure

    letters = st.sampled_from(list(alphabet)).map(lambda c: bytes([c]))
    hay = b"".join(data.draw(st.lists(letters, min_size=1, max_size=200)))
    if data.draw(st.booleans()):  # a needle cut out of the haystack: a match, or its near miss
        a = data.draw(st.integers(0, len(hay)))
        needle = hay[a : a + data.draw(st.integers(0, 40))]
        if needle and data.draw(st.booleans()):
            needle = needle[:-1] + bytes([needle[-1] ^ 1])
    else:
        needle = b"".join(data.draw(st.lists(letters, max_size=40)))
    start = data.draw(st.integers(0, len(hay) + 2))
    end = data.draw(st.integers(0, len(hay) + 20))
    m = mmap.mmap(-1, len(hay))
    m[:] = hay
    want = hay.find(needle, start, end)
    for buf in (hay, m, bytearray(hay), memoryview(hay)):
        assert compiled.find_bytes(buf, needle, start, end) == want
        assert pure.find_bytes(buf, needle, start, end) == want
    m.close()


@st.composite
def _producer_chains(draw) -> bytes:
    """Uncompressed v2 batches of two producers and none: data, transactional and control
    batches (a transaction's marker), with a compressed one now and then."""
    from kafkalog_cli.formats.compression import Compression
    from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

    out, base = [], draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 12))):
        pid = draw(st.sampled_from([-1, 1, 1, 2]))
        kind = draw(st.sampled_from(["data", "txn", "txn", "control"]))
        n = 1 if kind == "control" else draw(st.integers(1, 3))
        recs = [SimpleRecord(b"k", b"v" * draw(st.integers(0, 9)), 1000) for _ in range(n)]
        out.append(
            build_v2_batch(
                recs,
                base,
                compression=draw(st.sampled_from([Compression.NONE] * 4 + [Compression.GZIP])),
                producer_id=pid,
                producer_epoch=-1 if pid < 0 else 0,
                base_sequence=-1 if pid < 0 else 0,
                is_transactional=kind != "data",
                is_control=kind == "control",
            )
        )
        if draw(st.integers(0, 9)) == 0:  # a last offset delta gone negative
            out[-1] = out[-1][:23] + (-1 % 2**32).to_bytes(4, "big") + out[-1][27:]
        base += n
    return b"".join(out)


def _passed_by_decode(buf, pos, end, stop):
    """pass_plain_batches's reference: the batches iter_batches walks, while each is a complete
    uncompressed v2 batch with its whole header ending by `stop`, noted as erase notes a batch."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.formats.records import ATTR_COMPRESSION_MASK, iter_batches

    last_data: dict = {}
    open_txn: dict = {}
    last = None
    try:
        for b in iter_batches(buf, pos, min(end, len(buf))):
            if (
                b.magic != 2
                or b.size < 61
                or b.position + b.size > stop
                or b.attributes & ATTR_COMPRESSION_MASK
                or b.last_offset_delta < 0
                or b.last_offset > 2**63 - 1
            ):
                break
            if b.producer_id >= 0:
                if b.is_control:
                    open_txn.pop(b.producer_id, None)
                else:
                    last_data[b.producer_id] = b.last_offset
                    if b.is_transactional:
                        open_txn.setdefault(b.producer_id, b.last_offset)
            last, pos = b.last_offset, b.position + b.size
    except KafkalogError:  # a size below 14: the caller's walk says so
        pass
    return (pos, last), last_data, open_txn


@PROPERTY
@given(buf=st.one_of(_producer_chains(), _chains()), data=st.data())
def test_pass_plain_batches_compiled_is_pure_is_a_decode(buf, data):
    """Where the walk stops, the last offset passed and each producer's notes, from any start
    position and to any `stop`, over damaged and legacy chains too."""
    compiled = _compiled("_framing_walk")
    from kafkalog_cli.formats import _framing_walk_py as pure

    pos = data.draw(st.sampled_from([0, 0, 0, 1, 61]))
    stop = data.draw(st.just(len(buf) + 5) | st.integers(0, len(buf) + 5))
    end = data.draw(st.sampled_from([len(buf), len(buf) + 3, stop]))
    want = _passed_by_decode(buf, pos, end, stop)
    for twin in (compiled, pure):
        last_data: dict = {}
        open_txn: dict = {}
        got = twin.pass_plain_batches(buf, pos, end, stop, last_data, open_txn)
        assert (got, last_data, open_txn) == want, twin.__name__
