"""The fields of our JSON Lines (`dump-log` and `dump-index --format json`) and of the Arrow rows
(the Spark data source `kafkalog`, `kafkalog export`), declared once: name, order, what the JSON
value means, Arrow type.

render/jsonl.py and render/index_json.py build their objects from `Kind.template`, so the keys
come in this order; spark/arrow.py derives its columns from `Field.arrow`; the table of
docs/json-lines.md is `markdown_table()` (tests/render/test_schema.py holds all three to this module).

No pyarrow here: Arrow types are named as pyarrow names them and spark/arrow.py builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# ------------------------------------------------------------------ Arrow types
INT8, INT32, INT64, STRING, BINARY, BOOL = "int8", "int32", "int64", "string", "binary", "bool"
TIMESTAMP_MS = "timestamp_ms"  # Arrow timestamp(ms, UTC), Spark's TimestampType; JSON: epoch ms


@dataclass(frozen=True)
class Struct:
    fields: tuple[tuple[str, object], ...]  # (name, Arrow type)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.fields)


@dataclass(frozen=True)
class ListOf:
    item: object


HEADER = Struct((("key", STRING), ("value", BINARY)))
CONTROL = Struct(
    (("type", STRING), ("type_id", INT32), ("version", INT32), ("coordinator_epoch", INT32))
)


# ------------------------------------------------------------------ fields and kinds
@dataclass(frozen=True, eq=False)  # each condition is one object, compared by identity
class When:
    """A JSON field that only some objects of a kind have. `field`/`values`: those whose `field`
    holds one of `values`; without `field`, the writer knows (the batch's magic, an option)."""

    says: str  # the docs' words
    field: str | None = None
    values: tuple = ()


LEGACY = When("legacy records only")
CONTROL_RECORD = When(
    "control records only: `type`, `type_id`, and for markers `version`, `coordinator_epoch`",
    "is_control",
    (True,),
)
DECODED = When("with an internal-topic decoder")
# dump-log's record lines name where they come from; the writer lays these in front of each line
# of a file's records (render.jsonl.JsonDumper.record_prefix), so the per-record templates and
# the fast paths never carry them. Export's lines and Arrow rows have their own (topic,
# partition, segment, ...)
LOCATED = When("dump-log")
UNKNOWN_FILE = When("`true`, for a file of no known type, which is skipped", "type", ("unknown",))
OFFSET_CHECK = When(
    "check `offset` or `offset_not_found` only", "check", ("offset", "offset_not_found")
)
TIMESTAMP_CHECK = When(
    "check `timestamp` or `timestamp_order` only", "check", ("timestamp", "timestamp_order")
)
LOG_TIMESTAMP = When("check `timestamp` only", "check", ("timestamp",))
ORDER = When("check `timestamp_order` only", "check", ("timestamp_order",))
FAILED = When("`passed: false` only", "passed", (False,))


@dataclass(frozen=True)
class Field:
    name: str
    about: str = ""  # what the JSON value holds, where the name does not say it all
    arrow: object = None  # the Arrow type; None: not an Arrow column
    json: bool = True  # False: an Arrow column only
    only: When | None = None  # a JSON field only some objects have

    def readme(self) -> str:
        notes = [s for s in (self.about, self.only.says if self.only else "") if s]
        return f"`{self.name}`" + (f" ({'; '.join(notes)})" if notes else "")


UNSET = object()  # a value a renderer did not set: the JSON encoder refuses it, loudly


@dataclass(frozen=True)
class Kind:
    name: str  # the value of "kind", always the first key
    fields: tuple[Field, ...]
    about: str = ""  # the docs' words on the object as a whole
    _blanks: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def template(self, *only: When) -> dict:
        """A new object of this kind: "kind" set, then the JSON fields every object has and
        those whose condition is among `only`, in order, each UNSET until the caller sets it
        (one left UNSET fails when encoded). Copying a cached dict keeps this cheap per batch."""
        blank = self._blanks.get(only)
        if blank is None:
            blank = self._blanks[only] = dict.fromkeys(
                ["kind"]
                + [f.name for f in self.fields if f.json and (f.only is None or f.only in only)],
                UNSET,
            )
            blank["kind"] = self.name
        return blank.copy()

    def json_names(self, *only: When) -> tuple[str, ...]:
        return tuple(self.template(*only))

    def object(self, *only: When, **values) -> dict:
        """A JSON object of this kind with `values`, its keys in the schema's order."""
        obj = self.template(*only)
        obj.update(values)
        return obj

    @property
    def arrow_fields(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.arrow is not None)


def _arrow_only(name: str, arrow, about: str) -> Field:
    return Field(name, about, arrow, json=False)


# where Arrow rows come from: they carry these instead of JSON's "file"
TOPIC = _arrow_only("topic", STRING, "the partition dir's topic; null outside one")
PARTITION = _arrow_only("partition", INT32, "the partition dir's number; null outside one")
SEGMENT = _arrow_only("segment", STRING, "the segment file's absolute path")
LOG_DIR = _arrow_only(
    "log_dir",
    STRING,
    "the log dir holding the partition dir (absolute path or URI); null outside one",
)
BROKER_ID = _arrow_only(
    "broker_id", INT32, "node.id (or broker.id) of the log dir's meta.properties; null without one"
)

FILE = Kind(
    "file",
    (
        Field("file", "the path as given"),
        Field(
            "type",
            "`log`, `checkpoint`, `index`, `timeindex`, `txnindex`, `snapshot`, or `unknown`",
        ),
        Field("skipped", only=UNKNOWN_FILE),
    ),
)

BATCH = Kind(
    "batch",
    (
        TOPIC,
        PARTITION,
        Field("file"),
        Field("base_offset", arrow=INT64),
        Field("last_offset", arrow=INT64),
        Field("count", "null for legacy", INT32),
        Field("position", arrow=INT64),
        Field("size", arrow=INT32),
        Field("magic", arrow=INT8),
        Field("codec", arrow=STRING),
        Field("crc", arrow=INT64),
        Field("computed_crc", arrow=INT64),
        Field("is_valid", arrow=BOOL),
        Field("timestamp_type", arrow=STRING),
        Field("base_timestamp", "epoch ms, or ISO-8601 text with `--timestamps iso`", INT64),
        Field("max_timestamp", "epoch ms, or ISO-8601 text with `--timestamps iso`", INT64),
        Field("producer_id", arrow=INT64),
        Field("producer_epoch", arrow=INT32),
        Field("base_sequence", arrow=INT32),
        Field("last_sequence", arrow=INT32),
        Field("partition_leader_epoch", arrow=INT32),
        Field("is_transactional", arrow=BOOL),
        Field("is_control", arrow=BOOL),
        Field("delete_horizon_ms", "null unless set", INT64),
        SEGMENT,
        LOG_DIR,
        BROKER_ID,
    ),
)

RECORD = Kind(
    "record",
    (
        Field("topic", "the partition dir's topic; null outside one", STRING, only=LOCATED),
        Field("partition", "the partition dir's number; null outside one", INT32, only=LOCATED),
        Field("file", "the segment, as the `file` line names it", only=LOCATED),
        Field("offset", arrow=INT64),
        Field(
            "timestamp",
            "epoch ms; with `--timestamps iso`, ISO-8601 UTC text (null for -1, no timestamp)",
            TIMESTAMP_MS,
        ),
        Field("timestamp_type", arrow=STRING),
        Field("key", "encoded string or null", BINARY),
        Field("value", "encoded string or null", BINARY),
        Field("headers", 'list of `{"key": str, "value": str|null}`', ListOf(HEADER)),
        Field("sequence", arrow=INT32),
        Field("base_offset", arrow=INT64),
        Field("producer_id", arrow=INT64),
        Field("producer_epoch", arrow=INT32),
        Field("is_transactional", arrow=BOOL),
        Field("is_control", arrow=BOOL),
        Field("crc", arrow=INT64, only=LEGACY),
        Field("is_valid", arrow=BOOL, only=LEGACY),
        Field("control", arrow=CONTROL, only=CONTROL_RECORD),
        Field("decoded", only=DECODED),
        SEGMENT,
        LOG_DIR,
        BROKER_ID,
    ),
)

TRAILING_BYTES = Kind(
    "trailing_bytes",
    (Field("file"), Field("position"), Field("size")),
    "bytes after the last complete batch (dump-index: a partial last entry)",
)
INDEX_ENTRY = Kind("index_entry", (Field("offset"), Field("position")))
TIME_INDEX_ENTRY = Kind("time_index_entry", (Field("timestamp"), Field("offset")))
ABORTED_TXN = Kind(
    "aborted_txn",
    (
        Field("version"),
        Field("producer_id"),
        Field("first_offset"),
        Field("last_offset"),
        Field("last_stable_offset"),
    ),
)
PRODUCER_STATE = Kind(
    "producer_state",
    (
        Field("producer_id"),
        Field("producer_epoch"),
        Field("coordinator_epoch"),
        Field("current_txn_first_offset", "null: none"),
        Field("last_sequence"),
        Field("last_offset"),
        Field("offset_delta"),
        Field("timestamp"),
    ),
)
CORRUPT_SNAPSHOT = Kind(
    "corrupt_snapshot",
    (Field("file"), Field("position"), Field("error")),
    "a producer snapshot that does not parse (exit 0, as in Kafka's tool)",
)
INDEX_MISMATCH = Kind(
    "index_mismatch",
    (
        Field("file"),
        Field("check", "`offset`, `offset_not_found`, `timestamp` or `timestamp_order`"),
        Field("index_offset", only=OFFSET_CHECK),
        Field("log_offset", "null: no batch", only=OFFSET_CHECK),
        Field("index_timestamp", only=TIMESTAMP_CHECK),
        Field("log_timestamp", only=LOG_TIMESTAMP),
        Field("previous_timestamp", only=ORDER),
    ),
    "dump-index: an index entry that does not match the .log, as kafka-dump-log reports it",
)
SANITY_CHECK = Kind(
    "sanity_check",
    (
        Field("file"),
        Field("passed"),
        Field("position", only=FAILED),
        Field("error", only=FAILED),
    ),
    "the outcome of dump-index --index-sanity-check",
)

ZERO_FILLED = When("problem `index_zero_filled` only", "problem", ("index_zero_filled",))
_FINDING = (
    Field(
        "problem", "`index_zero_filled`, `corrupt` (the check of this file stopped) or `unreadable`"
    ),
    Field("file"),
    Field("position"),
    Field("entries", "real entries before the zero slots", only=ZERO_FILLED),
    Field("zero_slots", only=ZERO_FILLED),
    Field(
        "rebuilt_on_load",
        "the broker recovers the segment, and rebuilds the index, on its next start",
        only=ZERO_FILLED,
    ),
    Field("message"),
)
PROBLEM = Kind(
    "problem",
    _FINDING,
    "dump-index --verify-index-only and --index-sanity-check: what kafka-dump-log "
    "does not see, or the error that stopped a file's check (exit 1 or 3)",
)
NOTE = Kind(
    "note",
    _FINDING,
    "as `problem`, for what the broker repairs on its own (zero slots in an index it "
    "rebuilds on load): no exit 1",
)
SUMMARY = Kind(
    "summary",
    (Field("files"), Field("problems"), Field("notes"), Field("ok")),
    "dump-index --verify-index-only: the last line",
)

KINDS = (
    FILE,
    BATCH,
    RECORD,
    TRAILING_BYTES,
    INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    ABORTED_TXN,
    PRODUCER_STATE,
    CORRUPT_SNAPSHOT,
    INDEX_MISMATCH,
    SANITY_CHECK,
    PROBLEM,
    NOTE,
    SUMMARY,
)


def markdown_table() -> str:
    """The JSON Lines schema table of docs/json-lines.md (written there by tools/gen_docs.py)."""
    rows = ["| kind | fields |", "|---|---|"]
    for k in KINDS:
        fields = ", ".join(f.readme() for f in k.fields if f.json).replace("|", "\\|")
        rows.append(f"| `{k.name}` | {fields}{': ' + k.about if k.about else ''} |")
    return "\n".join(rows) + "\n"
