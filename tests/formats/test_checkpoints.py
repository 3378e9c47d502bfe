"""Checkpoint and metadata text files against real Kafka files."""

from __future__ import annotations

import datetime as dt
from itertools import islice

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalog_cli.errors import CheckpointError
from kafkalog_cli.formats.checkpoints import (
    EpochEntry,
    PartitionMetadata,
    PartitionMetadataError,
    assign_epoch,
    encode_clean_shutdown,
    encode_leader_epoch_checkpoint,
    encode_meta_properties,
    encode_offset_checkpoint,
    encode_partition_metadata,
    java_date,
    load_leader_epoch_cache,
    parse_clean_shutdown,
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint,
    parse_offset_checkpoint_entries,
    parse_partition_metadata,
    parse_properties,
    truncate_from_end,
    truncate_from_start,
)
from tests.helpers.paths import SMALL


def read(rel: str) -> bytes:
    return (SMALL / rel).read_bytes()


# --- offset checkpoints ----------------------------------------------------------------------


def test_real_recovery_point_checkpoint():
    data = read("logdir-root/recovery-point-offset-checkpoint")
    offsets = parse_offset_checkpoint(data)
    assert len(offsets) == 13
    assert offsets[("multi-segment", 0)] == 600
    assert offsets[("txn", 0)] == 15
    # the broker's own entry order (a Scala mutable.HashMap's), from the keys alone
    assert encode_offset_checkpoint(offsets) == data
    assert encode_offset_checkpoint(offsets, kind="recovery-point-offset-checkpoint") == data


@pytest.mark.parametrize(
    "name",
    ["replication-offset-checkpoint", "log-start-offset-checkpoint", "cleaner-offset-checkpoint"],
)
def test_other_real_checkpoints_round_trip(name):
    data = read(f"logdir-root/{name}")
    offsets = parse_offset_checkpoint(data)
    assert encode_offset_checkpoint(offsets, kind=name) == data


def test_unknown_checkpoint_kind_is_refused():
    with pytest.raises(ValueError, match="not a root offset checkpoint"):
        encode_offset_checkpoint({("t", 0): 1}, kind="leader-epoch-checkpoint")


def test_empty_and_version_only_files_have_no_entries():
    assert parse_offset_checkpoint(b"") == {}
    assert parse_offset_checkpoint(b"0\n") == {}
    assert encode_offset_checkpoint({}) == b"0\n0\n"


def test_count_mismatch_message():
    with pytest.raises(CheckpointError) as e:
        parse_offset_checkpoint(b"0\n2\nt 0 5\n", path="/d/recovery-point-offset-checkpoint")
    assert e.value.message == (
        "Expected [2] entries in checkpoint file [/d/recovery-point-offset-checkpoint], "
        "but found only [1]"
    )
    with pytest.raises(CheckpointError, match=r"Expected \[0\] entries .* but found only \[1\]"):
        parse_offset_checkpoint(b"0\n0\nt 0 5\n")


def test_version_and_malformed_lines():
    with pytest.raises(CheckpointError) as e:
        parse_offset_checkpoint(b"1\n0\n", path="cp")
    assert (
        e.value.message == "Unrecognised version:1, expected version: 0 in checkpoint file at: cp"
    )
    with pytest.raises(CheckpointError) as e:
        parse_offset_checkpoint(b"0\n1\nt 0\n", path="cp")
    assert e.value.message == "Malformed line in checkpoint file [cp]: t 0"
    assert e.value.position == 4
    with pytest.raises(CheckpointError, match=r"Malformed line in checkpoint file \[cp\]: x"):
        parse_offset_checkpoint(b"0\nx\n", path="cp")
    # Pattern.split keeps a leading empty field; an empty line in the middle is malformed too
    with pytest.raises(CheckpointError, match="Malformed line"):
        parse_offset_checkpoint(b"0\n1\n t 0 5\n")
    with pytest.raises(CheckpointError, match="Malformed line"):
        parse_offset_checkpoint(b"0\n1\n\nt 0 5\n")
    with pytest.raises(CheckpointError, match="not a number"):
        parse_offset_checkpoint(b"0\n1\nt 0 99999999999999999999\n")
    with pytest.raises(CheckpointError, match="Illegal Capacity: -1"):
        parse_offset_checkpoint(b"0\n-1\n")


