"""The Kafka version that will load a log dir next, as a range, and the rules that depend on it.

What a log dir holds bounds that version from below only: a broker never writes what it cannot
read, but metadata.version stays old until someone upgrades it, and a ZooKeeper-era dir says
nothing at all. So the version is a range [what the dir proves, the newest kafkalog knows]:

- metadata.version, the last FeatureLevelRecord "metadata.version" in __cluster_metadata (and in
  the log dir's bootstrap.checkpoint): its release (MetadataVersion: feature level 19 is 3.7-IV4,
  25 is 4.0-IV3, 29 is 4.2-IV1); a broker refuses to start on a metadata.version it does not know
  (QuorumController / BrokerServer: "unsupported metadata.version");
- meta.properties with a directory.id: 3.7 and later write it (MetaProperties, KIP-858);
- `.kafka_cleanshutdown` holding JSON ({"version":0,"brokerEpoch":N}): 3.7 and later write it
  (CleanShutdownFileHandler, KIP-966); 3.3 to 3.6 leave it empty;
- a KRaftVersion or KRaftVoters control record (types 5 and 6) in the metadata log's newest
  segment or snapshot: 3.9 and later write them (KafkaRaftClient, kraft.version 1: KIP-853);
- records only a 4.0+ coordinator writes, in the newest batches of the internal topics
  (record_evidence): a __transaction_state value of version 1 (TransactionLog.valueToBytes writes it
  once transaction.version >= 1, whose TV_1 needs metadata.version 4.0-IV0), a __share_group_state
  record (3.9 names the topic but has no share coordinator), a __consumer_offsets record type
  above 8 (3.9's CoordinatorRecordSerde reads 0-8).
Producer snapshots bound nothing (ProducerStateManager writes version 1 from 0.11 to 3.9), nor do
metadata record types beyond what metadata.version proves (each is gated by it).

kafkalog models 3.3 to 4.2; a version older than 3.3 follows 3.3's rules in every rule here. A
rule (VersionRule, "since" a version) applies where every version of the range agrees; where
they disagree the version stated with `--kafka-version` decides; where nothing decides and the
rule would decide a deletion, the op refuses (exit 7) and says how to state it.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalog_cli.errors import UsageError
from kafkalog_cli.formats.metadata_versions import METADATA_VERSIONS
from kafkalog_cli.storage.files import read_bytes_if_exists

if TYPE_CHECKING:
    from kafkalog_cli.storage.segment import Segment


@dataclass(frozen=True, order=True)
class KafkaVersion:
    """A Kafka release as its rules change: major.minor (a patch release changes none here)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str, option: str = "--kafka-version") -> KafkaVersion:
        """`3.9`, `3.9.0`, `3.9.0-rc3`, `4.0.0`."""
        m = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?(?:-[A-Za-z0-9.]+)?\s*", str(text))
        if not m:
            raise UsageError(f"{option}: {text!r} is not a Kafka version (e.g. 3.9 or 4.0.0)")
        version = cls(int(m.group(1)), int(m.group(2)))
        if version < OLDEST_MODELLED:
            version = (
                OLDEST_MODELLED  # older releases follow 3.3's rules in everything modelled here
            )
        return version

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


# the one list of the versions kafkalog's rules know (--kafka-version takes each; an older one
# follows 3.3's rules)
KNOWN_VERSIONS = tuple(KafkaVersion(3, m) for m in range(3, 10)) + tuple(
    KafkaVersion(4, m) for m in range(0, 3)
)
OLDEST_MODELLED, NEWEST_MODELLED = KNOWN_VERSIONS[0], KNOWN_VERSIONS[-1]
KNOWN_VERSIONS_TEXT = ", ".join(
    map(str, KNOWN_VERSIONS)
)  # `3.3, 3.4, ..., 4.2` for --help and errors

# MetadataVersion (server-common): feature level -> release. 1-3 are 3.0-3.2 (a KRaft dir of
# those is loaded by 3.3+ only after an upgrade), 30+ are releases after 4.2.
_MV_RELEASES = {
    **METADATA_VERSIONS,  # 1-29, the levels an image names
    30: "4.3-IV0",
    31: "4.4-IV0",
    32: "4.4-IV1",
    33: "4.4-IV2",
    34: "4.5-IV0",
}


def metadata_version_release(level: int) -> str | None:
    """`3.7-IV4` for feature level 19 (MetadataVersion); None for a level kafkalog does not know."""
    return _MV_RELEASES.get(level)


class VersionSource(enum.Enum):
    """What bounds the version, in words."""

    METADATA_VERSION = "metadata.version"
    DIRECTORY_ID = "meta.properties directory.id"
    CLEAN_SHUTDOWN = ".kafka_cleanshutdown content"
    TRANSACTION_STATE_VALUE = "__transaction_state value version"
    SHARE_GROUP_STATE_RECORD = "__share_group_state record"
    GROUP_RECORD_TYPE = "__consumer_offsets record type"
    TRANSACTIONS_V2_MARKER = "transactions version 2 marker"
    KRAFT_CONTROL_RECORD = "KRaft control record"
    KAFKA_VERSION_OPTION = "--kafka-version"


@dataclass(frozen=True)
class VersionEvidence:
    """One fact of the log dir that proves the next broker is at least `at_least`."""

    source: VersionSource
    at_least: KafkaVersion
    detail: str  # `feature level 19 (3.7-IV4)`
    path: str  # the file that holds it

    def __str__(self) -> str:
        return f"{self.source.value} {self.detail} in {self.path}: Kafka {self.at_least} or later"

    def to_dict(self) -> dict:
        return {
            "source": self.source.name,
            "at_least": str(self.at_least),
            "detail": self.detail,
            "path": self.path,
        }


