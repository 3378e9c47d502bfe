"""The Schema Registry's state, offline: replayed from its `_schemas` topic, or read from a
directory shaped as its REST API answers, or from schema files bound to a topic.

The `_schemas` topic (Confluent's KafkaStoreReaderThread and its SchemaRegistryKey/Value
serde) holds JSON keys and values. The key's `keytype` says what a record is:

    SCHEMA          {subject, version}: the value is the version (subject, version, id,
                    schemaType (absent: AVRO), schema, references, deleted, metadata, ruleSet);
                    a null value deletes the version for good (a hard delete)
    CONFIG, MODE    {subject or null (global)}: the compatibility level, the mode
    DELETE_SUBJECT  {subject}: the value's `version` and every one before it are soft-deleted
    CLEAR_SUBJECT   {subject}: the soft-deleted versions are gone for good
    CONTEXT         a context came to exist; NOOP: nothing (the reader's barrier)

    ASSOC           a subject's association with a topic: no schema changes

A subject in a context other than the default one reads `:.ctx:name`; ids are numbered per
context. The state is the last record of each key, in offset order, as the registry's store
replays it; it answers as the REST API would (`subjects`, `versions`, `by_id`). A key's `magic`
(0 from old registries, 1 since) is no part of its identity: the store orders keys by keytype,
subject and version (SchemaRegistryKey.compareTo).

A record the registry cannot read is skipped, as its reader skips it and goes on
(KafkaStoreReaderThread.doWork logs the SerializationException of
SchemaRegistrySerializer.deserializeKey/deserializeValue and continues; a SCHEMA value whose id
already names another schema is ignored by KafkaStoreMessageHandler.validateUpdate): each is a
`SkippedRecord` of the registry, said once."""

from __future__ import annotations

import json
import urllib.parse
import uuid
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TypeGuard

from kafkalog_cli.errors import InputError, KafkalogError, UsageError, reason_of

SCHEMAS_TOPIC = "_schemas"
DEFAULT_CONTEXT = "."


class KeyType(str, Enum):
    """SchemaRegistryKeyType."""

    SCHEMA = "SCHEMA"
    CONFIG = "CONFIG"
    MODE = "MODE"
    NOOP = "NOOP"
    DELETE_SUBJECT = "DELETE_SUBJECT"
    CLEAR_SUBJECT = "CLEAR_SUBJECT"
    CONTEXT = "CONTEXT"
    ASSOC = "ASSOC"


class SchemaType(str, Enum):
    AVRO = "AVRO"
    PROTOBUF = "PROTOBUF"
    JSON = "JSON"


class SchemaRegistryError(KafkalogError):
    """A `_schemas` record or schema file that cannot be what it says (exit 3)."""


@dataclass(frozen=True)
class SkippedRecord:
    """A `_schemas` record the registry does not apply, and why (a user's sentence)."""

    partition: str  # the topic-partition: `_schemas-0`
    segment: str
    offset: int
    why: str

    def line(self) -> str:
        """The warning, one line: where, then why."""
        return (
            f"{self.segment}: offset {self.offset}: {self.partition} record skipped, as the "
            f"Schema Registry skips it: {self.why}"
        )


@dataclass(frozen=True)
class Reference:
    """A schema's reference: the name it is imported by, and the subject version it is."""

    name: str
    subject: str
    version: int


@dataclass
class SchemaVersion:
    """One version of a subject (SchemaValue)."""

    subject: str
    version: int
    id: int | None
    schema: str
    schema_type: SchemaType = SchemaType.AVRO
    references: tuple[Reference, ...] = ()
    deleted: bool = False
    metadata: dict | None = None
    rule_set: dict | None = None
    guid: uuid.UUID | None = None
    source: str = ""  # where it was read: a file, or `_schemas` file and offset

    @property
    def context(self) -> str:
        return context_of(self.subject)

    def answer(self) -> dict:
        """GET /subjects/{subject}/versions/{version}, as the registry answers it."""
        out: dict = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type is not SchemaType.AVRO:
            out["schemaType"] = self.schema_type.value
        if self.references:
            out["references"] = [
                {"name": r.name, "subject": r.subject, "version": r.version}
                for r in self.references
            ]
        if self.metadata:
            out["metadata"] = self.metadata
        if self.rule_set:
            out["ruleSet"] = self.rule_set
        out["schema"] = self.schema
        return out