def test_header_line_errors_name_their_line():
    for data, message, position in (
        (b"v\n1\n", "Malformed line in checkpoint file [cp]: v", 0),
        (b"0\r\nx\n", "Malformed line in checkpoint file [cp]: x", 3),
        (b"0\n\xc3\xa9\n", "Malformed line in checkpoint file [cp]: \u00e9", 2),
        (b"0\n-1\n", "Illegal Capacity: -1 (entry count in checkpoint file [cp])", 2),
        (b"0\n 2\n", "Malformed line in checkpoint file [cp]:  2", 2),
        (b"0\n3\nt 0 5\n", "Expected [3] entries in checkpoint file [cp], but found only [1]", 2),
    ):
        with pytest.raises(CheckpointError) as e:
            parse_offset_checkpoint(data, path="cp")
        assert (e.value.message, e.value.position) == (message, position), data
    assert (
        parse_offset_checkpoint(b"")
        == parse_offset_checkpoint(b"0")
        == parse_offset_checkpoint(b"0\n")
        == {}
    )


def test_java_line_and_field_rules():
    # CRLF and lone CR end lines like BufferedReader.readLine; tabs and runs of blanks separate fields
    assert parse_offset_checkpoint(b"0\r\n2\rt\t0  5\na 1 +7") == {("t", 0): 5, ("a", 1): 7}
    assert parse_offset_checkpoint(b"0\n1\nt 0 5   \n") == {("t", 0): 5}  # trailing blanks dropped
    assert parse_offset_checkpoint_entries(b"0\n2\nt 0 5\nt 0 6\n") == [("t", 0, 5), ("t", 0, 6)]
    assert parse_offset_checkpoint(b"0\n2\nt 0 5\nt 0 6\n") == {("t", 0): 6}


def test_invalid_utf8_is_located():
    with pytest.raises(CheckpointError) as e:
        parse_offset_checkpoint(b"0\n1\nt\xff 0 5\n", path="cp")
    assert e.value.position == 5 and e.value.path == "cp"


topics = st.text(
    st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters=" \t\n\x0b\f\r\x1c\x1d\x1e\x1f\x85\u2028\u2029",
    ),
    min_size=1,
    max_size=20,
)


@given(
    st.dictionaries(
        st.tuples(topics, st.integers(-(2**31), 2**31 - 1)),
        st.integers(-(2**63), 2**63 - 1),
        max_size=30,
    )
)
def test_offset_checkpoint_round_trip(offsets):
    data = encode_offset_checkpoint(offsets)
    assert parse_offset_checkpoint(data) == offsets
    assert data == encode_offset_checkpoint(dict(reversed(list(offsets.items()))))  # deterministic


# --- leader-epoch-checkpoint -----------------------------------------------------------------


def test_real_leader_epoch_checkpoints():
    data = read("wild-meta/leader-epoch-checkpoint")
    entries = parse_leader_epoch_checkpoint(data)
    assert entries == [
        EpochEntry(0, 0),
        EpochEntry(2, 79577),
        EpochEntry(4, 135495),
        EpochEntry(6, 186795),
        EpochEntry(8, 258527),
        EpochEntry(10, 308715),
    ]
    assert encode_leader_epoch_checkpoint(entries) == data
    assert load_leader_epoch_cache(entries) == entries
    txn = read("txn/leader-epoch-checkpoint")
    assert parse_leader_epoch_checkpoint(txn) == [EpochEntry(0, 0)]
    assert encode_leader_epoch_checkpoint([EpochEntry(0, 0)]) == txn