@dataclass(frozen=True)
class VersionRule:
    """A rule that holds from Kafka `since` on; `where` cites Kafka's class and method."""

    name: str
    since: KafkaVersion
    where: str

    def applies(self, version: KafkaVersion) -> bool:
        return version >= self.since


@dataclass(frozen=True)
class RuleDecision:
    """Whether a rule applies to the log dir's next broker: True/False, or None when the versions
    of the range disagree and none was stated; `by` says what decided it, in words."""

    rule: VersionRule
    applies: bool | None
    by: str

    @property
    def known(self) -> bool:
        return self.applies is not None

    def refusal(self, what: str) -> str:
        """`<what> depends on the Kafka version ...; state it with --kafka-version`."""
        return (
            f"{what} depends on the Kafka version that will load the log dir ({self.rule.name}: Kafka "
            f"{self.rule.since} and later, {self.by}); state it with --kafka-version VERSION"
        )


@dataclass(frozen=True)
class KafkaVersions:
    """The range of Kafka versions that may load the log dir next, and the version stated."""

    evidence: tuple[VersionEvidence, ...] = ()
    stated: KafkaVersion | None = None

    @property
    def low(self) -> KafkaVersion:
        return max((e.at_least for e in self.evidence), default=OLDEST_MODELLED)

    @property
    def high(self) -> KafkaVersion:
        return max(NEWEST_MODELLED, self.low)

    @property
    def candidates(self) -> tuple[KafkaVersion, ...]:
        if self.stated is not None:
            return (self.stated,)
        return tuple(v for v in KNOWN_VERSIONS if v >= self.low) or (self.low,)

    @property
    def range_text(self) -> str:
        low = "3.3 or older" if self.low == OLDEST_MODELLED and not self.evidence else str(self.low)
        return (
            f"{low} to {self.high} (or later)" if self.low < self.high else f"{self.low} or later"
        )

    def decide(self, rule: VersionRule) -> RuleDecision:
        answers = {rule.applies(v) for v in self.candidates}
        if self.stated is not None:
            return RuleDecision(rule, rule.applies(self.stated), f"--kafka-version {self.stated}")
        if len(answers) == 1:
            return RuleDecision(
                rule, answers.pop(), f"every version the log dir allows ({self.range_text})"
            )
        return RuleDecision(rule, None, f"the log dir allows {self.range_text}")

    def applies(self, rule: VersionRule) -> bool | None:
        return self.decide(rule).applies

    def with_stated(self, stated: KafkaVersion | None) -> KafkaVersions:
        """These versions with `stated`, which the log dir must allow: a broker older than what the dir
        proves refuses to load it (a usage error naming the proof)."""
        if stated is not None:
            too_new = [e for e in self.evidence if e.at_least > stated]
            if too_new:
                raise UsageError(
                    f"--kafka-version {stated}: the log dir needs Kafka {too_new[0].at_least} or "
                    f"later ({too_new[0]})"
                )
        return KafkaVersions(self.evidence, stated)

    def to_dict(self) -> dict:
        return {
            "low": str(self.low),
            "high": str(self.high),
            "range": self.range_text,
            "stated": str(self.stated) if self.stated else None,
            "evidence": [e.to_dict() for e in self.evidence],
        }


def _release(text: str) -> KafkaVersion:
    return KafkaVersion.parse(text.split("-")[0])


def read_kafka_versions(
    log_dir: Path | str,
    metadata_version: int | None = None,
    metadata_path: str | None = None,
    stated: KafkaVersion | None = None,
) -> KafkaVersions:
    """What `log_dir` proves about its next broker: `metadata_version` (the feature level the
    caller replayed from __cluster_metadata, at `metadata_path`), bootstrap.checkpoint's,
    meta.properties' directory.id and .kafka_cleanshutdown's JSON. Never raises for what it
    reads: a file that cannot be read proves nothing."""
    log_dir = Path(log_dir)
    out: list[VersionEvidence] = []
    levels = [(metadata_version, metadata_path or str(log_dir / "__cluster_metadata-0"))]
    levels.append((bootstrap_metadata_version(log_dir), str(log_dir / "bootstrap.checkpoint")))
    for level, path in levels:
        if level is None or level < 1:
            continue
        release = metadata_version_release(level)
        at_least = (
            _release(release)
            if release
            else KafkaVersion(NEWEST_MODELLED.major, NEWEST_MODELLED.minor + 1)
        )
        out.append(
            VersionEvidence(
                VersionSource.METADATA_VERSION,
                max(at_least, OLDEST_MODELLED),
                f"feature level {level} ({release or 'newer than 4.2'})",
                path,
            )
        )
    props = _read_text(log_dir / "meta.properties")
    if props is not None and re.search(r"(?m)^\s*directory\.id\s*[=:]", props):
        out.append(
            VersionEvidence(
                VersionSource.DIRECTORY_ID,
                KafkaVersion(3, 7),
                "present",
                str(log_dir / "meta.properties"),
            )
        )
    clean = _read_text(log_dir / ".kafka_cleanshutdown")
    if clean and clean.strip():
        try:
            content = json.loads(clean)
        except ValueError:
            content = None
        if isinstance(content, dict) and "brokerEpoch" in content:
            out.append(
                VersionEvidence(
                    VersionSource.CLEAN_SHUTDOWN,
                    KafkaVersion(3, 7),
                    f'{{"version":{content.get("version")},"brokerEpoch":{content["brokerEpoch"]}}}',
                    str(log_dir / ".kafka_cleanshutdown"),
                )
            )
    out += kraft_control_evidence(log_dir)
    out += record_evidence(log_dir)
    if max((e.at_least for e in out), default=OLDEST_MODELLED) < TRANSACTIONS_V2.since:
        out += transactions_v2_evidence(log_dir)  # read only where it can raise the bound
    return KafkaVersions(tuple(out)).with_stated(stated)


