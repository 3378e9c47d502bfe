"""The compiled twins (formats/_scan.pyx, _framing_walk.pyx) against their pure twins
(formats/_scan_py.py, _framing_walk_py.py: the reference and the fallback) and against the reference
decoder (RecordBatch.records() and the renderers'
general paths): the same bytes over every record shape (null keys and values, headers, control
batches, every codec, LogAppendTime, sequences that wrap, offsets past 64 bits), and damaged
input giving up in both or neither, so the dump shows the same error.

The comparisons skip, with the reason, when the compiled core is not built (an install without
a C compiler); the tests of which core is active run everywhere."""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats import _framing_walk_py as pure_framing
from kafkalog_cli.formats import _scan_py as pure
from kafkalog_cli.formats import byte_loops
from kafkalog_cli.formats.compression import Compression
from kafkalog_cli.formats.record_columns import RecordColumns
from kafkalog_cli.formats.records import (
    Header,
    SimpleRecord,
    build_v2_batch,
    iter_batches,
    set_v2_crc,
)
from kafkalog_cli.formats.v2_region import Declined
from kafkalog_cli.render import jsonl, kafka
from kafkalog_cli.render.jsonl import JsonDumper
from kafkalog_cli.render.kafka import DumpOptions, KafkaDumper
from tests.helpers.segments import STRING, damaged_batch
from tests.helpers.segments import batch as _batch
from tests.helpers.segments import damaged as _damaged
from tests.helpers.segments import general_text as _general_text
from tests.helpers.segments import segment as _segment
from tests.helpers.strategies import CODECS, damaged_chains, searches, v2_batches

try:
    from kafkalog_cli.formats import _scan as compiled

    WHY_NOT = None
except ImportError as e:
    compiled = None
    WHY_NOT = f"the compiled core is not built (kafkalog_cli.formats._scan: {e}); only the pure core is tested"

needs_compiled = pytest.mark.skipif(compiled is None, reason=WHY_NOT or "")
PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
FLAGS = [(True, False), (True, True), (False, True), (False, False)]  # (metadata, data_log)
ENCODINGS = ["utf8", "hex", "base64"]


def _outcome(fn, *args):
    """What a scanner gives: ("ok", result) or ("gives up", None) (the general path then judges)."""
    try:
        return "ok", fn(*args)
    except Exception:
        return "gives up", None


def _layout(encoding: str):
    return JsonDumper(io.BytesIO(), deep=True, payload_encoding=encoding).layout


# ------------------------------------------------------------------ which core runs
def test_the_environment_variable_chooses_the_core_this_process_runs():
    chosen = pure if byte_loops.forced_pure() or compiled is None else compiled
    assert byte_loops.core() == ("pure" if chosen is pure else "compiled")
    for name in byte_loops.SCAN:
        assert getattr(byte_loops, name) is getattr(chosen, name)
    assert kafka.batch_text is chosen.batch_text and jsonl.batch_json is chosen.batch_json
    assert (
        kafka.text_of_batches is chosen.text_of_batches
        and jsonl.lines_of_batches is chosen.lines_of_batches
    )