def test_leader_epoch_cache_edits_like_kafka():
    entries = [EpochEntry(0, 0), EpochEntry(2, 100), EpochEntry(4, 200)]
    # LogLoader truncates the cache to [logStart, LEO)
    assert truncate_from_end(entries, 200) == [EpochEntry(0, 0), EpochEntry(2, 100)]
    assert truncate_from_end(entries, 201) == entries
    assert truncate_from_end(entries, -1) == entries
    assert truncate_from_start(entries, 150) == [EpochEntry(2, 150), EpochEntry(4, 200)]
    assert truncate_from_start(entries, 100) == [
        EpochEntry(2, 100),
        EpochEntry(4, 200),
    ]  # exclusive
    assert truncate_from_start(entries, 250) == [EpochEntry(4, 250)]
    assert truncate_from_start([EpochEntry(3, 10)], 5) == [EpochEntry(3, 10)]
    # assign: same epoch again is a no-op; a lower start offset replaces conflicting entries
    assert assign_epoch(entries, 4, 250) == entries
    assert assign_epoch(entries, 5, 150) == [
        EpochEntry(0, 0),
        EpochEntry(2, 100),
        EpochEntry(5, 150),
    ]
    assert assign_epoch(entries, 3, 300) == [
        EpochEntry(0, 0),
        EpochEntry(2, 100),
        EpochEntry(3, 300),
    ]
    with pytest.raises(ValueError, match="invalid partition leader epoch entry"):
        assign_epoch(entries, -1, 0)
    # a non-monotonic checkpoint is cleaned up by loading it, as the broker's cache does
    assert load_leader_epoch_cache([EpochEntry(1, 0), EpochEntry(3, 50), EpochEntry(2, 40)]) == [
        EpochEntry(1, 0),
        EpochEntry(2, 40),
    ]


# --- partition.metadata ----------------------------------------------------------------------


@pytest.mark.parametrize("rel", ["txn/partition.metadata", "wild-meta/partition.metadata"])
def test_real_partition_metadata_round_trip(rel):
    data = read(rel)
    meta = parse_partition_metadata(data)
    assert meta.version == 0 and len(meta.topic_id) == 22
    assert encode_partition_metadata(meta.topic_id) == data
    assert not data.endswith(b"\n")


def test_partition_metadata_errors():
    assert parse_partition_metadata(
        b"version: 0\ntopic_id: TBiPYKPvTZaRVhoCPN5xwg\n"
    ) == PartitionMetadata(0, "TBiPYKPvTZaRVhoCPN5xwg")
    with pytest.raises(CheckpointError) as e:
        parse_partition_metadata(b"version: 1\ntopic_id: TBiPYKPvTZaRVhoCPN5xwg", path="pm")
    assert e.value.message == "Unrecognized version of partition metadata file (pm): 1"
    with pytest.raises(CheckpointError) as e:
        parse_partition_metadata(b"version:0\n", path="pm")
    assert e.value.message == "Malformed line in checkpoint file (pm): 'version:0'"
    with pytest.raises(CheckpointError) as e:
        parse_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", path="pm")
    assert e.value.message == "Invalid topic ID in partition metadata file (pm)"
    with pytest.raises(CheckpointError, match="decoded as 12 bytes"):
        parse_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAA")
    with pytest.raises(CheckpointError, match="Illegal base64 character 2b"):
        parse_partition_metadata(b"version: 0\ntopic_id: TBiPYKPvTZaRVhoCPN5x+g")
    with pytest.raises(PartitionMetadataError, match="a line is missing"):
        parse_partition_metadata(b"")


@pytest.mark.parametrize(
    "data, offline",
    [
        (b"", False),  # NullPointerException: the broker exits
        (b"version: 0\n", False),  # the second line missing: the same
        (b"version: 0\ntopic_id: not-a-uuid!", False),  # IllegalArgumentException: the same
        (b"\0" * 40, True),  # IOException: the log dir goes offline
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", True),
        (b"version: 1\ntopic_id: TBiPYKPvTZaRVhoCPN5xwg", True),
        (b"version: 0\ntopic_id: \xff", True),  # MalformedInputException
    ],
)
def test_partition_metadata_errors_say_whether_kafka_takes_the_log_dir_offline(data, offline):
    with pytest.raises(PartitionMetadataError) as e:
        parse_partition_metadata(data, path="pm")
    assert e.value.offline is offline and e.value.path == "pm"


def test_partition_metadata_above_version_0_is_read_from_3_7():
    meta = parse_partition_metadata(
        b"version: 1\ntopic_id: TBiPYKPvTZaRVhoCPN5xwg", newer_versions=True
    )
    assert meta == PartitionMetadata(1, "TBiPYKPvTZaRVhoCPN5xwg")
    with pytest.raises(PartitionMetadataError, match="Unrecognized version"):
        parse_partition_metadata(
            b"version: -1\ntopic_id: TBiPYKPvTZaRVhoCPN5xwg", newer_versions=True
        )


