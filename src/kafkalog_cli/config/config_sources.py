"""What a run reads its configs from: server.properties, the command line's --config and
--topic-config, and the log dir's __cluster_metadata (read as the broker reads a log)."""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalog_cli.config.defaults import (
    BROKER_KEYS,
    BROKER_SYNONYMS,
    INTERNAL_TOPICS,
    KAFKA_TOPIC_CONFIGS,
    METADATA_PARTITION_DIR,
    broker_value,
    check_compaction_lags,
    check_remote_storage,
    parse_value,
)
from kafkalog_cli.config.provenance import Unknown
from kafkalog_cli.errors import ExitCode, KafkalogError, UsageError
from kafkalog_cli.storage import files


def read_properties(path: Path) -> dict[str, str]:
    """A java.util.Properties file (Properties.load, as Kafka's Utils.loadProps reads it)."""
    from kafkalog_cli.formats.checkpoints import parse_properties

    data = files.read_bytes(path)
    return parse_properties(data, path=str(path))


def read_server_properties(path: Path) -> dict[str, str]:
    """--server-properties: a broker config, refused (usage error) when it is none (no log.* or
    other broker key: /etc/passwd) or when a log setting is outside Kafka's validators."""
    props = read_properties(path)
    where = f"--server-properties {path}: "
    if not any(k.startswith("log.") or k in BROKER_KEYS for k in props):
        raise UsageError(
            f"{where}not a Kafka broker config (no log.* or other broker setting in it)"
        )
    for name, synonyms in BROKER_SYNONYMS.items():  # every synonym: the broker parses them all
        for prop, mult in synonyms:
            if prop in props:
                broker_value(name, prop, mult, props[prop], UsageError, where)
    for configs in INTERNAL_TOPICS.values():
        for name, (_, prop) in configs.items():
            if prop and prop in props:
                parse_value(name, props[prop], UsageError, where)
    return props


# ------------------------------------------------------------------ command-line overrides
def parse_key_values(pairs: Iterable[str], option: str) -> dict[str, str]:
    """Command-line topic configs: Kafka's names only, values checked now by Kafka's validators
    (a typo must not fall back to a default in a command that deletes data)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise UsageError(f"{option} expects KEY=VALUE, got {pair!r}")
        if key not in KAFKA_TOPIC_CONFIGS:
            raise UsageError(
                f"{option}: {key!r} is not a Kafka topic config{_did_you_mean(key, KAFKA_TOPIC_CONFIGS)}"
            )
        parse_value(key, value, UsageError, f"{option}: ")
        out[key] = value
    check_compaction_lags(out, f"{option}: ")
    check_remote_storage(out, f"{option}: ")
    return out


def parse_topic_key_values(
    items: Iterable[str], topics: Iterable[str] | None = None
) -> dict[str, dict[str, str]]:
    """--topic-config TOPIC:KEY=VALUE items; with `topics` (those of the log dirs processed), a
    topic that is not among them is a usage error."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        topic, sep, kv = item.partition(":")
        if not sep or not topic:
            raise UsageError(f"--topic-config expects TOPIC:KEY=VALUE, got {item!r}")
        out.setdefault(topic, {}).update(parse_key_values([kv], "--topic-config"))
    for topic, values in out.items():
        check_compaction_lags(values, f"--topic-config {topic}: ")
        check_remote_storage(values, f"--topic-config {topic}: ")
    if topics is not None:
        check_topic_overrides(out, topics)
    return out


def check_topic_overrides(
    topic_overrides: Mapping[str, Mapping[str, str]], topics: Iterable[str]
) -> None:
    """A --topic-config for a topic with no partition in the log dirs processed is a typo."""
    present = set(topics)
    for topic in topic_overrides:
        if topic not in present:
            raise UsageError(
                f"--topic-config: topic {topic!r} has no partition in the log dirs given"
                f"{_did_you_mean(topic, present)}"
            )


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib

    near = difflib.get_close_matches(word, sorted(choices), n=1)
    return f" (did you mean {near[0]}?)" if near else ""


# ------------------------------------------------------------------ __cluster_metadata
class MetadataState(enum.Enum):
    READ = "read"  # read to its end: the topic level is known for the topics it holds
    DAMAGED = "damaged"  # read up to `damage`: any later record could have changed any topic
    ABSENT = "absent"  # the log dir has no __cluster_metadata-0
    IGNORED = "ignored"  # --no-cluster-metadata