def context_of(subject: str) -> str:
    """`:.ctx:name` is in context `.ctx`; any other subject in the default context `.`."""
    if subject.startswith(":.") and subject.count(":") >= 2:
        return subject[1 : subject.index(":", 1)]
    return DEFAULT_CONTEXT


@dataclass
class Registry:
    """Subjects and their versions, and the ids that name them (per context)."""

    versions: dict[str, dict[int, SchemaVersion]] = field(default_factory=dict)
    configs: dict[str | None, dict] = field(default_factory=dict)
    modes: dict[str | None, dict] = field(default_factory=dict)
    contexts: set[str] = field(default_factory=set)
    sources: list[str] = field(default_factory=list)
    bound: dict[tuple[str, bool], SchemaVersion] = field(default_factory=dict)  # (topic, is_key)
    # every version ever read, deleted for good since or not: what an unknown id once was
    history: dict[tuple[str, int], SchemaVersion] = field(default_factory=dict)  # (context, id)
    skipped: list[SkippedRecord] = field(default_factory=list)

    # -- the registry's answers
    def subjects(self, deleted: bool = False) -> list[str]:
        """GET /subjects (`?deleted=true` with `deleted`)."""
        return sorted(
            s
            for s, vs in self.versions.items()
            if any(deleted or not v.deleted for v in vs.values())
        )

    def subject_versions(self, subject: str, deleted: bool = False) -> list[SchemaVersion]:
        """GET /subjects/{subject}/versions, as versions in order."""
        return [
            v for _, v in sorted(self.versions.get(subject, {}).items()) if deleted or not v.deleted
        ]

    def latest(self, subject: str) -> SchemaVersion | None:
        """GET /subjects/{subject}/versions/latest."""
        live = self.subject_versions(subject)
        return live[-1] if live else None

    def version(self, subject: str, version: int) -> SchemaVersion | None:
        """A version, soft-deleted or not (GET ...?deleted=true)."""
        return self.versions.get(subject, {}).get(version)

    def by_id(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> list[SchemaVersion]:
        """Every subject version with that id (GET /schemas/ids/{id}/versions?deleted=true),
        live ones first."""
        found = [
            v
            for vs in self.versions.values()
            for v in vs.values()
            if v.id == schema_id and v.context == context
        ]
        return sorted(found, key=lambda v: (v.deleted, v.subject, v.version))

    def by_guid(self, guid: uuid.UUID) -> list[SchemaVersion]:
        found = [v for vs in self.versions.values() for v in vs.values() if v.guid == guid]
        return sorted(found, key=lambda v: (v.deleted, v.subject, v.version))

    def resolve(self, ref: Reference) -> SchemaVersion | None:
        """A reference's schema (version -1 is the latest)."""
        if ref.version == -1:
            return self.latest(ref.subject)
        return self.version(ref.subject, ref.version)

    # -- building it
    def add(self, v: SchemaVersion) -> None:
        self.versions.setdefault(v.subject, {})[v.version] = v
        if v.id is not None:
            self.history[(v.context, v.id)] = v

    def gone(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> SchemaVersion | None:
        """The version an id named before it was deleted for good, if `_schemas` still shows it."""
        v = self.history.get((context, schema_id))
        return v if v is not None and self.version(v.subject, v.version) is not v else None

    def ever_had(self, subject: str) -> bool:
        """Whether the subject had a version at some point (it may be deleted for good now)."""
        return subject in self.versions or any(v.subject == subject for v in self.history.values())

    def bind(self, topic: str, is_key: bool, v: SchemaVersion) -> None:
        """A schema file given for a topic's keys or values."""
        self.bound[(topic, is_key)] = v
        self.add(v)

    def apply(self, key: dict, value: dict | None, where: str) -> None:
        """One `_schemas` record, replayed as the registry's store does (KafkaStoreReaderThread,
        KafkaStoreMessageHandler.handleUpdate); a SchemaRegistryError for one it skips."""
        try:
            kt = KeyType(key.get("keytype"))
        except (ValueError, TypeError):
            raise SchemaRegistryError(
                f"its key's keytype {json.dumps(key.get('keytype'))} is none the registry knows"
            ) from None
        if kt is KeyType.NOOP:  # the reader's barrier: its value is never read
            return
        subject = key.get("subject")
        if subject is not None and not isinstance(subject, str):
            raise SchemaRegistryError(f"its {kt.value} key's subject is not text")
        if kt is KeyType.SCHEMA:
            self._apply_schema(key, value, where)
        elif kt is KeyType.CONFIG:
            self._keep(self.configs, subject, value)
        elif kt is KeyType.MODE:
            self._keep(self.modes, subject, value)
        elif value is None:  # the tombstone of another key changes no schema
            return
        elif kt is KeyType.DELETE_SUBJECT:
            self._delete_subject(value)
        elif kt is KeyType.CLEAR_SUBJECT:
            self._clear_subject(value)
        elif kt is KeyType.CONTEXT:
            self.contexts.add(str(value.get("context", key.get("context", ""))))

    def _apply_schema(self, key: dict, value: dict | None, where: str) -> None:
        subject, version, magic = key.get("subject"), key.get("version"), key.get("magic", 0)
        if not isinstance(subject, str) or not _java_int(version):
            raise SchemaRegistryError("a SCHEMA key without a subject and an integer version")
        if magic not in (0, 1) or isinstance(magic, bool):
            # SchemaRegistrySerializer.validateMagicByte
            raise SchemaRegistryError(
                f"a SCHEMA key of magic {json.dumps(magic)}: the registry reads 0 and 1"
            )
        if value is None:  # the tombstone of a hard delete
            self.versions.get(subject, {}).pop(version, None)
            if not self.versions.get(subject, True):
                del self.versions[subject]
            return
        v = schema_version(value, where)
        held = None if v.id is None else self.history.get((v.context, v.id))
        if held is not None and self.version(held.subject, held.version) is held:
            if held.schema != v.schema:  # KafkaStoreMessageHandler.validateUpdate
                raise SchemaRegistryError(
                    f"{v.subject} version {v.version} has id {v.id}, which names another schema "
                    f"already ({held.subject} version {held.version})"
                )
        self.add(v)

    def _delete_subject(self, value: dict) -> None:
        """KafkaStoreMessageHandler.handleDeleteSubject: the value's subject, versions 1 to its
        version soft-deleted."""
        subject, upto = value.get("subject"), value.get("version")
        if not isinstance(subject, str) or not _java_int(upto):
            raise SchemaRegistryError(
                "a DELETE_SUBJECT value without a subject and an integer version"
            )
        for n, v in self.versions.get(subject, {}).items():
            if n <= upto:
                v.deleted = True

    def _clear_subject(self, value: dict) -> None:
        """KafkaStoreMessageHandler.handleClearSubject: the value subject's soft-deleted versions
        gone for good (a context's, every subject's in it, for `:.ctx:` with no name)."""
        subject = value.get("subject")
        if not isinstance(subject, str):
            raise SchemaRegistryError("a CLEAR_SUBJECT value without a subject")
        whole = subject.startswith(":.") and subject.endswith(":") and subject.count(":") == 2
        for s in [
            s for s in self.versions if s == subject or whole and context_of(s) == subject[1:-1]
        ]:
            left = {n: v for n, v in self.versions[s].items() if not v.deleted}
            if left:
                self.versions[s] = left
            else:
                del self.versions[s]

    @staticmethod
    def _keep(table: dict, subject, value) -> None:
        if value is None:
            table.pop(subject, None)
        else:
            table[subject] = value


def _java_int(x) -> TypeGuard[int]:
    """An id the registry can hold: SchemaValue's `Integer id` (a bool is no number to it)."""
    return isinstance(x, int) and not isinstance(x, bool) and -(2**31) <= x < 2**31


def schema_version(value: dict, where: str = "") -> SchemaVersion:
    """A SchemaValue (or a REST answer of one version) as a SchemaVersion."""
    if not isinstance(value, dict):
        raise SchemaRegistryError("a schema value that is not a JSON object")
    try:
        st = SchemaType(value.get("schemaType") or "AVRO")
    except ValueError:
        raise SchemaRegistryError(
            f"schemaType {json.dumps(value.get('schemaType'))} is none of AVRO, PROTOBUF, JSON"
        ) from None
    subject, version, sid, text = (
        value.get("subject"),
        value.get("version"),
        value.get("id"),
        value.get("schema"),
    )
    if not isinstance(subject, str) or not isinstance(version, int) or not isinstance(text, str):
        raise SchemaRegistryError("a schema value without subject, version and schema")
    refs = []
    for r in value.get("references") or ():
        try:
            refs.append(Reference(str(r["name"]), str(r["subject"]), int(r["version"])))
        except (KeyError, TypeError, ValueError):
            raise SchemaRegistryError(
                f"a reference without name, subject and version: {json.dumps(r)}"
            ) from None
    for name in ("metadata", "ruleSet"):
        if value.get(name) is not None and not isinstance(value.get(name), dict):
            raise SchemaRegistryError(f"a schema value whose {name} is not a JSON object")
    guid = value.get("guid")
    try:
        guid = uuid.UUID(guid) if isinstance(guid, str) else None
    except ValueError:
        raise SchemaRegistryError(
            f"a schema value whose guid {json.dumps(guid)} is not a UUID"
        ) from None
    return SchemaVersion(
        subject,
        version,
        sid if _java_int(sid) else None,
        text,
        st,
        tuple(refs),
        bool(value.get("deleted", False)),
        value.get("metadata"),
        value.get("ruleSet"),
        guid,
        where,
    )


# -- sources


def read_schemas_partition(registry: Registry, partition_dir: Path, warn=None) -> None:
    """Replay a `_schemas-N` partition dir into `registry`: its records in offset order (control
    records and aborted transactions do not occur: the registry writes without transactions).
    A record the registry would skip is skipped, kept in `registry.skipped` and passed to `warn`
    (a SkippedRecord)."""
    from kafkalog_cli.storage.partition import Partition

    p = Partition.open(partition_dir)
    try:
        for seg, batch in p.batches():
            if batch.is_control:
                continue
            for r in batch.records():
                try:
                    key = _json_object(r.key, "key")
                    value = None if r.value is None else _json_object(r.value, "value")
                    registry.apply(key, value, f"{seg.path}: offset {r.offset}")
                except SchemaRegistryError as e:
                    skip = SkippedRecord(partition_dir.name, str(seg.path), r.offset, e.message)
                    registry.skipped.append(skip)
                    if warn is not None:
                        warn(skip)
    finally:
        p.close()
    registry.sources.append(str(partition_dir))


def _json_object(data, what: str) -> dict:
    """A `_schemas` key or value: a JSON object (Jackson's readValue of SchemaRegistrySerializer)."""
    if data is None:
        raise SchemaRegistryError(f"it has no {what}")
    try:
        obj = json.loads(bytes(data))
    except ValueError as e:  # not UTF-8, not JSON, a number past Python's digit limit
        raise SchemaRegistryError(f"its {what} is {reason_of(e)}") from None
    if not isinstance(obj, dict):
        raise SchemaRegistryError(f"its {what} is JSON, but not an object")
    return obj


def schemas_partitions(paths) -> list[Path]:
    """The `_schemas` partition dirs among log dirs and partition dirs given."""
    from kafkalog_cli.storage.logdir import is_log_dir

    out = []
    for given in paths:
        p = Path(given)
        if p.is_dir() and _is_schemas_dir(p.name):
            out.append(p)
        elif p.is_dir() and is_log_dir(p):
            out.extend(sorted(d for d in p.iterdir() if d.is_dir() and _is_schemas_dir(d.name)))
    return out


def _is_schemas_dir(name: str) -> bool:
    topic, _, part = name.rpartition("-")
    return topic == SCHEMAS_TOPIC and part.isdigit()


def is_rest_dir(path: Path) -> bool:
    """A directory shaped as the registry's REST answers: `subjects/` (and maybe `schemas/`)."""
    return (path / "subjects").is_dir()


def read_rest_dir(registry: Registry, root: Path) -> None:
    """`subjects/<subject>/versions/<n>[.json]` holding GET /subjects/{s}/versions/{n}'s answer
    (subject names URL-encoded, as in the URL), each with its id; a version answered as
    `{"deleted": true, ...}` is soft-deleted."""
    subjects = root / "subjects"
    for sdir in sorted(subjects.iterdir()):
        vdir = sdir / "versions"
        if not vdir.is_dir():
            continue
        subject = urllib.parse.unquote(sdir.name)
        for f in sorted(vdir.iterdir()):
            name = f.name[:-5] if f.name.endswith(".json") else f.name
            if not name.isdigit() or not f.is_file():
                continue
            try:
                answer = json.loads(f.read_bytes())
            except ValueError as e:
                raise SchemaRegistryError(reason_of(e), path=str(f)) from None
            except OSError as e:
                raise InputError(e.strerror or str(e), path=str(f)) from None
            if isinstance(answer, dict):
                answer.setdefault("subject", subject)
                answer.setdefault("version", int(name))
            try:
                registry.add(schema_version(answer, str(f)))
            except SchemaRegistryError as e:
                raise e.located(str(f)) from None
    registry.sources.append(str(root))


_SUFFIX_TYPES = {".avsc": SchemaType.AVRO, ".proto": SchemaType.PROTOBUF, ".json": SchemaType.JSON}


def read_bound_file(registry: Registry, binding: str) -> None:
    """`TOPIC=FILE` or `TOPIC:key=FILE` / `TOPIC:value=FILE` (values when not said): a .avsc,
    .proto or JSON Schema (.json) file as the writer schema of that topic's keys or values."""
    target, sep, file = binding.partition("=")
    if not sep or not target or not file:
        raise UsageError(f"{binding!r}: give TOPIC=FILE, TOPIC:key=FILE or TOPIC:value=FILE")
    topic, _, part = (
        target.rpartition(":") if target.endswith((":key", ":value")) else (target, "", "value")
    )
    path = Path(file)
    st = _SUFFIX_TYPES.get(path.suffix)
    if st is None:
        raise UsageError(f"{file}: a schema file ends in .avsc, .proto or .json (JSON Schema)")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(e.strerror or str(e), path=file) from None
    except UnicodeDecodeError as e:
        raise SchemaRegistryError("not UTF-8 text", path=file, position=e.start) from None
    subject = f"{topic}-{part}"
    registry.bind(topic, part == "key", SchemaVersion(subject, 1, None, text, st, source=file))
    registry.sources.append(file)


def load_registry(log_paths=(), sources=(), bindings=(), warn=None) -> Registry:
    """The registry of the `_schemas` topics among `log_paths`, then each source given (a log
    dir or `_schemas` partition dir, or a REST-shaped dir), then the bound files. `warn` is
    called with each `_schemas` record skipped (a SkippedRecord)."""
    reg = Registry()
    for p in schemas_partitions(log_paths):
        read_schemas_partition(reg, p, warn)
    for s in sources:
        p = Path(s)
        if not p.exists():
            raise InputError("no such file or directory", path=s)
        if p.is_dir() and is_rest_dir(p):
            read_rest_dir(reg, p)
        else:
            found = schemas_partitions([p])
            if not found:
                raise InputError(
                    "neither a log dir holding _schemas, a _schemas partition dir, nor a dir "
                    "shaped as the registry's REST answers (subjects/<s>/versions/<n>)",
                    path=s,
                )
            for d in found:
                if str(d) not in reg.sources:
                    read_schemas_partition(reg, d, warn)
    for b in bindings:
        read_bound_file(reg, b)
    return reg