# --- meta.properties -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel,order,date",
    [
        (
            "logdir-root/meta.properties",
            "jdk9",
            dt.datetime(2026, 11, 21, 7, 52, 58, tzinfo=dt.timezone.utc),
        ),
        ("wild-meta/meta.properties.jdk9-4keys", "jdk9", None),
        ("wild-meta/meta.properties.jdk9-v0", "jdk9", None),
        ("wild-meta/meta.properties.jdk8-v0", "jdk8", None),
        ("wild-meta/meta.properties.jdk18-sorted", "sorted", None),
    ],
)
def test_real_meta_properties_reencode_byte_identical(rel, order, date):
    data = read(rel)
    props = parse_properties(data)
    assert props["version"] in ("0", "1")
    header = data.split(b"\n")[1][1:].decode()
    ours = encode_meta_properties(props, date=date if date is not None else header, order=order)
    assert ours == data
    # the same properties read back whatever order the file had
    assert (
        parse_properties(
            encode_meta_properties(dict(reversed(props.items())), date=header, order=order)
        )
        == props
    )


def test_properties_syntax():
    text = b"# c\n! c\n\n a = b\\\n   c\nk\\=x:v\nkey value\nz\\u0041 ==x\nonly\ne=\\t\\\\\n"
    assert parse_properties(text) == {
        "a": "bc",
        "k=x": "v",
        "key": "value",
        "zA": "=x",
        "only": "",
        "e": "\t\\",
    }
    with pytest.raises(CheckpointError, match="Malformed"):
        parse_properties(b"k=\\u12G4\n", path="m")


def _load_convert(s: str) -> str:
    """Properties.loadConvert, transcribed character by character (the reference for _unescape)."""
    out: list[str] = []
    chars = iter(s)
    for c in chars:
        if c == "\\":
            c = next(chars, "\\")  # a backslash that ends the text stays
            if c == "u":
                digits = "".join(islice(chars, 4))
                if len(digits) < 4 or digits.strip("0123456789abcdefABCDEF"):
                    raise CheckpointError("Malformed \\uxxxx encoding.")
                c = chr(int(digits, 16))
            else:
                c = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c)
        out.append(c)
    return "".join(out)


@given(st.text(alphabet="\\uUtnrfx0aF9 =:\u00e9", max_size=24))
def test_properties_unescape_matches_load_convert(text):
    value = text.lstrip(" \t\f")
    if (len(value) - len(value.rstrip("\\"))) % 2:
        value = value[:-1]  # an odd trailing backslash continues the line; at the end it is dropped
    data = ("k=" + text).encode("latin-1")
    try:
        expected = _load_convert(value)
    except CheckpointError:
        with pytest.raises(CheckpointError, match=r"^Malformed \\uxxxx encoding\.$"):
            parse_properties(data)
        return
    assert parse_properties(data) == {"k": expected}


def test_store_escapes_like_java():
    out = encode_meta_properties({" k:=": " v = é\n"}, date="D", order="sorted")
    assert out == b"#\n#D\n\\ k\\:\\==\\ v \\= \\u00E9\\n\n"
    assert parse_properties(out) == {" k:=": " v = é\n"}
    utf8 = encode_meta_properties({"k": "é"}, date="D", order="sorted", unicode_escapes=False)
    assert utf8 == "#\n#D\nk=é\n".encode()


def test_java_date():
    assert (
        java_date(dt.datetime(2026, 11, 21, 7, 52, 58, tzinfo=dt.timezone.utc))
        == "Sat Nov 21 07:52:58 UTC 2026"
    )


# --- .kafka_cleanshutdown --------------------------------------------------------------------


def test_clean_shutdown_file():
    assert read("logdir-root/kafka_cleanshutdown") == b""  # Kafka 3.3.1 writes it empty
    assert parse_clean_shutdown(read("logdir-root/kafka_cleanshutdown")) is None
    assert encode_clean_shutdown(None) == b""
    data = encode_clean_shutdown(42)
    assert data == b'{"version":0,"brokerEpoch":42}'
    assert parse_clean_shutdown(data) == 42
    assert parse_clean_shutdown(b'{"version":0,"brokerEpoch":null}') is None
    assert parse_clean_shutdown(b'{"brokerEpoch":7,"extra":1}') == 7
    assert parse_clean_shutdown(b"\xff garbage") is None