_KAFKA_39 = KafkaVersion(3, 9)
_KRAFT_CONTROL_TYPES = {
    5: "KRaftVersion",
    6: "KRaftVoters",
}  # ControlRecordType KRAFT_VERSION, KRAFT_VOTERS


def kraft_control_evidence(log_dir: Path) -> list[VersionEvidence]:
    """A KRaftVersion or KRaftVoters control record in the newest snapshot or segment of the log
    dir's __cluster_metadata-0 (control batches only): Kafka 3.9 or later wrote it."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.formats.control import parse_type_id
    from kafkalog_cli.formats.records import iter_batches

    meta = log_dir / "__cluster_metadata-0"
    try:
        snapshots = sorted(f for f in meta.glob("*.checkpoint") if f.name[:20].isdigit())
        logs = sorted(f for f in meta.glob("*.log") if f.name[:20].isdigit())
    except OSError:
        return []
    from kafkalog_cli.storage.segment import map_file, unmap

    for path in snapshots[-1:] + logs[-1:]:
        buf = b""
        try:
            buf = map_file(path)
            for batch in iter_batches(buf):
                if not batch.is_control:
                    continue
                for r in batch.records():
                    name = _KRAFT_CONTROL_TYPES.get(parse_type_id(r.key))
                    if name is not None:
                        return [
                            VersionEvidence(
                                VersionSource.KRAFT_CONTROL_RECORD,
                                _KAFKA_39,
                                f"{name} at offset {r.offset} (kraft.version 1, KIP-853)",
                                str(path),
                            )
                        ]
        except (KafkalogError, OSError, ValueError):
            continue  # a damaged or unreadable file proves nothing
        finally:
            unmap(buf)
    return []


_KAFKA_40 = KafkaVersion(4, 0)
_TOPIC_EVIDENCE = ("__transaction_state", "__share_group_state", "__consumer_offsets")


def record_evidence(log_dir: Path) -> list[VersionEvidence]:
    """One VersionEvidence per internal topic whose newest batches (each partition's active
    segment, from its last offset-index entry: what the current broker wrote last, read cheaply)
    hold a record only Kafka 4.0+ writes; see the module's docstring."""
    found: dict[str, VersionEvidence] = {}
    try:
        dirs = sorted(
            p
            for p in log_dir.iterdir()
            if p.name.rsplit("-", 1)[0] in _TOPIC_EVIDENCE and p.is_dir()
        )
    except OSError:
        return []
    for d in dirs:
        topic = d.name.rsplit("-", 1)[0]
        if topic not in found:
            e = _newest_records_evidence(d, topic)
            if e is not None:
                found[topic] = e
    return [found[t] for t in _TOPIC_EVIDENCE if t in found]


def _active_segment(d: Path) -> Segment | None:
    """The partition dir's newest segment by its name, or None. A name no base offset can be read
    from is the commands' own finding (exit 4), not evidence, so it is passed over here."""
    from kafkalog_cli.storage.names import offset_from_name
    from kafkalog_cli.storage.segment import Segment

    logs = sorted(f for f in d.glob("*.log") if offset_from_name(f.name) is not None)
    return Segment.from_log_path(logs[-1]) if logs else None


def _newest_records_evidence(d: Path, topic: str) -> VersionEvidence | None:
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.formats.indexes import read_start
    from kafkalog_cli.formats.records import iter_batches

    seg = _active_segment(d)
    if seg is None:
        return None
    try:
        entry = seg.last_offset_index_entry()
        with seg.mapped() as buf:
            for batch in iter_batches(
                buf, read_start(entry[1], len(buf)) if entry and entry[1] < len(buf) else 0
            ):
                if batch.is_control:
                    continue
                for r in batch.records():
                    e = _record_evidence(topic, r, seg.path)
                    if e is not None:
                        return e
    except (KafkalogError, OSError):
        return None  # a damaged or unreadable tail proves nothing
    return None