@dataclass(frozen=True)
class MetadataDamage:
    """Where reading __cluster_metadata stopped, and why."""

    path: str
    position: int | None
    reason: str
    exit_code: int = 3  # errors.ExitCode: 3 damage; 4 a file that cannot be opened

    def __str__(self) -> str:
        where = self.path + (f": byte {self.position}" if self.position is not None else "")
        return f"{where}: {self.reason}"


@dataclass(frozen=True, eq=False)
class ClusterMetadata(Mapping):
    """The configs a log dir's __cluster_metadata records (KRaft), and how far it could be read.
    As a Mapping: {topic: its config overrides}."""

    state: MetadataState
    topics: frozenset = frozenset()  # live TopicRecords
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    broker_configs: Mapping[str, Mapping[str, str]] = field(
        default_factory=dict
    )  # "" = cluster default
    node_id: int | None = None  # the log dir's broker (meta.properties)
    damage: MetadataDamage | None = None  # the first invalid place found
    snapshot: str | None = None  # the .checkpoint read, if any
    features: Mapping[str, int] = field(default_factory=dict)  # finalized feature levels
    open_transaction: bool = (
        False  # a metadata transaction still open where the log ends (not applied)
    )
    aborted_transactions: int = 0  # metadata transactions aborted (their records not applied)

    @property
    def metadata_version(self) -> int | None:
        """The finalized metadata.version feature level (FeatureLevelRecord), if the log holds one."""
        return self.features.get("metadata.version")

    @classmethod
    def of(cls, topic_configs: Mapping[str, Mapping[str, str]]) -> ClusterMetadata:
        """Topic configs known in full (library callers, tests)."""
        return cls(MetadataState.READ, frozenset(topic_configs), dict(topic_configs))

    def __getitem__(self, topic: str) -> Mapping[str, str]:
        return self.topic_configs[topic]

    def __iter__(self) -> Iterator[str]:
        return iter(self.topic_configs)

    def __len__(self) -> int:
        return len(self.topic_configs)

    def topic_unreadable(self, topic: str) -> Unknown | None:
        """Why the topic's own configs cannot be read; None when they can."""
        if self.state is MetadataState.READ:
            return None if topic in self.topics else Unknown.NO_TOPIC_RECORD
        return {
            MetadataState.DAMAGED: Unknown.DAMAGED_METADATA,
            MetadataState.ABSENT: Unknown.NO_CLUSTER_METADATA,
            MetadataState.IGNORED: Unknown.CLUSTER_METADATA_IGNORED,
        }[self.state]

    @property
    def warning(self) -> str | None:
        """One line for stderr when something was damaged (None otherwise)."""
        if self.damage is None:
            return None
        if self.state is MetadataState.DAMAGED:
            return (
                f"{self.damage}: __cluster_metadata read up to here; the configs of topics not stated "
                f"with --topic-config or --config are unknown"
            )
        instead = self.snapshot or "the log from its start"
        return f"{self.damage}: a damaged snapshot, skipped: read {instead} and the log instead"


_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


def metadata_log_dir(log_dir: Path | str, log_dirs: Iterable[Path | str] = ()) -> Path:
    """The log dir whose __cluster_metadata-0 holds `log_dir`'s topic configs: its own when it
    has one; else, as a broker with several log.dirs keeps the metadata log in one of them
    (metadata.log.dir, by default the first), the one of `log_dirs` (those a run was given) that
    has one and the same cluster.id in meta.properties, that of the same node.id first (topic
    configs are the cluster's: any broker's metadata log records them). `log_dir` itself when none
    does, or when which cluster is not known and the candidates' clusters differ."""
    log_dir = Path(log_dir)
    if (log_dir / METADATA_PARTITION_DIR).is_dir():
        return log_dir
    cluster, node = _meta_ids(log_dir)
    found = []
    for d in map(Path, log_dirs):
        if d != log_dir and (d / METADATA_PARTITION_DIR).is_dir():
            c, n = _meta_ids(d)
            if cluster is None or c is None or c == cluster:
                found.append((d, c, n))
    if cluster is None and len({c for _, c, _ in found}) > 1:
        return log_dir
    found.sort(key=lambda f: not (node is not None and f[2] == node))
    return found[0][0] if found else log_dir