@pytest.mark.parametrize("value, pure", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_kafkalog_version_says_which_core_runs(value, pure):
    env = {**os.environ, byte_loops.ENV: value}
    p = subprocess.run(
        [sys.executable, "-m", "kafkalog_cli", "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("kafkalog, version ")
    if pure:
        assert p.stdout.rstrip().endswith(f"pure-Python core ({byte_loops.ENV} is set)")
    elif compiled is not None:
        assert p.stdout.rstrip().endswith("compiled core (Cython)")
    else:
        assert "pure-Python core (the compiled core is not built)" in p.stdout


def test_a_core_that_does_not_import_leaves_the_pure_core(monkeypatch):
    import kafkalog_cli.formats

    monkeypatch.setattr(byte_loops, "_why_pure", None)
    monkeypatch.setattr(byte_loops, "_chosen", {})
    monkeypatch.setitem(sys.modules, "kafkalog_cli.formats._scan", None)  # import fails
    monkeypatch.delattr(kafkalog_cli.formats, "_scan", raising=False)
    assert byte_loops.twin("_scan") is pure
    assert byte_loops.core() == "pure"
    assert byte_loops.describe() == "pure-Python core (the compiled core is not built)"


# ------------------------------------------------------------------ record text
@needs_compiled
@PROPERTY
@given(
    raw=v2_batches(),
    flags=st.sampled_from(FLAGS),
    before=st.sampled_from([-1, 0, 10**12, 2**63 - 1, 2**70]),
)
def test_record_text_compiled_is_pure_is_reference(raw, flags, before):
    """The same text and pairs; past 64 bits (a last offset of 2**63 - 1 or more) the compiled
    one declines, and the caller's general path writes what the pure one does."""
    b = _batch(raw)
    c = _outcome(compiled.batch_text, b, before, [], *flags)
    p = _outcome(pure.batch_text, b, before, [], *flags)
    assert p[0] == "ok"  # no fallback hides a difference
    assert c == p if before < 2**63 - 1 else c == ("gives up", None)
    pairs: list = []
    text, last = pure.batch_text(b, before, pairs, *flags)
    assert (text.encode("utf-8", "replace"), last, pairs) == _general_text(b, before, *flags)


@needs_compiled
@PROPERTY
@given(
    raw=v2_batches(codecs=[Compression.NONE]),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    flags=st.sampled_from(FLAGS),
)
def test_record_text_of_damaged_records_gives_up_in_both_or_neither(raw, at, xor, flags):
    b = _damaged(raw, at, xor)
    pure_pairs: list = []
    c = _outcome(compiled.batch_text, b, 5, [], *flags)
    p = _outcome(pure.batch_text, b, 5, pure_pairs, *flags)
    assert c[0] == p[0] and c == p


def _control(offset: int) -> bytes:
    key, value = struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 7)
    return build_v2_batch(
        [SimpleRecord(key=key, value=value, timestamp=1_700_000_000_000)],
        offset,
        producer_id=42,
        producer_epoch=1,
        is_transactional=True,
        is_control=True,
    )


@needs_compiled
@pytest.mark.parametrize("flags", FLAGS)
def test_control_batches_and_headers_are_the_same_text(flags):
    recs = [
        SimpleRecord(
            key=None if i % 2 else b"k",
            value=None if i % 3 else "\u00e9\xff".encode("latin-1"),
            timestamp=i,
            headers=(Header("tr\u00e9", b"x"), Header("", None)) if i % 4 else (),
        )
        for i in range(9)
    ]
    for raw in (_control(7), build_v2_batch(recs, 0), build_v2_batch([], 3)):
        b = _batch(raw)
        assert _outcome(compiled.batch_text, b, -1, [], *flags) == _outcome(
            pure.batch_text, b, -1, [], *flags
        )


# ------------------------------------------------------------------ record JSON
@needs_compiled
@PROPERTY
@given(raw=v2_batches(), encoding=st.sampled_from(ENCODINGS))
def test_record_json_compiled_is_pure(raw, encoding):
    b = _batch(raw)
    layout = _layout(encoding)
    c = _outcome(compiled.batch_json, b, layout)
    assert c == _outcome(pure.batch_json, b, layout)
    assert c[0] == "ok"


_TRICKY = st.lists(
    st.sampled_from(
        [
            b"%",
            b"%b",
            b"%d",
            b"%%",
            b"\x7f",
            b"\x00",
            b"\x1f",
            b"\n",
            b'"',
            b"\\",
            b"/",
            b"plain",
            "\u00e9\u2028\U0001f600".encode(),
            b"\xff",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xe0\x80",
            b"\xc0\xaf",
            b"\xf0\x9f\x98",
        ]
    ),
    max_size=6,
).map(b"".join)
_HEADERS = st.lists(
    st.tuples(
        st.sampled_from(["h", "", "%", "\x7f", "caf\u00e9", '"\\\n', "\x01"]), st.none() | _TRICKY
    ),
    max_size=3,
)


@needs_compiled
@PROPERTY
@given(
    records=st.lists(
        st.tuples(st.none() | _TRICKY, st.none() | _TRICKY, _HEADERS), min_size=0, max_size=8
    ),
    producer=st.sampled_from([None, 0, 2**31 - 3]),
    codec=st.sampled_from(CODECS),
    encoding=st.sampled_from(ENCODINGS),
    control=st.booleans(),
)
def test_tricky_payloads_are_the_same_json_and_text(records, producer, codec, encoding, control):
    """Payloads that JSON escapes, invalid and overlong UTF-8, encoded surrogates, truncated
    sequences, %-syntax, DEL; header keys and values likewise; null keys and values."""
    recs = [
        SimpleRecord(
            key=k, value=v, timestamp=1000 + 70 * i, headers=tuple(Header(hk, hv) for hk, hv in hs)
        )
        for i, (k, v, hs) in enumerate(records)
    ]
    raw = build_v2_batch(
        recs,
        5,
        compression=codec,
        producer_id=-1 if producer is None else 7,
        producer_epoch=-1 if producer is None else 0,
        base_sequence=-1 if producer is None else producer,
        is_control=control,
    )
    b = _batch(raw)
    layout = _layout(encoding)
    c = _outcome(compiled.batch_json, b, layout)
    assert c == _outcome(pure.batch_json, b, layout)
    assert c[0] == "ok" or control  # JSON's control records: the general path's
    for flags in FLAGS:
        assert _outcome(compiled.batch_text, b, 4, [], *flags) == _outcome(
            pure.batch_text, b, 4, [], *flags
        )


@needs_compiled
@PROPERTY
@given(
    raw=v2_batches(codecs=[Compression.NONE]),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    encoding=st.sampled_from(ENCODINGS),
)
def test_record_json_of_damaged_records_gives_up_in_both_or_neither(raw, at, xor, encoding):
    b = _damaged(raw, at, xor)
    layout = _layout(encoding)
    c = _outcome(compiled.batch_json, b, layout)
    assert c == _outcome(pure.batch_json, b, layout)


@needs_compiled
def test_offsets_and_timestamps_past_64_bits_are_the_pure_cores():
    """The compiled core's numbers are 64-bit: a base offset near the top makes it decline the
    batch (the caller's general path, Python ints, writes it); the pure one writes it, and the
    dumps on either core are the same."""
    raw = bytearray(build_v2_batch([SimpleRecord(key=b"k", value=b"v", timestamp=5)] * 3, 0))
    struct.pack_into(">q", raw, 0, 2**63 - 2)  # base offset: + delta 2 overflows
    struct.pack_into(">q", raw, 27, 2**63 - 1)  # base timestamp
    raw = set_v2_crc(raw)
    b = _batch(raw)
    for flags in FLAGS:
        with pytest.raises(Declined):
            compiled.batch_text(b, -1, [], *flags)
        assert _outcome(pure.batch_text, b, -1, [], *flags)[0] == "ok"
    for encoding in ENCODINGS:
        layout = _layout(encoding)
        c = _outcome(compiled.batch_json, b, layout)
        assert c == ("gives up", None) or c == _outcome(pure.batch_json, b, layout)
    with tempfile.TemporaryDirectory() as d:
        for data_log in (False, True):
            assert _text_dump(
                raw, Path(d), compiled.batch_text, print_data_log=data_log
            ) == _text_dump(raw, Path(d), pure.batch_text, print_data_log=data_log)
        for encoding in ENCODINGS:
            assert _json_dump(raw, Path(d), compiled.batch_json, encoding) == _json_dump(
                raw, Path(d), pure.batch_json, encoding
            )


# ------------------------------------------------------------------ deep verify
@needs_compiled
@PROPERTY
@given(raw=v2_batches())
def test_v2_records_ok_compiled_takes_every_well_formed_batch(raw):
    b = _batch(raw)
    assert compiled.v2_records_ok(b) is True and pure.v2_records_ok(b) is True


@needs_compiled
@PROPERTY
@given(
    raw=v2_batches(codecs=[Compression.NONE, Compression.GZIP]),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    field=st.sampled_from(["records", "last_offset_delta", "count"]),
)
def test_v2_records_ok_compiled_is_pure(raw, at, xor, field):
    data = bytearray(raw)
    if field == "records":
        b = _damaged(raw, at, xor)
    else:
        struct.pack_into(">i", data, 23 if field == "last_offset_delta" else 57, at % 40 - 3)
        b = _batch(set_v2_crc(data))
    c, p = _outcome(compiled.v2_records_ok, b), _outcome(pure.v2_records_ok, b)
    assert (c[0] == "ok" and c[1]) == (
        p[0] == "ok" and p[1]
    )  # passes in both, or asks the reference in both


# ------------------------------------------------------------------ verify-crc's walk (formats/_framing_walk)
try:
    from kafkalog_cli.formats import _framing_walk as compiled_framing
except ImportError:
    compiled_framing = None
needs_compiled_framing = pytest.mark.skipif(
    compiled_framing is None, reason=WHY_NOT or "the compiled core is not built"
)


def _checked(buf: bytes, deep: bool, run, stride: int = 0):
    """check_batches's whole answer (findings with their messages and CRCs, in order), with `run`
    as its walk over sound batches (None: a walk that takes none, check_batches's loop alone);
    `stride` > 0 tells of the stretches walked
    every `stride` bytes, as verify-crc does every 64 MiB."""
    from kafkalog_cli.formats import framing

    told: list = []
    with pytest.MonkeyPatch.context() as m:
        m.setattr(
            byte_loops,
            "check_sound_batches",
            run or (lambda buf, pos, end, prev, *_: (pos, 0, None, None, prev)),
        )
        if stride:
            m.setattr(framing, "WALKED_BYTES", stride)
        c = framing.check_batches(
            buf,
            0,
            len(buf),
            file="f.log",
            deep=deep,
            walked=(lambda a, b: told.append((a, b))) if stride else None,
        )
    return c, told


@needs_compiled_framing
@PROPERTY
@given(buf=damaged_chains(), deep=st.booleans(), stride=st.sampled_from([0, 1, 700]))
def test_check_batches_compiled_is_pure(buf, deep, stride):
    c = _checked(buf, deep, compiled_framing.check_sound_batches, stride)
    assert (
        c
        == _checked(buf, deep, pure_framing.check_sound_batches, stride)
        == _checked(buf, deep, None, stride)
    )


@needs_compiled_framing
@PROPERTY
@given(
    buf=damaged_chains(),
    target=st.sampled_from([1, 100, 5000]),
    tail=st.sampled_from([0, 50, 10**6]),
    stride=st.sampled_from([1, 64 << 20]),
)
def test_batch_cuts_compiled_is_pure(buf, target, tail, stride):
    from kafkalog_cli.formats import framing

    def cuts(compiled: bool):
        told: list = []
        with pytest.MonkeyPatch.context() as m:
            m.setattr(
                byte_loops,
                "batch_cuts",
                compiled_framing.batch_cuts if compiled else pure_framing.batch_cuts,
            )
            m.setattr(framing, "WALKED_BYTES", stride)
            return framing.batch_cuts(
                buf, 0, len(buf), target, tail, lambda a, b: told.append((a, b))
            ), told

    assert cuts(True) == cuts(False)


@needs_compiled_framing
@PROPERTY
@given(
    data=st.binary(max_size=3 * 8192 * 2 + 800),
    skip=st.integers(0, 7),
    size=st.sampled_from([None, 767, 768, 769, 24575, 24576, 24577, 50000]),
)
def test_the_compiled_crc32c_is_the_packages(data, skip, size):
    """_crc32c.h's three-stream CRC-32C (verify-crc's, and dump-log's isvalid) against the
    crc32c package, over every alignment and the lengths where its stream sizes change."""
    from kafkalog_cli.formats.crc import crc32c

    if size is not None:
        data = (data * (size // max(len(data), 1) + 1))[:size] if data else bytes(size)
    piece = data[skip:]
    assert compiled_framing.crc32c_of(piece) == crc32c(piece) == pure_framing.crc32c_of(piece)


# ------------------------------------------------------------------ whole dumps, both cores
def _text_dump(
    data: bytes, tmp_path, fast, deep: bool = True, **opts
) -> tuple[bytes, bytes, str | None]:
    """dump-log's text of `data` with `fast` as the record scanner, and the compiled batch loop
    (text_of_batches) when `fast` is the compiled scanner; `deep` False: the batch lines only."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    out, err = io.BytesIO(), io.BytesIO()
    d = KafkaDumper(out, err, DumpOptions(parser=STRING, deep_iteration=deep, **opts))
    d._run = (compiled if fast is compiled.batch_text else pure).text_of_batches
    error = None
    with pytest.MonkeyPatch.context() as m:
        m.setattr(kafka, "batch_text", fast)
        try:
            d.dump(str(path))
            d.finish()
        except KafkalogError as e:
            error = str(e)
    return out.getvalue(), err.getvalue(), error


def _json_dump(
    data: bytes, tmp_path, fast, encoding: str, deep: bool = True
) -> tuple[bytes, str | None]:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    out = io.BytesIO()
    d = JsonDumper(out, deep=deep, payload_encoding=encoding)
    d._run = (
        compiled if fast is compiled.batch_json else pure
    ).lines_of_batches  # the run of batches too
    error = None
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jsonl, "batch_json", fast)
        try:
            d.dump(str(path))
        except KafkalogError as e:
            error = str(e)
    return out.getvalue(), error


@needs_compiled
@pytest.mark.parametrize("data_log", [False, True])
def test_a_segment_of_every_codec_legacy_and_control_batches_dumps_the_same(tmp_path, data_log):
    data = _segment() + _control(10**6)
    assert _text_dump(data, tmp_path, compiled.batch_text, print_data_log=data_log) == _text_dump(
        data, tmp_path, pure.batch_text, print_data_log=data_log
    )
    if not data_log:  # the batch lines alone
        assert _text_dump(data, tmp_path, compiled.batch_text, deep=False) == _text_dump(
            data, tmp_path, pure.batch_text, deep=False
        )
        assert _json_dump(data, tmp_path, compiled.batch_json, "utf8", deep=False) == _json_dump(
            data, tmp_path, pure.batch_json, "utf8", deep=False
        )
    for encoding in ENCODINGS:
        assert _json_dump(data, tmp_path, compiled.batch_json, encoding) == _json_dump(
            data, tmp_path, pure.batch_json, encoding
        )


@needs_compiled
@PROPERTY
@given(
    raw=v2_batches(codecs=[Compression.NONE]),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    data_log=st.booleans(),
)
def test_a_damaged_segment_dumps_the_same_bytes_and_error(tmp_path, raw, at, xor, data_log):
    """A record damaged under a right CRC: both cores give up on the batch, and the general
    path writes the same lines and the same error (file and byte position)."""
    good = build_v2_batch([SimpleRecord(key=b"a", value=b"b", timestamp=1)], 0)
    b = _damaged(raw, at, xor)
    data = good + bytes(b.buf) + good
    text = _text_dump(data, tmp_path, compiled.batch_text, print_data_log=data_log)
    assert text == _text_dump(data, tmp_path, pure.batch_text, print_data_log=data_log)
    lines = _text_dump(
        data, tmp_path, compiled.batch_text, deep=False
    )  # no record walked: no error
    assert lines == _text_dump(data, tmp_path, pure.batch_text, deep=False) and lines[2] is None
    lines = _json_dump(data, tmp_path, compiled.batch_json, "utf8", deep=False)
    assert (
        lines == _json_dump(data, tmp_path, pure.batch_json, "utf8", deep=False)
        and lines[1] is None
    )
    assert _json_dump(data, tmp_path, compiled.batch_json, "utf8") == _json_dump(
        data, tmp_path, pure.batch_json, "utf8"
    )


@needs_compiled
@PROPERTY
@given(
    chain=st.lists(
        v2_batches() | st.builds(_control, st.integers(0, 2**40)), min_size=1, max_size=5
    ),
    cut=st.integers(0, 200),
    flags=st.sampled_from(FLAGS),
    deep=st.booleans(),
)
def test_the_compiled_batch_loop_writes_what_the_pure_loop_writes(
    tmp_path, chain, cut, flags, deep
):
    """text_of_batches and lines_of_batches (batch lines and records, a run of batches at a time) against
    render/kafka.py's and render/jsonl.py's loops on the pure core: chains of any batches, offsets jumping (the
    non-consecutive report), a cut-off last batch (invalid bytes at the end); text_of_batches
    also without --deep-iteration (batch lines only)."""
    metadata, data_log = flags
    data = b"".join(chain)
    data = data[: len(data) - cut]
    opts = dict(print_data_log=data_log and deep, skip_record_metadata=not metadata)
    assert _text_dump(data, tmp_path, compiled.batch_text, deep, **opts) == _text_dump(
        data, tmp_path, pure.batch_text, deep, **opts
    )
    encoding = ENCODINGS[cut % 3]
    assert _json_dump(data, tmp_path, compiled.batch_json, encoding, deep) == _json_dump(
        data, tmp_path, pure.batch_json, encoding, deep
    )


@needs_compiled
def test_the_compiled_batch_loop_renders_runs_and_leaves_the_rest():
    from kafkalog_cli.formats.records import build_legacy_batch

    good = build_v2_batch([SimpleRecord(key=b"k", value=b"v", timestamp=1)] * 3, 0)
    legacy = build_legacy_batch([SimpleRecord(key=b"k", value=b"v", timestamp=1)], 3, magic=1)
    data = good + legacy + good
    pairs: list = []
    text, pos, last = compiled.text_of_batches(data, 0, len(data), -1, pairs, True, False, 1 << 20)
    assert (pos, last, pairs) == (len(good), 2, [])  # stops at the legacy batch
    assert text.decode().splitlines()[0].startswith("baseOffset: 0 lastOffset: 2 count: 3 ")
    text, pos, last = compiled.text_of_batches(
        data, pos + len(legacy), len(data), 2, pairs, True, False, 1 << 20
    )
    assert (pos, last, pairs) == (len(data), 2, [(2, 0)])
    # batch lines only: records neither walked nor decompressed (an undecodable gzip payload under
    # a right CRC still gets its line, as kafka-dump-log prints it without --deep-iteration)
    from kafkalog_cli.formats.records import set_v2_crc

    gz = bytearray(
        build_v2_batch(
            [SimpleRecord(key=b"k", value=b"v" * 50, timestamp=1)], 0, compression=Compression.GZIP
        )
    )
    gz[-4:] = b"\0\0\0\0"
    gz = bytes(set_v2_crc(gz))
    text, pos, last = compiled.text_of_batches(
        gz + good, 0, len(gz) + len(good), -1, pairs, True, False, 1 << 20, False
    )
    assert pos == len(gz) + len(good) and last == -1 and len(text.decode().splitlines()) == 2
    assert (
        compiled.text_of_batches(gz, 0, len(gz), -1, [], True, False, 1 << 20)[1] == 0
    )  # deep: left to the loop


@needs_compiled
def test_the_compiled_core_takes_every_well_formed_v2_batch_of_the_segment():
    n = 0
    for b in iter_batches(_segment()):
        if b.magic == 2 and not b.is_control:
            compiled.batch_text(b, -1, [], True, True)
            for encoding in ENCODINGS:
                compiled.batch_json(b, _layout(encoding))
            assert compiled.v2_records_ok(b)
            n += 1
    assert n > 10


# ------------------------------------------------------------------ Arrow columns (export, the Spark source)
def _columns_of(scanner, batches) -> tuple:
    """What `scanner` leaves in one RecordColumns after the batches (each one it gives up on
    leaves the columns as they were): every field, the payload bytes joined."""
    cols = RecordColumns()
    gave_up = []
    for b in batches:
        try:
            scanner(b, cols)
        except Exception:
            gave_up.append(b.position)
    return (
        cols.rows,
        b"".join(cols.data),
        cols.size,
        cols.offsets.tolist(),
        cols.timestamps.tolist(),
        cols.sequences.tolist(),
        cols.spans.tolist(),
        cols.null_keys,
        cols.null_values,
        cols.header_ends.tolist(),
        cols.header_spans.tolist(),
        cols.null_header_values,
    ), gave_up


@needs_compiled
@PROPERTY
@given(chain=st.lists(v2_batches(), min_size=1, max_size=4))
def test_record_columns_compiled_are_pure(chain):
    """Every record shape and codec, several batches into one set of columns (positions shifted
    by the bytes before, header indexes counted on)."""
    batches = [_batch(raw) for raw in chain]
    assert _columns_of(compiled.scan_columns, batches) == _columns_of(pure.scan_columns, batches)


@needs_compiled
@PROPERTY
@given(raw=v2_batches(codecs=[Compression.NONE]), at=st.integers(0, 2**20), xor=st.integers(1, 255))
def test_record_columns_of_damaged_records_are_pure_or_the_reference(raw, at, xor):
    """A damaged batch: where both scanners take it, the same columns; where the compiled one
    gives up and the pure one does not, the reference decoder's rows (what arrow.py builds then)
    are the pure scanner's."""
    b = _damaged(raw, at, xor)
    fast, fast_gave_up = _columns_of(compiled.scan_columns, [b])
    slow, slow_gave_up = _columns_of(pure.scan_columns, [b])
    if not fast_gave_up and not slow_gave_up:
        assert fast == slow
    elif fast_gave_up and not slow_gave_up:
        ref = _columns_of(
            lambda b, cols: [
                cols.add_record(
                    r.offset,
                    r.timestamp,
                    r.sequence,
                    r.key,
                    r.value,
                    [(h.key.encode("utf-8"), h.value) for h in r.headers],
                )
                for r in b.records()
            ],
            [b],
        )
        assert not ref[1] and _rows_of(ref[0]) == _rows_of(slow)


def _rows_of(c: tuple) -> list:
    """RecordColumns' fields as rows of values (positions resolved into their bytes)."""
    (
        rows,
        data,
        _,
        offsets,
        timestamps,
        sequences,
        spans,
        null_keys,
        null_values,
        ends,
        hspans,
        null_hv,
    ) = c
    out, h = [], 0
    for i in range(rows):
        key = None if i in null_keys else data[spans[4 * i] : spans[4 * i + 1]]
        value = None if i in null_values else data[spans[4 * i + 2] : spans[4 * i + 3]]
        headers = []
        while h < ends[i]:
            headers.append(
                (
                    data[hspans[4 * h] : hspans[4 * h + 1]],
                    None if h in null_hv else data[hspans[4 * h + 2] : hspans[4 * h + 3]],
                )
            )
            h += 1
        out.append((offsets[i], timestamps[i], sequences[i], key, value, headers))
    return out


def _tables(tmp_path, data: bytes, bytes_per_batch: int | None = None, **kw) -> dict:
    """read_segment's rows of a segment (the Arrow record batches export and the Spark source
    build) with the compiled column scanner, the pure one, and none (the reference decoder's
    Record objects): their schemas and values, or the error."""
    from kafkalog_cli.spark import arrow

    d = tmp_path / "topic-7"
    d.mkdir(exist_ok=True)
    (d / "00000000000000000000.log").write_bytes(data)
    from kafkalog_cli.storage.logdir import segments_of

    (ref,) = segments_of([str(d)])

    def general(b, cols):
        raise Declined("the reference decoder, please")

    out = {}
    # each twin's scanner, run of batches and Arrow buffers; the reference: the pure twin's with
    # every batch's records from the reference decoder
    for name, twin, scanner in (
        ("compiled", compiled, compiled.scan_columns),
        ("pure", pure, pure.scan_columns),
        ("reference", pure, general),
    ):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(arrow, "scan_columns", scanner)
            for loop in ("gather_spans", "columns_of_batches", "take_fixed_width"):
                m.setattr(arrow, loop, getattr(twin, loop))
            if bytes_per_batch is not None:
                m.setattr(arrow, "BYTES_PER_BATCH", bytes_per_batch)
            try:
                got = [
                    (b.schema, b.to_pylist(), _parquet(b))
                    for b in arrow.read_segment(ref, arrow.columns("record"), **kw)
                ]
            except KafkalogError as e:
                got = ("error", e.message, e.position)
        out[name] = got
    return out


def _parquet(rb) -> bytes:
    """The Parquet file export writes of one record batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, rb.schema, compression="snappy") as w:
        w.write_batch(rb)
    return sink.getvalue().to_pybytes()


def _view(isolation: str, start: int, end: int, aborted: dict | None = None):
    from kafkalog_cli.ops.consumer_view import ConsumerView

    return ConsumerView(isolation, start, end, end, end, aborted=aborted or {})


@needs_compiled
@PROPERTY
@given(
    chain=st.lists(
        v2_batches() | st.builds(_control, st.integers(0, 2**40)), min_size=1, max_size=4
    ),
    rows=st.sampled_from([1, 7, 8192]),
    view=st.sampled_from(
        [
            None,
            ("read_uncommitted", 0, 2**62),
            ("read_committed", 3, 40),
            ("read_uncommitted", 10, 11),
        ]
    ),
    verify_crc=st.booleans(),
    bytes_per_batch=st.sampled_from([None, 1, 300]),
)
def test_arrow_tables_compiled_are_pure_are_reference(
    tmp_path, chain, rows, view, verify_crc, bytes_per_batch
):
    """Export's and the Spark source's tables, table for table, over every record shape, control
    batches, the consumer view's options (offset ranges, read_committed), verify_crc and Arrow
    batches ended by their rows or by their payload bytes."""
    import struct as _struct

    data, off = bytearray(), 0
    for raw in chain:  # offsets increasing from batch to batch, as a partition has them
        b = bytearray(raw)
        _struct.pack_into(">q", b, 0, off)
        off += _struct.unpack_from(">i", b, 23)[0] + 1
        data += b
    t = _tables(
        tmp_path,
        bytes(data),
        bytes_per_batch,
        rows_per_batch=rows,
        verify_crc=verify_crc,
        view=_view(*view) if view else None,
    )
    assert t["compiled"] == t["pure"] == t["reference"]


@needs_compiled
@pytest.mark.parametrize("corrupt", [False, True])
def test_arrow_tables_of_a_segment_of_every_codec_legacy_and_control_batches(tmp_path, corrupt):
    from tests.helpers.segments import corrupt_records as _corrupt_records

    data = _segment()
    t = _tables(tmp_path, _corrupt_records(data) if corrupt else data, rows_per_batch=50)
    assert t["compiled"] == t["pure"] == t["reference"]
    if corrupt:
        assert t["compiled"][0] == "error"
    else:
        assert sum(len(rows) for _, rows, _ in t["compiled"]) > 1000


def _run_chain() -> tuple[bytes, list[int]]:
    """Plain v2 batches (every codec), then a transactional one, a control one and a plain one:
    the chain and its batches' positions."""
    parts, off = [], 0
    for i, codec in enumerate(CODECS):
        recs = [
            SimpleRecord(
                key=b"k%d" % j, value=b"v" * j, timestamp=1000 + j, headers=(Header("h", None),)
            )
            for j in range(3)
        ]
        parts.append(build_v2_batch(recs, off, compression=codec))
        off += 3
    parts.append(
        build_v2_batch(
            [SimpleRecord(b"t", b"x", 2000)],
            off,
            producer_id=42,
            producer_epoch=1,
            is_transactional=True,
        )
    )
    parts.append(_control(off + 1))
    parts.append(build_v2_batch([SimpleRecord(None, None, 3000)], off + 2))
    positions, at = [], 0
    for p in parts:
        positions.append(at)
        at += len(p)
    return b"".join(bytes(p) for p in parts), positions + [at]


@needs_compiled
def test_columns_of_batches_takes_plain_batches_and_leaves_the_others_to_the_loop():
    """The compiled run takes a stretch of plain batches as scan_columns would take each, and
    stops at each batch the Python loop must judge, at its rows and bytes limits, at a view's
    bounds and at a CRC that fails when told to check."""
    from array import array

    data, at = _run_chain()
    plain = len(CODECS)

    def run(
        pos, lo=-(2**63), hi=2**63 - 1, txn=True, verify=True, rows=8192, size=1 << 20, buf=data
    ):
        cols, values, of_row = RecordColumns(), tuple([] for _ in range(6)), array("i")
        end = compiled.columns_of_batches(
            buf, pos, len(buf), cols, values, of_row, lo, hi, txn, verify, rows, size
        )
        return end, cols, values, of_row

    end, cols, values, of_row = run(0, txn=False)
    assert end == at[plain]  # every plain batch, up to the transactional one
    want = RecordColumns()
    for b in list(iter_batches(data))[:plain]:
        pure.scan_columns(b, want)
    assert _rows_of(_fields(cols)) == _rows_of(_fields(want)) and cols.rows == 3 * plain
    assert values[1] == [3 * i for i in range(plain)] and list(of_row) == [
        i for i in range(plain) for _ in range(3)
    ]
    assert values[0] == ["CreateTime"] * plain and values[4] == [False] * plain
    assert run(0)[0] == at[plain + 1]  # and that one too, where no transaction was aborted
    assert run(at[plain + 1])[0] == at[plain + 1]  # control
    assert run(at[plain + 2])[0] == at[-1]
    assert run(0, rows=4)[0] == at[2]  # stops once it holds 4 rows or more
    assert run(0, size=1)[0] == at[1]
    assert run(0, lo=1)[0] == 0 and run(0, hi=3 * plain - 1, txn=False)[0] == at[plain - 1]
    bad = bytearray(data)
    bad[at[1] + 70] ^= 1  # the second batch's records (its CRC fails)
    assert (
        run(0, buf=bytes(bad))[0] == at[1]
        and run(0, buf=bytes(bad), verify=False, txn=False)[0] == at[plain]
    )


@needs_compiled
def test_columns_of_batches_gives_a_batch_without_records_no_values():
    """An empty v2 batch (a compacted-away producer's, kept for its state) adds no row and, as
    _RecordRows.add, no batch values: the rows' batch indexes stay those of the pure path."""
    from array import array

    data = (
        build_v2_batch([SimpleRecord(b"a", b"1", 1)] * 3, 0)
        + build_v2_batch([], 3)
        + build_v2_batch([SimpleRecord(b"b", b"2", 2)] * 2, 4)
    )
    cols, values, of_row = RecordColumns(), tuple([] for _ in range(6)), array("i")
    end = compiled.columns_of_batches(
        data, 0, len(data), cols, values, of_row, -(2**63), 2**63 - 1, True, True, 8192, 1 << 20
    )
    assert end == len(data) and cols.rows == 5 and list(cols.offsets) == [0, 1, 2, 4, 5]
    assert values[1] == [0, 4] and list(of_row) == [0, 0, 0, 1, 1]


def _fields(c) -> tuple:
    return (
        c.rows,
        b"".join(c.data),
        c.size,
        c.offsets,
        c.timestamps,
        c.sequences,
        c.spans,
        c.null_keys,
        c.null_values,
        c.header_ends,
        c.header_spans,
        c.null_header_values,
    )


@needs_compiled
def test_take_fixed_width_and_gather_spans_are_take_and_cast():
    from array import array

    import pyarrow as pa

    values, rows = array("q", [5, -1, 2**62]), array("i", [0, 0, 2, 1, 2])
    want = pa.array(list(values), pa.int64()).take(pa.array(list(rows), pa.int32()))
    got = pa.Array.from_buffers(
        pa.int64(), 5, [None, pa.py_buffer(compiled.take_fixed_width(values, 8, rows))]
    )
    assert got.equals(want)
    with pytest.raises(ValueError):
        compiled.take_fixed_width(values, 8, array("i", [3]))
    whole = b"ab\xc3\xa9\xff"
    spans = array("i", [0, 2, 0, 0, 2, 4, 0, 0, 4, 5, 0, 0])
    assert compiled.gather_spans(whole, spans, 0, 2, True) == (
        array("i", [0, 2, 4]).tobytes(),
        b"ab\xc3\xa9",
    )
    assert (
        compiled.gather_spans(whole, spans, 0, 3, True) is None
    )  # \xff is not UTF-8: Java's decoding
    assert compiled.gather_spans(whole, spans, 0, 3)[1] == whole


# ------------------------------------------------------------------ key/value search (dump-log --key/--value)
def _searched(scanner, b, f) -> tuple:
    """What dump-log shows of a batch searched with `scanner`: the records it finds (and their
    places), or, where it gives up, what selection.py's fallback shows: the reference decoder's
    records that pass the filters, or its error."""
    indices: list = []
    try:
        return "found", scanner(b, f.search, indices), indices
    except Exception:
        pass
    try:
        recs = b.records()
    except Exception as e:
        return "error", str(e)
    found = [(i, r) for i, r in enumerate(recs) if f.record_matches(r)]
    return "found", [r for _, r in found], [i for i, _ in found]


@needs_compiled
@PROPERTY
@given(raw=v2_batches(), f=searches())
def test_search_compiled_is_pure_is_reference(raw, f):
    b = _batch(raw)
    fast = _searched(compiled.search_v2, b, f)
    assert fast == _searched(pure.search_v2, b, f)
    assert fast[1] == [r for r in b.records() if f.record_matches(r)]


@needs_compiled
@PROPERTY
@given(
    raw=v2_batches(codecs=[Compression.NONE]),
    f=searches(),
    at=st.integers(0, 2**20),
    xor=st.integers(1, 255),
    crc=st.booleans(),
)
def test_search_of_damaged_records_shows_the_same_on_both_cores(raw, f, at, xor, crc):
    b = damaged_batch(raw, at, xor, crc)
    assert _searched(compiled.search_v2, b, f) == _searched(pure.search_v2, b, f)


# ------------------------------------------------------------------ runs longer than one call
@needs_compiled
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_runs_past_their_size_and_a_percent_in_the_path_write_what_the_pure_loops_write(
    tmp_path, encoding
):
    """Several MiB of batches: the compiled loops stop at their size (render/parallel.RUN_BYTES)
    and go on; the JSON record lines carry a partition dir whose name holds '%' (laid into the
    lines' %-formats), with a control batch and a legacy batch in the middle."""
    from kafkalog_cli.formats.records import build_legacy_batch
    from kafkalog_cli.render.parallel import RUN_BYTES

    records = [
        SimpleRecord(
            key=b"k%d%%d" % i,
            value=bytes(range(i % 7, 200)),
            timestamp=1000 + i,
            headers=(Header("h%", b"%s"),) if i % 3 else (),
        )
        for i in range(100)
    ]
    parts, off = [], 0
    while sum(map(len, parts)) < 3 * RUN_BYTES:
        parts.append(build_v2_batch(records, off))
        off += len(records)
        if len(parts) == 40:
            parts.append(_control(off))
            parts.append(build_legacy_batch([SimpleRecord(b"a", b"b", 5)], off + 1, magic=1))
            off += 2
    data = b"".join(parts)
    where = tmp_path / "to%dpic%s-0"
    where.mkdir()
    fast_json, pure_json = (
        _json_dump(data, where, f, encoding) for f in (compiled.batch_json, pure.batch_json)
    )
    assert fast_json == pure_json and fast_json[1] is None
    assert b'"topic": "to%dpic%s"' in fast_json[0] and len(fast_json[0]) > 3 * RUN_BYTES
    assert _text_dump(data, where, compiled.batch_text, print_data_log=True) == _text_dump(
        data, where, pure.batch_text, print_data_log=True
    )


@needs_compiled
def test_numbers_at_every_count_of_digits_are_written_as_python_writes_them():
    """Offsets and timestamps at each power of ten and beside it (the compiled core counts a
    number's digits from its bit length)."""
    numbers = sorted({10**e + d for e in range(19) for d in (-1, 0, 1)} | {2**63 - 3, 2**62})
    for n in numbers:
        for ts in (n, -n, 0):
            b = _batch(
                build_v2_batch([SimpleRecord(b"k", b"v", ts), SimpleRecord(None, b"x", ts)], n)
            )
            for flags in FLAGS:
                assert compiled.batch_text(b, -1, [], *flags) == pure.batch_text(b, -1, [], *flags)
            assert compiled.batch_json(b, _layout("utf8")) == pure.batch_json(b, _layout("utf8"))