def _record_evidence(topic: str, r, path: str) -> VersionEvidence | None:
    """The evidence record `r` gives, or None; only a record that reads as the coordinator's
    counts (bytes that merely start like one prove nothing)."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.formats.internal.coordinator import Coordinator, deserialize
    from kafkalog_cli.formats.internal.transaction_state import read_value_v0_or_v1

    if r.key is None or len(r.key) < 2:
        return None
    try:
        if topic == "__transaction_state":
            if r.value is not None and read_value_v0_or_v1(r.value).version == 1:
                return VersionEvidence(
                    VersionSource.TRANSACTION_STATE_VALUE,
                    _KAFKA_40,
                    f"1 at offset {r.offset} (transaction.version >= 1)",
                    path,
                )
        elif topic == "__share_group_state":
            rec = deserialize(Coordinator.SHARE, r.key, r.value)
            return VersionEvidence(
                VersionSource.SHARE_GROUP_STATE_RECORD,
                _KAFKA_40,
                f"{rec.name} at offset {r.offset} (the share coordinator, KIP-932)",
                path,
            )
        elif Coordinator.GROUP_39.schemas(int.from_bytes(r.key[:2], "big", signed=True)) is None:
            rec = deserialize(Coordinator.GROUP, r.key, r.value)
            return VersionEvidence(
                VersionSource.GROUP_RECORD_TYPE,
                _KAFKA_40,
                f"{rec.record_type} ({rec.name}) at offset {r.offset} (unknown to 3.9's group "
                f"coordinator)",
                path,
            )
    except KafkalogError:
        return None
    return None


# ------------------------------------------------------------------ transactions version 2
# KIP-890 part 2 (Kafka 4.0, transaction.version 2): the coordinator bumps the producer epoch at
# every commit and abort (TransactionMetadata.prepareAbortOrCommit when
# clientTransactionVersion.supportsEpochBump), so a transaction's data carry epoch E and its marker
# E + 1; at epoch exhaustion the marker goes under the old producer id at Short.MAX_VALUE and the
# producer continues under a new id (prepareComplete with nextProducerId). Before, a marker carries
# its data's epoch, except an ABORT after a fencing bump (prepareFenceProducerEpoch,
# InitProducerId over an ongoing transaction): so a COMMIT one epoch above its data is TV2's alone.
#
# What a broker does when it reads such a log is the same under both versions: the load replays
# the log as AppendOrigin.REPLICATION, whose ProducerAppendInfo.checkProducerEpoch only warns
# (4.0: on a lower epoch; later, given TV_UNKNOWN, as TV0), so appendEndTxnMarker takes a marker
# at any epoch and closes its producer's open transaction (ProducerStateEntry.update clears
# currentTxnFirstOffset and, at a new epoch, the batch metadata). Only the leader's append, from
# KAFKA-19446 on, refuses a TV2 marker at or below the current epoch, which kafkalog never does;
# and a 4.0 coordinator aborting at InitProducerId can write an ABORT two epochs up (KAFKA-19367,
# fixed in 4.1). So kafkalog reads every dir with that one rule, whatever the version: every
# COMMIT or ABORT marker of a producer closes its open transaction, at any epoch
# (ops.producer_rebuild, ops.consumer_view, ops.transactions). Where the version is unknown this
# is also the choice that loses nothing: refusing a marker on its epoch would leave its
# transaction open, hold the last stable offset there and hide every later record from a
# read_committed consumer.
TRANSACTIONS_V2 = VersionRule(
    "transactions version 2 (a producer epoch bump at every commit and abort)",
    KafkaVersion(4, 0),
    "TransactionMetadata.prepareAbortOrCommit / prepareComplete; ProducerAppendInfo.appendEndTxnMarker "
    "(KIP-890 part 2, TransactionVersion.TV_2, 4.0)",
)
_TV2_TAIL_BYTES = 1 << 20  # how far past its last offset-index entry a partition's tail is read
_TV2_PARTITIONS = 64  # how many partitions are read (a lower bound needs one proof, not all)


def transactions_v2_evidence(log_dir: Path) -> list[VersionEvidence]:
    """The first COMMIT marker found one epoch above the data batch of its producer right before
    it (see TRANSACTIONS_V2), in the newest batches of the log dir's partitions: each active
    segment from its last offset-index entry, at most 1 MiB, in at most 64 partitions (topics'
    first, by name, then the internal ones: transactional offset commits put markers in
    __consumer_offsets too), so that a dir of many partitions costs every command little. Never
    raises: what cannot be read proves nothing, nor does what is not read."""
    try:
        dirs = sorted(
            (
                p
                for p in log_dir.iterdir()
                if p.is_dir() and "-" in p.name and not p.name.startswith("__cluster_metadata-")
            ),
            key=lambda p: (p.name.startswith("__"), p.name),
        )[:_TV2_PARTITIONS]
    except OSError:
        return []
    for d in dirs:
        e = _tv2_marker_evidence(d)
        if e is not None:
            return [e]
    return []


def _tv2_marker_evidence(d: Path) -> VersionEvidence | None:
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.formats.control import ControlRecordType
    from kafkalog_cli.formats.indexes import read_start
    from kafkalog_cli.formats.records import iter_batches

    seg = _active_segment(d)
    if seg is None:
        return None
    last_data: dict[int, int] = {}  # producer id -> epoch of its last transactional data batch
    try:
        entry = seg.last_offset_index_entry()
        with seg.mapped() as buf:
            start = read_start(entry[1], len(buf)) if entry and entry[1] < len(buf) else 0
            for batch in iter_batches(buf, start, min(len(buf), start + _TV2_TAIL_BYTES)):
                if batch.magic < 2 or batch.producer_id < 0 or not batch.is_transactional:
                    continue
                pid = batch.producer_id
                if not batch.is_control:
                    last_data[pid] = batch.producer_epoch
                    continue
                data_epoch = last_data.pop(pid, None)
                if (
                    data_epoch is not None
                    and batch.producer_epoch == data_epoch + 1
                    and batch.control_type() is ControlRecordType.COMMIT
                ):
                    return VersionEvidence(
                        VersionSource.TRANSACTIONS_V2_MARKER,
                        TRANSACTIONS_V2.since,
                        f"COMMIT of producer {pid} at offset {batch.base_offset}, epoch {batch.producer_epoch}: its "
                        f"data's epoch + 1",
                        seg.path,
                    )
    except (KafkalogError, OSError):
        return None
    return None


def _read_text(path: Path) -> str | None:
    """The file's first 64 KiB as text, None when there is no file; one there that cannot be
    read is an InputError (the broker fails on it too)."""
    raw = read_bytes_if_exists(path, 1 << 16)
    return None if raw is None else raw.decode("utf-8", "replace")


def bootstrap_metadata_version(log_dir: Path, strict: bool = False) -> int | None:
    """metadata.version in the log dir's bootstrap.checkpoint (kafka-storage format writes it).
    `strict`: as BootstrapDirectory.readFromBinaryFile reads it at every start
    (KafkaRaftServer.initializeLogDirs): a batch or record it cannot read, or no metadata.version
    FeatureLevelRecord, raises CheckpointError (the broker exits); None only without the file."""
    path = log_dir / "bootstrap.checkpoint"
    buf = read_bytes_if_exists(path)  # unreadable: InputError, as BootstrapDirectory fails
    if buf is None:
        return None
    from kafkalog_cli.errors import CheckpointError, KafkalogError
    from kafkalog_cli.formats.internal.cluster_metadata import decode_metadata_record
    from kafkalog_cli.formats.records import iter_batches

    level = None
    try:
        for batch in iter_batches(buf):
            if batch.is_control:
                continue
            for rec in batch.records():
                try:
                    r = decode_metadata_record(rec.value)
                except KafkalogError:
                    if strict:
                        raise
                    continue
                if r.api_key == 12 and r.data.get("name") == "metadata.version":
                    level = r.data["featureLevel"]
    except KafkalogError as e:
        if strict:
            raise CheckpointError(e.message, path=str(path), position=e.position) from None
        return level
    if level is None and strict:
        raise CheckpointError(
            "No FeatureLevelRecord for metadata.version was found in the binary bootstrap metadata "
            f"file: {path}",
            path=str(path),
        )
    return level


# ------------------------------------------------------------------ the rules that changed
# Each cites where Kafka changed it; see the ops that use them.
TIERED_STORAGE = VersionRule(
    "tiered storage",
    KafkaVersion(3, 6),
    "UnifiedLog.isRemoteLogEnabled / deletableSegments (3.6: remote.storage.enable acts; before, it is ignored)",
)
TIERED_ROLL_AND_START_OFFSET = VersionRule(
    "tiered retention rolls the active segment and deletes below the log start offset",
    KafkaVersion(3, 7),
    "UnifiedLog.deletableSegments: shouldRoll, allowDeletionDueToLogStartOffsetIncremented (3.7)",
)
TIERED_LOG_START_CHECKPOINT = VersionRule(
    "log-start-offset-checkpoint lists every remote-enabled partition",
    KafkaVersion(3, 8),
    "LogManager.checkpointLogStartOffsetsInDir: log.remoteLogEnabled() || ... (KAFKA-16146, 3.8)",
)
REMOTE_LOG_COPY_DISABLE = VersionRule(
    "remote.log.copy.disable",
    KafkaVersion(3, 9),
    "UnifiedLog.remoteLogEnabledAndRemoteCopyEnabled (3.9, KIP-950)",
)
SHARE_GROUP_STATE_INTERNAL = VersionRule(
    "__share_group_state is internal",
    KafkaVersion(3, 9),
    "Topic.INTERNAL_TOPICS (3.9 adds SHARE_GROUP_STATE_TOPIC_NAME)",
)
EARLIEST_LOCAL_TIMESTAMP = VersionRule(
    "ListOffsets earliest-local (-4)",
    KafkaVersion(3, 5),
    "UnifiedLog.fetchOffsetByTimestamp: ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP (3.5)",
)
LATEST_TIERED_TIMESTAMP = VersionRule(
    "ListOffsets latest-tiered (-5)",
    KafkaVersion(3, 9),
    "UnifiedLog.fetchOffsetByTimestamp: ListOffsetsRequest.LATEST_TIERED_TIMESTAMP (3.9, KIP-1005)",
)
MAX_TIMESTAMP_EXACT = VersionRule(
    "max-timestamp answers the record with the largest timestamp",
    KafkaVersion(3, 8),
    "UnifiedLog.fetchOffsetByTimestamp: MAX_TIMESTAMP searches the batch (KAFKA-16310, 3.8)",
)
TIME_INDEX_BATCH_LAST_OFFSET = VersionRule(
    "an append indexes its max timestamp at the batch's last offset",
    KafkaVersion(3, 8),
    "LogValidator.assignOffsetsNonCompressed: shallowOffsetOfMaxTimestamp = offsetCounter.value - 1, kept by "
    "LogSegment.append (KAFKA-16310, 3.8; before, the first record holding the max)",
)

PRODUCER_SNAPSHOT_INSERTION_ORDER = VersionRule(
    "producer snapshots list a hash bucket's producers in insertion order",
    KafkaVersion(3, 5),
    "ProducerStateManager.writeSnapshot(file, producers, sync) iterates `producers`, a java.util.HashMap<Long, "
    "ProducerStateEntry> (storage module, KAFKA-14480, 3.5); 3.3/3.4's Scala mutable.HashMap sorts a bucket by hash",
)

CLEANER_RETAINS_LAST_BATCH = VersionRule(
    "the cleaner retains the last batch of a round",
    KafkaVersion(4, 0),
    "Cleaner.cleanInto: batch.nextOffset == upperBoundOffsetOfCleaningRound -> RETAIN_EMPTY (KAFKA-17076, 4.0)",
)
SEGMENT_BYTES_FLOOR_1MIB = VersionRule(
    "segment.bytes at least 1 MiB",
    KafkaVersion(4, 0),
    "LogConfig: SEGMENT_BYTES_CONFIG atLeast(1024 * 1024) (KIP-1030, 4.0)",
)

REMOTE_RETENTION_BOUNDS = VersionRule(
    "local retention within the total retention",
    KafkaVersion(3, 6),
    "LogConfig.validateRemoteStorageRetentionSize / validateRemoteStorageRetentionTime (KAFKA-15295, 3.6)",
)
REMOTE_COPY_DISABLE_RETENTION = VersionRule(
    "remote.log.copy.disable with local retention equal to the total",
    KafkaVersion(3, 9),
    "LogConfig.validateRetentionConfigsWhenRemoteCopyDisabled (KIP-950, 3.9)",
)

ALWAYS = VersionRule("internal topic", OLDEST_MODELLED, "Topic.INTERNAL_TOPICS")

# Topic.isInternal by version (clients/src/main/java/org/apache/kafka/common/internals/Topic.java:
# 3.3.1 to 3.8 __consumer_offsets and __transaction_state; 3.9 to 4.2 also __share_group_state).
# The KRaft metadata log and __remote_log_metadata are not in Kafka's list.
INTERNAL_TOPIC_RULES = {
    "__consumer_offsets": ALWAYS,
    "__transaction_state": ALWAYS,
    "__share_group_state": SHARE_GROUP_STATE_INTERNAL,
}


def internal_topic(topic: str, versions: KafkaVersions) -> RuleDecision | None:
    """Whether Topic.isInternal(topic) on the next broker (None: a topic no version calls internal)."""
    rule = INTERNAL_TOPIC_RULES.get(topic)
    return None if rule is None else versions.decide(rule)


# ------------------------------------------------------------------ Kafka 4.x: tools and start-up
EARLIEST_PENDING_UPLOAD_TIMESTAMP = VersionRule(
    "ListOffsets earliest-pending-upload (-6)",
    KafkaVersion(4, 2),
    "UnifiedLog.fetchOffsetByTimestamp -> fetchEarliestPendingUploadOffset; GetOffsetShell.parseOffsetSpec "
    "(-6 or earliest-pending-upload: OffsetSpec.earliestPendingUpload) (KIP-1023, 4.2)",
)
DUMP_LOG_LEADER_CHANGE = VersionRule(
    "kafka-dump-log decodes LeaderChange control records",
    KafkaVersion(4, 1),
    "DumpLogSegments control records: LEADER_CHANGE -> ControlRecordUtils.deserializeLeaderChangeMessage, "
    '" LeaderChange: " + LeaderChangeMessageJsonConverter.write (KAFKA-19069, 4.1)',
)

# ------------------------------------------------------------------ kafka-dump-log's text
# What changes in `kafka-dump-log --print-data-log` with the release, read from each release's
# source: apache/kafka tags 3.3.1, 3.4.0, 3.4.1, 3.5.0, 3.6.0, 3.7.0, 3.8.0, 3.9.0-rc3; 4.0 from
# the Apache 4.0 branch at 4ae681446f (the commit before "MINOR: Bump to 4.0.1-SNAPSHOT", i.e.
# 4.0.0's code; the release tag's commit is not reachable here); 4.1 from the 4.1.0 release commit
# 13f70256db ("Bump version to 4.1.0"). docs/kafka-4-parity.md lists them release by release.
DUMP_LOG_UNKNOWN_COORDINATOR_KEY = VersionRule(
    "kafka-dump-log prints a coordinator key of an unknown version as unknown::version=N and reads "
    "the flexible value versions",
    KafkaVersion(3, 4),
    "GroupMetadataManager.readMessageKey / TransactionLog.readTxnRecordKey: UnknownKey, "
    "formatRecordKeyAndValue: `unknown::version=N`; OffsetCommitValue and GroupMetadataValue 0-4, "
    "TransactionLogValue 0-1 (KAFKA-14869, KIP-915: 3.5.0 and 3.4.1; 3.4.0 throws as 3.3.1 does)",
)
DUMP_LOG_OFFSETS_AS_JSON = VersionRule(
    "kafka-dump-log prints __consumer_offsets records as JSON",
    KafkaVersion(3, 8),
    "DumpLogSegments.OffsetsMessageParser: CoordinatorRecordSerde.deserialize and the generated "
    "*JsonConverter.write (KAFKA-16470, 3.8)",
)
DUMP_LOG_GROUP_RECORDS_4_0 = VersionRule(
    "kafka-dump-log reads the share group and regular expression group records (types 9-16)",
    KafkaVersion(4, 0),
    "GroupCoordinatorRecordSerde.apiMessageKeyFor: 0-16 (4.0; 3.8 and 3.9's CoordinatorRecordSerde: 0-8)",
)
DUMP_LOG_COORDINATOR_VALUE_VERSION = VersionRule(
    "kafka-dump-log skips a coordinator value of a version its schema does not have",
    KafkaVersion(4, 0),
    "CoordinatorRecordSerde.deserialize: UnknownRecordVersionException, `Found an unknown record "
    "version V for T type` (KAFKA-18672, 4.0)",
)
DUMP_LOG_TRANSACTION_VERSION_LEVEL = VersionRule(
    "kafka-dump-log dies on a __transaction_state value whose clientTransactionVersion it does not know",
    KafkaVersion(4, 0),
    "TransactionLog.readTxnRecordValue: TransactionVersion.fromFeatureLevel(clientTransactionVersion) "
    "(IllegalArgumentException `No feature:transaction.version with feature level N`; 4.0: levels 0-2)",
)
DUMP_LOG_COORDINATOR_SERDE_JSON = VersionRule(
    "kafka-dump-log prints every coordinator record as the coordinator serde's JSON",
    KafkaVersion(4, 1),
    "DumpLogSegments.CoordinatorRecordMessageParser; TransactionLogMessageParser over "
    "TransactionCoordinatorRecordSerde (KAFKA-18207, KAFKA-18308: after the 4.0 branch, so 4.1)",
)
DUMP_LOG_SHARE_GROUP_STATE_DECODER = VersionRule(
    "kafka-dump-log --share-group-state-decoder",
    KafkaVersion(4, 0),
    "DumpLogSegments.ShareGroupStateMessageParser over ShareCoordinatorRecordSerde (KAFKA-17633, 4.0: "
    'the value as {"type":"V","data":...}, SnapshotEpoch a uint16; from 4.1 the newest text; before '
    "4.0, kafkalog prints the newest text)",
)
DUMP_LOG_REMOTE_LOG_METADATA_DECODER = VersionRule(
    "kafka-dump-log --remote-log-metadata-decoder",
    KafkaVersion(3, 9),
    "DumpLogSegments.RemoteMetadataLogMessageParser: RemoteLogMetadataSerde.deserialize(...).toString "
    "(KAFKA-16228, 3.9; before, kafkalog prints the newest text)",
)
DUMP_LOG_TXN_IDX_EMPTY = VersionRule(
    "RemoteLogSegmentMetadata's text ends with txnIdxEmpty",
    KafkaVersion(4, 0),
    "RemoteLogSegmentMetadata.toString: `, txnIdxEmpty=` (KAFKA-16780, KIP-1058, 4.0)",
)
# the metadata records each release's MetadataRecordType knows (metadata/src/main/resources/common/
# metadata/*.json at the release), each rule a change: a release reads the records of the newest
# rule that applies; formats.internal.cluster_metadata.METADATA_SCHEMAS_BY_RELEASE holds them,
# keyed by the rule's `since` (3.3 is 3.3.1's transcription)
DUMP_LOG_METADATA_RECORDS = (
    VersionRule(
        "metadata records up to 3.4-IV0",
        KafkaVersion(3, 4),
        "ZkMigrationStateRecord (21), RegisterBrokerRecord v2 IsMigratingZkBroker (KAFKA-14304, KIP-866, 3.4)",
    ),
    VersionRule(
        "metadata records up to 3.5-IV2",
        KafkaVersion(3, 5),
        "RemoveUserScramCredentialRecord (22) and UserScramCredentialRecord's own fields (KAFKA-14084); "
        "AccessControlRecord (6) gone (KAFKA-14796) (3.5)",
    ),
    VersionRule(
        "metadata records up to 3.6-IV2",
        KafkaVersion(3, 6),
        "Begin/End/AbortTransactionRecord (23-25, KAFKA-14538, KIP-868), RemoveDelegationTokenRecord "
        "(26) and DelegationTokenRecord.Requester (KAFKA-15219) (3.6)",
    ),
    VersionRule(
        "metadata records up to 3.7-IV4",
        KafkaVersion(3, 7),
        "RegisterControllerRecord (27, KAFKA-15369), PartitionRecord and PartitionChangeRecord v1-2 "
        "(Directories, KAFKA-15355; EligibleLeaderReplicas and LastKnownELR, KAFKA-15581), "
        "RegisterBrokerRecord v3 and BrokerRegistrationChangeRecord v2 LogDirs (KAFKA-15355) (3.7)",
    ),
    VersionRule(
        "metadata records up to 3.9-IV0",
        KafkaVersion(3, 8),
        "PartitionRecord / PartitionChangeRecord: LastKnownELR renamed LastKnownElr, so the JSON "
        "says `lastKnownElr` (KAFKA-15585, 3.8; 3.9 the same)",
    ),
    VersionRule(
        "metadata records up to 4.2-IV1",
        KafkaVersion(4, 0),
        "ClearElrRecord (28, KAFKA-16540, 4.0; 4.1 and 4.2 add no record type or version)",
    ),
)


def dump_log_metadata_records(version: KafkaVersion) -> VersionRule | None:
    """The DUMP_LOG_METADATA_RECORDS rule whose records kafka-dump-log of `version` knows (None:
    3.3.1's)."""
    found = [r for r in DUMP_LOG_METADATA_RECORDS if r.applies(version)]
    return found[-1] if found else None


KRAFT_ONLY = VersionRule(
    "KRaft only: no ZooKeeper mode",
    KafkaVersion(4, 0),
    "KRaftConfigs.CONFIG_DEF: process.roles has no default (Missing required configuration); Kafka.buildServer "
    "builds a KafkaRaftServer only (KIP-500, 4.0)",
)
METADATA_VERSION_FLOOR = VersionRule(
    "metadata.version at least 3.3-IV3 (feature level 7)",
    KafkaVersion(4, 0),
    "MetadataVersion.fromFeatureLevel / MINIMUM_VERSION = IBP_3_3_IV3, read by BootstrapMetadata.metadataVersion "
    'and FeatureControlManager.replay (4.0; the 4.0 upgrade notes: "at least 3.3.x")',
)
REMOVED_BROKER_CONFIGS = VersionRule(
    "broker configs 4.0 removed are ignored",
    KafkaVersion(4, 0),
    "AbstractConfig.logUnused: an unknown config is logged and ignored (KIP-724 message format, KIP-500 "
    "ZooKeeper, KIP-937; the 4.0 upgrade notes)",
)
DIRECTORY_ID_ENSEMBLE = VersionRule(
    "meta.properties directory.id: written, unique, not reserved",
    KafkaVersion(3, 7),
    "MetaPropertiesEnsemble.verify (DirectoryId.reserved, duplicate directory ID) and "
    "MetaPropertiesEnsemble.Copier.generateValidDirectoryId (KIP-858, 3.7)",
)
META_PROPERTIES_V0_IN_KRAFT = VersionRule(
    "a version 0 meta.properties (broker.id) is read in KRaft",
    KafkaVersion(3, 7),
    "MetaProperties.Builder(Properties): version 0 reads broker.id, neither it nor cluster.id required; "
    "MetaPropertiesEnsemble.verify requires version 0 only of ZooKeeper brokers (REQUIRE_V0) (3.7; 3.3.1's "
    'KafkaRaftServer: "Expected version 1")',
)

STRAY_KEPT = VersionRule(
    "a partition the metadata does not assign here is kept, renamed -stray",
    KafkaVersion(3, 7),
    "LogManager.loadLog: isStray -> renameDir(logStrayDirName) (3.7; 3.0 to 3.6 delete it at start: "
    "BrokerMetadataPublisher.findStrayPartitions -> ReplicaManager.deleteStrayReplicas)",
)
PARTITION_METADATA_NEWER_VERSIONS = VersionRule(
    "partition.metadata of a version above 0 is read",
    KafkaVersion(3, 7),
    'PartitionMetadataReadBuffer.read: "version >= CURRENT_VERSION" (3.7; before, only version 0: '
    '"Unrecognized version of partition metadata file")',
)
QUORUM_STATE_READ_FATAL = VersionRule(
    "a quorum-state that cannot be read stops the broker",
    KafkaVersion(3, 8),
    "QuorumState.initialize -> readElectionState: FileQuorumStateStore's UncheckedIOException is no longer "
    'caught (3.8; before, "Clearing local quorum state store after error loading state")',
)
QUORUM_VOTERS_FROM_CONFIG_ONLY = VersionRule(
    "quorum-state's voters need not be controller.quorum.voters",
    KafkaVersion(3, 8),
    'QuorumState.initialize: "Configured voter set ... is different from the voter set read from the state '
    'file" and "with a voted candidate ... is not a voter" (3.3 to 3.7: IllegalStateException; 3.8 takes '
    "the voters from the configuration and the log)",
)
REMOTE_INDEX_CACHE_DIR = VersionRule(
    "remote-log-index-cache in a log dir is not a partition",
    KafkaVersion(3, 5),
    "LogManager.loadLogs: !logDir.getName.equals(RemoteIndexCache.DIR_NAME) (3.5, tiered storage's index cache)",
)

# the highest metadata.version (feature level) each release knows: MetadataVersion.latestTesting
# (a broker refuses a higher one: "No MetadataVersion with feature level N")
LATEST_METADATA_VERSION = {KafkaVersion(4, 0): 25, KafkaVersion(4, 1): 27, KafkaVersion(4, 2): 29}
MINIMUM_METADATA_VERSION_4X = 7  # IBP_3_3_IV3

# what --help says changes with --kafka-version, one line per rule: the rules of the commands
# that read and change partitions (doctor's start-up rules and dump-log's text say theirs)
VERSION_RULES = (
    EARLIEST_LOCAL_TIMESTAMP,
    TIERED_STORAGE,
    REMOTE_RETENTION_BOUNDS,
    TIERED_ROLL_AND_START_OFFSET,
    MAX_TIMESTAMP_EXACT,
    TIME_INDEX_BATCH_LAST_OFFSET,
    TIERED_LOG_START_CHECKPOINT,
    LATEST_TIERED_TIMESTAMP,
    REMOTE_LOG_COPY_DISABLE,
    REMOTE_COPY_DISABLE_RETENTION,
    SHARE_GROUP_STATE_INTERNAL,
    CLEANER_RETAINS_LAST_BATCH,
    SEGMENT_BYTES_FLOOR_1MIB,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP,
)
START_UP_RULES = (
    DIRECTORY_ID_ENSEMBLE,
    META_PROPERTIES_V0_IN_KRAFT,
    KRAFT_ONLY,
    METADATA_VERSION_FLOOR,
    REMOVED_BROKER_CONFIGS,
    PARTITION_METADATA_NEWER_VERSIONS,
    QUORUM_STATE_READ_FATAL,
    QUORUM_VOTERS_FROM_CONFIG_ONLY,
    REMOTE_INDEX_CACHE_DIR,
    STRAY_KEPT,
)  # doctor --kafka-version (ops/kafka_startup.py)


def rules_summary(rules=VERSION_RULES) -> str:
    """`3.5+ ListOffsets earliest-local (-4); 3.6+ tiered storage; ...` for --help."""
    return "; ".join(f"{r.since}+ {r.name}" for r in sorted(rules, key=lambda r: r.since))


def stated_version(text: str | None, option: str = "--kafka-version") -> KafkaVersion | None:
    """--kafka-version's value: one of KNOWN_VERSIONS (an older release follows 3.3's rules), a
    usage error for a release newer than kafkalog's rules know."""
    if text is None:
        return None
    v = KafkaVersion.parse(text, option)
    if v > NEWEST_MODELLED:
        raise UsageError(
            f"{option} {text}: kafkalog knows the rules of Kafka {KNOWN_VERSIONS_TEXT} "
            f"(an older release follows {OLDEST_MODELLED}'s)"
        )
    return v