def _meta_ids(log_dir: Path) -> tuple[str | None, int | None]:
    """(cluster.id, node.id) of a log dir's meta.properties, as the broker reads them; None for
    what it does not say or the broker would refuse (only the choice of a metadata log rests on
    them: the commands that read meta.properties name what is wrong with it). A file that cannot
    be read is an InputError: the choice is never made without it."""
    from kafkalog_cli.formats.checkpoints import parse_properties
    from kafkalog_cli.formats.meta_properties import MetaProperties

    path = log_dir / "meta.properties"
    raw = files.read_bytes_if_exists(path)  # there but unreadable: an InputError naming it
    try:
        props = parse_properties(raw, path=str(path)) if raw is not None else {}
    except KafkalogError:
        return None, None
    try:
        node = MetaProperties.node_id_in(props, path=str(path))
    except KafkalogError:
        node = None
    return props.get("cluster.id", "").strip() or None, node


def read_cluster_metadata(
    log_dir: Path | str, log_dirs: Iterable[Path | str] = ()
) -> ClusterMetadata:
    """The topic and broker configs in the __cluster_metadata-0 of `log_dir`, or of the log dir
    among `log_dirs` that holds its broker's (metadata_log_dir): the latest valid KRaft snapshot
    (`<end offset>-<epoch>.checkpoint`), then the log from the snapshot's end offset, up to the
    first invalid batch. Never raises for what it reads: damage is in the result."""
    log_dir = Path(log_dir)
    node_id = log_dir_node_id(log_dir)
    meta = metadata_log_dir(log_dir, log_dirs) / METADATA_PARTITION_DIR
    if not meta.is_dir():
        return ClusterMetadata(MetadataState.ABSENT, node_id=node_id)
    from kafkalog_cli.formats.internal.cluster_metadata import ConfigsImage

    read = replay_metadata_log(meta, ConfigsImage)
    image = read.image
    state = MetadataState.DAMAGED if read.damage is not None else MetadataState.READ
    return ClusterMetadata(
        state,
        image.topics,
        image.topic_configs,
        image.broker_configs,
        node_id,
        read.skipped or read.damage,
        read.snapshot,
        dict(image.features),
        image.in_transaction,
        image.aborted_transactions,
    )


@dataclass
class MetadataLogRead:
    """What replay_metadata_log read: the image, the snapshot it started from (None: the log
    from its start), where reading stopped (damage) or the first damaged snapshot skipped, and
    the offset after the last record read."""

    image: Any
    snapshot: str | None
    damage: MetadataDamage | None
    skipped: MetadataDamage | None
    next_offset: int


def replay_metadata_log(meta: Path, new_image, until: int | None = None) -> MetadataLogRead:
    """Replay `meta` (a __cluster_metadata-0 dir) into `new_image()`: the latest snapshot that
    reads whole (ending at or before `until` + 1), then the log's records from its end offset up
    to `until` (None: the end), up to the first invalid batch. The image's `replay(record,
    offset)` gets each decoded record (offset None inside a snapshot), `undecoded(offset, error)`
    each record that does not decode. Never raises for what it reads: damage is in the result."""
    from kafkalog_cli.storage.partition import Partition

    try:
        partition = Partition.open(meta)
        names = os.listdir(meta)
    except (KafkalogError, OSError) as e:
        unreadable = MetadataDamage(
            str(meta),
            None,
            f"cannot be read: {getattr(e, 'message', None) or e}",
            int(getattr(e, "exit_code", ExitCode.INPUT)),
        )
        return MetadataLogRead(new_image(), None, unreadable, None, 0)
    snapshots = sorted(
        (
            (int(m.group(1)), n)
            for n in names
            if (m := _SNAPSHOT_NAME.fullmatch(n))
            and (until is None or int(m.group(1)) <= until + 1)
        ),
        reverse=True,
    )
    image, start, used, skipped = _latest_valid_snapshot(meta, snapshots, new_image)
    damage: MetadataDamage | None = None
    for i, seg in enumerate(partition.segments):
        if until is not None and seg.base_offset > until:
            break
        damage, start = _replay(
            seg, image, start, tail_may_be_cut=i == len(partition.segments) - 1, until=until
        )
        if damage is not None:
            break
    if damage is None and snapshots and start < snapshots[0][0]:
        damage = skipped  # the records up to the damaged snapshot's end are nowhere else
    return MetadataLogRead(image, used, damage, skipped, start)


def _latest_valid_snapshot(meta: Path, snapshots: list[tuple[int, str]], new_image):
    """(image, end offset, file name, the first damaged snapshot skipped) of the newest snapshot
    that reads whole; an empty image at offset 0 when none does."""
    from kafkalog_cli.storage.segment import Segment

    skipped = None
    for end_offset, name in snapshots:
        image = new_image()
        damage, _ = _replay(Segment.from_file(meta / name), image, None, tail_may_be_cut=False)
        if damage is None:
            return image, end_offset, name, skipped
        skipped = skipped or damage
    return new_image(), 0, None, skipped


cluster_metadata_configs = read_cluster_metadata  # the name ops and tests have used


def _replay(
    seg, image, start: int | None, tail_may_be_cut: bool, until: int | None = None
) -> tuple[MetadataDamage | None, int | None]:
    """Replay one file's records at offsets >= `start` (and <= `until`) into `image` (`start`
    None: all of them, for a snapshot, whose offsets are its own). The log's offsets must follow
    on from `start` without a hole. Returns where the file stops being valid (or None) and the
    next offset."""
    from kafkalog_cli.formats.internal.cluster_metadata import decode_metadata_record
    from kafkalog_cli.formats.records import iter_batches
    from kafkalog_cli.storage.segment import read_file

    path = str(seg.source_path)
    try:
        buf = read_file(seg.source_path)  # bytes, not a mapping: records keep views into it
    except KafkalogError as e:
        return MetadataDamage(path, None, f"cannot be read: {e.message}", int(e.exit_code)), start
    expected, pos = start, 0
    try:
        for batch in iter_batches(buf):
            pos = batch.position
            batch.ensure_valid()  # Kafka's CorruptRecordException text
            if expected is not None and batch.last_offset < expected:
                pos += batch.size
                continue
            if (
                until is not None
                and batch.base_offset > until
                and (expected is None or expected > until)
            ):
                return None, expected
            if expected is not None and batch.base_offset > expected:
                return MetadataDamage(
                    path, pos, f"offsets {expected} to {batch.base_offset - 1} are missing"
                ), expected
            if not batch.is_control:
                for rec in batch.records():
                    if rec.value is None or expected is not None and rec.offset < expected:
                        continue
                    if until is not None and rec.offset > until:
                        break
                    offset = rec.offset if expected is not None else None
                    try:
                        record = decode_metadata_record(rec.value)
                    except KafkalogError as e:
                        image.undecoded(offset, e)  # a record 3.3.1 cannot read sets no config
                        continue
                    image.replay(record, offset)
            if expected is not None:
                expected = (
                    batch.last_offset + 1 if until is None else min(batch.last_offset, until) + 1
                )
            pos = batch.position + batch.size
    except KafkalogError as e:
        at = e.position if e.position is not None else pos
        if tail_may_be_cut and buf.count(0, at) == len(buf) - at:
            return None, expected  # zeros to the end: a crash's unwritten tail
        return MetadataDamage(path, at, e.message), expected
    if pos < len(buf) and not tail_may_be_cut:
        return MetadataDamage(path, pos, "an incomplete batch"), expected
    return None, expected


def log_dir_node_id(log_dir: Path) -> int | None:
    """node.id (KRaft) or broker.id (ZooKeeper era) from the log dir's meta.properties, as the
    broker reads it: None when there is none or the broker would refuse the value; one there but
    unreadable (a FIFO, permission denied) is an InputError, as the broker fails on it."""
    return _meta_ids(log_dir)[1]


def node_id_of(props: Mapping[str, str], *, path: str | None = None) -> int | None:
    """node.id (KRaft) or broker.id (ZooKeeper era) of server.properties, a ConfigDef INT (a value
    Kafka refuses raises, naming `path`). meta.properties: formats.meta_properties.MetaProperties."""
    from kafkalog_cli.formats.meta_properties import config_int

    return config_int(props, "node.id" if "node.id" in props else "broker.id", path=path)
