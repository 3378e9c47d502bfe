"""`doctor`: will a Kafka broker start on these log dirs, and if not, why and what fixes it.

Each check follows what Kafka 3.3.1 does at start-up, in its order: KafkaRaftServer.initializeLogDirs
(meta.properties of every log dir: present, parseable, one and the same, node.id as configured;
`__cluster_metadata-0` only in the metadata log dir), LogManager's `.lock` and its loadLogs (every
subdirectory must parse as a partition dir; the recovery-point and log-start checkpoints are
read leniently; a partition whose files cannot be read or written, or whose leader-epoch-checkpoint
is damaged, takes its log dir offline; a segment that cannot be recovered stops the broker), then
the first checkpoint writes, which a full disk fails. A log dir taken offline stops the broker when
it is the last one (LogManager: "Shutdown broker because all log dirs ... have failed").

A finding names its severity (error: the broker will not start; warning: it starts, but loses or
drops something, or a log dir goes offline; note: it starts and copes), what the broker does with
it in its own words, and the fix, a kafkalog command where one exists. Reading only: nothing here
changes a file, and a held `.lock` is a finding, not a refusal.
"""

from __future__ import annotations

import enum
import errno
import os
import pwd
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.config import KafkaVersion, node_id_of
from kafkalog_cli.config.versions import (
    META_PROPERTIES_V0_IN_KRAFT,
    PARTITION_METADATA_NEWER_VERSIONS,
    QUORUM_STATE_READ_FATAL,
    QUORUM_VOTERS_FROM_CONFIG_ONLY,
    REMOTE_INDEX_CACHE_DIR,
    STRAY_KEPT,
)
from kafkalog_cli.errors import CheckpointError, InputError, KafkalogError
from kafkalog_cli.formats.checkpoints import (
    PartitionMetadataError,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
    parse_properties,
)
from kafkalog_cli.formats.meta_properties import MetaProperties
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.storage import files, names
from kafkalog_cli.storage.lock import holder_pid
from kafkalog_cli.storage.names import PartitionDirKind, parse_partition_dir_name
from kafkalog_cli.storage.space import FreeSpace

METADATA_DIR = "__cluster_metadata-0"
REMOTE_INDEX_CACHE = "remote-log-index-cache"  # RemoteIndexCache.DIR_NAME
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.METADATA_TOPIC_ID: Uuid(0, 1)
# what a KRaft broker logs when a log's load throws what LogManager.loadLogs does not catch
FATAL_LOAD = (
    '"There was an error in one of the threads during logs loading", then "Encountered fatal fault: '
    'Error starting LogManager": the broker exits'
)
ROOT_FILES = {
    names.META_PROPERTIES,
    names.RECOVERY_POINT_CHECKPOINT,
    names.LOG_START_OFFSET_CHECKPOINT,
    names.REPLICATION_CHECKPOINT,
    names.CLEANER_CHECKPOINT,
    names.LOCK_FILE,
    names.CLEAN_SHUTDOWN_FILE,
    "bootstrap.checkpoint",
}


class Severity(str, enum.Enum):
    ERROR = "error"  # the broker will not start
    WARNING = "warning"  # it starts, but loses or drops something, or takes a log dir offline
    NOTE = "note"  # it starts and copes


@dataclass
class Finding:
    severity: Severity
    check: str  # meta.properties, lock, access, space, checkpoint, segment, crc, directory, file
    path: str
    problem: str
    broker: str  # what the broker does with it, in its words
    fix: str
    offline: bool = False  # the broker takes this log dir offline (an error when it is the last)
    log_dir: str | None = None
    unchecked: bool = False  # a check that could not be made: no all-clear can be given

    def to_dict(self) -> dict:
        return {
            "severity": self.severity.value,
            "check": self.check,
            "path": self.path,
            "problem": self.problem,
            "broker": self.broker,
            "fix": self.fix,
        }


@dataclass
class Diagnosis:
    log_dirs: list[str]
    findings: list[Finding] = field(default_factory=list)
    # what kafkalog itself could not read (permission denied to this process): not checked, so
    # never an all-clear (the command names each and exits 4)
    unread: list[InputError] = field(default_factory=list)

    @property
    def starts(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def verdict(self) -> str:
        if not self.starts:
            return "a broker will not start on these log dirs"
        unread = (
            f" (not checked: {len(self.unread)} path(s) kafkalog could not read)"
            if self.unread
            else ""
        )
        if any(f.unchecked for f in self.findings) or self.unread:
            return "not known whether a broker starts: some checks could not be made" + unread
        if any(f.severity is Severity.WARNING for f in self.findings):
            return "a broker starts, with warnings" + unread
        return "a broker starts on these log dirs" + unread

    def to_dict(self) -> dict:
        return {
            "log_dirs": self.log_dirs,
            "starts": self.starts,
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.findings],
            "unread": [e.line() for e in self.unread],
        }


@dataclass(frozen=True)
class BrokerConfig:
    """What server.properties says about the log dirs (all None without one)."""

    node_id: int | None = None
    kraft: bool | None = None
    log_dirs: tuple[str, ...] = ()
    metadata_log_dir: str | None = None
    path: str | None = None
    refused: str | None = None  # a value KafkaConfig refuses (the broker exits before its log dirs)
    quorum_voters: frozenset[int] | None = None  # controller.quorum.voters' ids (None: not set)

    @classmethod
    def read(cls, path: Path | None) -> BrokerConfig:
        if path is None:
            return cls()
        props = parse_properties(files.read_bytes(path), path=str(path))
        refused = None
        try:
            node = node_id_of(props, path=str(path))
        except CheckpointError as e:
            node, refused = None, e.message
        dirs = props.get("log.dirs", props.get("log.dir", ""))
        return cls(
            node,
            bool(props.get("process.roles", "").strip()),
            tuple(d.strip() for d in dirs.split(",") if d.strip()),
            props.get("metadata.log.dir"),
            str(path),
            refused,
            _voter_ids(props.get("controller.quorum.voters")),
        )


def _voter_ids(value: str | None) -> frozenset[int] | None:
    """The ids of controller.quorum.voters (`id@host:port,...`, QuorumConfig.parseVoterConnections);
    None when it is not set or not in that shape (KafkaConfig says so, not this check)."""
    if value is None or not value.strip():
        return None
    ids = set()
    for entry in value.split(","):
        node, at, _ = entry.strip().partition("@")
        if not at or not node.strip().isdigit():
            return None
        ids.add(int(node))
    return frozenset(ids)


def diagnose(
    log_dirs: list[Path],
    config: BrokerConfig = BrokerConfig(),
    user: str | None = None,
    kafka_version: KafkaVersion | None = None,
) -> Diagnosis:
    """`kafka_version`: also that release's start-up rules beyond 3.3.1's (ops.kafka_startup)."""
    log_dirs = [Path(d) for d in log_dirs]
    diag = Diagnosis([str(d) for d in log_dirs])
    out = diag.findings
    metas = {d: _meta(d) for d in log_dirs}
    kraft = (
        config.kraft
        if config.kraft is not None
        else (
            any(m.get("version") == "1" for m in metas.values() if isinstance(m, dict))
            or any((d / METADATA_DIR).is_dir() for d in log_dirs)
        )
    )
    metadata_dir = Path(config.metadata_log_dir) if config.metadata_log_dir else log_dirs[0]
    if config.refused:
        out.append(
            Finding(
                Severity.ERROR,
                "server.properties",
                config.path or "server.properties",
                config.refused,
                f"ConfigException: {config.refused}: the broker exits before it reads its log dirs",
                f"set a number from 0 to 2147483647 in {config.path}",
            )
        )
    out += check_meta_properties(
        metas,
        config,
        kraft,
        metadata_dir,
        kafka_version is not None and META_PROPERTIES_V0_IN_KRAFT.applies(kafka_version),
    )
    if kafka_version is not None:
        from kafkalog_cli.ops.kafka_startup import check_startup

        out += check_startup(
            kafka_version,
            log_dirs,
            metas,
            config,
            metadata_dir,
            lambda severity, *rest: Finding(Severity(severity), *rest),
        )
    topic_ids = _image_topic_ids(metadata_dir)
    out += check_bootstrap(metadata_dir)
    out += check_quorum_state(
        metadata_dir,
        None if kafka_version is None else QUORUM_STATE_READ_FATAL.applies(kafka_version),
    )
    out += check_quorum_voters(
        metadata_dir,
        config,
        None
        if kafka_version is None
        else not QUORUM_VOTERS_FROM_CONFIG_ONLY.applies(kafka_version),
    )
    out += check_duplicate_partitions([d for d in log_dirs if d.is_dir()])
    stated = {
        rule: kafka_version is not None and rule.applies(kafka_version)
        for rule in (PARTITION_METADATA_NEWER_VERSIONS, REMOTE_INDEX_CACHE_DIR)
    }
    for d in log_dirs:
        if not d.is_dir():
            continue
        meta = metas[d]
        since_3_7 = isinstance(meta, dict) and "directory.id" in meta  # 3.7+ writes a directory.id
        newer_metadata = since_3_7 or stated[PARTITION_METADATA_NEWER_VERSIONS]
        index_cache = since_3_7 or stated[REMOTE_INDEX_CACHE_DIR]
        for check in (
            lambda d: check_lock(d, diag.unread),
            lambda d: check_access(d, user),
            lambda d, since_3_7=since_3_7, index_cache=index_cache: check_directories(
                d, since_3_7, index_cache
            ),
            check_file_types,
            check_offset_names,
            lambda d, newer=newer_metadata: check_partition_metadata(
                d, newer, topic_ids, diag.unread
            ),
            lambda d: check_checkpoints(d, diag.unread),
            lambda d: check_segments(d, diag.unread),
            check_space,
            check_links,
        ):
            for f in check(d):
                f.log_dir = str(d)
                out.append(f)
    out += check_assignments(
        log_dirs,
        metadata_dir,
        config.node_id if config.node_id is not None else _node_id(metas),
        diag.unread,
        # a 3.7+ broker writes a directory.id in every log dir it starts on
        stray_kept=any(isinstance(m, dict) and "directory.id" in m for m in metas.values())
        or (kafka_version is not None and STRAY_KEPT.applies(kafka_version)),
        kraft=kraft,
    )
    first: dict[str, InputError] = {}
    for e in diag.unread:
        first.setdefault(e.line(), e)
    diag.unread[:] = first.values()
    # a log dir taken offline stops the broker when no log dir is left
    offline = {f.log_dir for f in out if f.offline}
    if offline and {str(d) for d in log_dirs} <= offline:
        for f in out:
            if f.offline and f.severity is Severity.WARNING:
                f.severity = Severity.ERROR
                f.broker += (
                    '; with no log dir left: "Shutdown broker because all log dirs in '
                    f'{", ".join(map(str, log_dirs))} have failed"'
                )
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTE: 2}
    out.sort(key=lambda f: order[f.severity])
    return diag


# ------------------------------------------------------------------ meta.properties
@dataclass(frozen=True)
class UnparsableProperties:
    """A meta.properties that Properties.load itself refuses (a malformed \\uxxxx escape): its
    IllegalArgumentException is no IOException, so BrokerMetadataCheckpoint.read's caller does
    not take the log dir offline; the broker exits."""

    message: str


def _meta(d: Path) -> dict | str | UnparsableProperties | None:
    """The log dir's meta.properties as Properties.load reads it, None when missing, the reason
    it cannot be read, or what Properties.load refuses in it."""
    try:
        raw = files.read_bytes_if_exists(d / names.META_PROPERTIES)
    except (
        KafkalogError
    ) as e:  # a FIFO, a directory, permission denied: the broker fails to read it
        return e.message
    if raw is None:
        return None
    try:
        return parse_properties(raw, path=str(d / names.META_PROPERTIES))
    except CheckpointError as e:
        return UnparsableProperties(e.message)


def check_meta_properties(
    metas: dict, config: BrokerConfig, kraft: bool, metadata_dir: Path, v0_in_kraft: bool = False
) -> list[Finding]:
    """`v0_in_kraft`: the broker reads a version 0 meta.properties in KRaft too (3.7+:
    config.versions.META_PROPERTIES_V0_IN_KRAFT); 3.3.1 requires version 1."""
    out = []
    format_fix = (
        "kafka-storage.sh format --ignore-formatted -c server.properties -t {cluster} (the cluster.id "
        "of the other log dirs; on a log dir that held data, restore its meta.properties instead)"
    )
    clusters = {
        m.get("cluster.id") for m in metas.values() if isinstance(m, dict) and m.get("cluster.id")
    }
    cluster = next(iter(clusters)) if len(clusters) == 1 else "CLUSTER_ID"
    seen: dict[Path, dict] = {}
    for d, m in metas.items():
        f = str(d / names.META_PROPERTIES)
        if isinstance(m, str):
            out.append(
                Finding(
                    Severity.ERROR if d == metadata_dir else Severity.WARNING,
                    "meta.properties",
                    f,
                    f"cannot be read: {m}",
                    f'"Failed to read {f}": the log dir is offline; the metadata log dir\'s stops the '
                    'start ("Cannot start server since `meta.properties` could not be loaded")',
                    f"replace it with a regular file holding this broker's meta.properties (ls -l {f})"
                    if _not_regular(f)
                    else f"chown/chmod it so the broker's user reads it (ls -l {f})",
                    offline=True,
                )
            )
            continue
        if isinstance(m, UnparsableProperties):
            out.append(
                Finding(
                    Severity.ERROR,
                    "meta.properties",
                    f,
                    f'damaged: "{m.message}"',
                    "IllegalArgumentException at start (Properties.load): the broker exits",
                    f"restore it from a copy, or write version=1, cluster.id={cluster} and the broker's "
                    f"node.id in it (kafka-storage.sh format -t {cluster} writes a new one)",
                )
            )
            continue
        if m is None:
            if kraft:
                out.append(
                    Finding(
                        Severity.ERROR,
                        "meta.properties",
                        f,
                        "missing",
                        f"KafkaException: No `meta.properties` found in {d} (have you run `kafka-storage.sh` "
                        "to format the directory?)",
                        format_fix.format(cluster=cluster),
                    )
                )
            else:
                out.append(
                    Finding(
                        Severity.NOTE,
                        "meta.properties",
                        f,
                        "missing",
                        "a ZooKeeper-mode broker writes it at start",
                        "nothing to do",
                    )
                )
            continue
        problems = []
        typed = None
        try:
            typed = MetaProperties.parse(m, path=f)
        except CheckpointError as e:
            problems.append(f'"{e.message}"')
        version = m.get("version")
        v0_read = v0_in_kraft and typed is not None and typed.version == 0
        if kraft and version != "1" and (typed is not None or version is None) and not v0_read:
            problems.append(
                f'version is {version!r}, a KRaft broker needs 1 ("Expected version 1, but got '
                f'version {typed.version if typed else 0}")'
            )
        for key in (
            () if v0_read else ("cluster.id", "node.id") if kraft else ("broker.id",)
        ):  # ZooKeeper's v0: no cluster.id
            if not m.get(key) and not any(key in p for p in problems):
                problems.append(f'no {key} ("Failed to find required property {key}.")')
        node = m.get("node.id", m.get("broker.id"))
        if kraft and typed is not None and typed.node_id is not None and typed.node_id < 0:
            # KafkaConfig.validateValues refuses a negative node.id under process.roles, so no
            # configured node.id matches it (KafkaRaftServer: InconsistentNodeIdException)
            problems.append(
                f"node.id {typed.node_id} is negative: a KRaft broker's node.id is 0 or more, so it never "
                "matches (InconsistentNodeIdException)"
            )
        if problems:
            out.append(
                Finding(
                    Severity.ERROR,
                    "meta.properties",
                    f,
                    "damaged: " + "; ".join(problems),
                    "RuntimeException at start: the broker exits",
                    f"restore it from a copy, or write version=1, cluster.id={cluster} and the broker's "
                    f"node.id in it (kafka-storage.sh format -t {cluster} writes a new one)",
                )
            )
            continue
        seen[d] = m
        if config.node_id is not None and typed is not None and typed.node_id != config.node_id:
            out.append(
                Finding(
                    Severity.ERROR,
                    "meta.properties",
                    f,
                    f"node.id {node} here, {config.node_id} in server.properties",
                    f"InconsistentNodeIdException: Configured node.id `{config.node_id}` doesn't match "
                    f"stored node.id `{node}' in meta.properties",
                    "point log.dirs at this broker's own log dirs, or set node.id in server.properties "
                    f"to {node} if these are its log dirs",
                )
            )
    common = lambda m: {k: v for k, v in m.items() if k != "directory.id"}  # noqa: E731
    if len({tuple(sorted(common(m).items())) for m in seen.values()}) > 1:
        listing = "; ".join(
            f"{d}: cluster.id={m.get('cluster.id')} node.id={m.get('node.id', m.get('broker.id'))}"
            for d, m in seen.items()
        )
        evidence, fix = (
            "",
            (
                "keep only this broker's log dirs in log.dirs (the others belong to another broker or "
                "cluster)"
            ),
        )
        if len({m.get("cluster.id") for m in seen.values()}) > 1:
            evidence, fix = judge_cluster_ids(seen, metadata_dir)
        out.append(
            Finding(
                Severity.ERROR,
                "meta.properties",
                ", ".join(str(d) for d in seen),
                f"not the same in every log dir ({listing}){evidence}",
                "InconsistentBrokerMetadataException: BrokerMetadata is not consistent across log.dirs. "
                "This could happen if multiple brokers shared a log directory (log.dirs) or partial data "
                "was manually copied from another broker",
                fix,
            )
        )
    ids: dict[str, list[Path]] = {}
    for d, m in seen.items():
        if m.get("directory.id"):
            ids.setdefault(m["directory.id"], []).append(d)
    for dir_id, dirs in ids.items():
        if len(dirs) > 1:
            out.append(
                Finding(
                    Severity.ERROR,
                    "meta.properties",
                    ", ".join(map(str, dirs)),
                    f"directory.id {dir_id} in more than one log dir (a copied log dir)",
                    "a 3.7+ broker refuses to start: every log dir needs its own directory.id",
                    f"give the copy a new one: remove directory.id from {dirs[-1]}/meta.properties and run "
                    "kafka-storage.sh format --ignore-formatted -c server.properties -t "
                    f"{cluster} (3.7+ writes a fresh directory.id)",
                )
            )
    for d in metas:
        if d != metadata_dir and (d / METADATA_DIR).is_dir():
            out.append(
                Finding(
                    Severity.ERROR,
                    "directory",
                    str(d / METADATA_DIR),
                    f"the KRaft metadata log in a log dir that is not the metadata log dir ({metadata_dir})",
                    f"KafkaException: Found unexpected metadata location in data directory `{d / METADATA_DIR}`",
                    f"list {d} first in log.dirs (or set metadata.log.dir={d}), or move {METADATA_DIR} "
                    f"out of {d}",
                )
            )
    return out


# ------------------------------------------------------------------ the metadata log dir's files
def check_bootstrap(metadata_dir: Path) -> list[Finding]:
    """bootstrap.checkpoint, read at every start (KafkaRaftServer.initializeLogDirs ->
    BootstrapDirectory.read), whatever the metadata log holds: one that does not read whole, or
    holds no metadata.version, stops the broker. Without it the broker takes metadata.version from
    inter.broker.protocol.version, and that only seeds an empty metadata log."""
    from kafkalog_cli.config.versions import bootstrap_metadata_version

    f = metadata_dir / "bootstrap.checkpoint"
    if _not_regular(f):
        return []  # check_file_types says it
    try:
        bootstrap_metadata_version(metadata_dir, strict=True)
    except InputError:
        return []  # not readable by kafkalog: check_access or the unread list say it
    except KafkalogError as e:
        return [
            Finding(
                Severity.ERROR,
                "checkpoint",
                str(f),
                f"damaged: {e.message}",
                "RuntimeException from BootstrapDirectory.read (KafkaRaftServer.initializeLogDirs reads it "
                "at every start): the broker exits",
                f"mv {f} {f}.damaged: the broker then takes metadata.version from the metadata log "
                f"({METADATA_DIR}), or, with that log empty, from inter.broker.protocol.version",
            )
        ]
    return []


def quorum_state_damage(path: Path) -> tuple[str, bool] | None:
    """What FileQuorumStateStore.readStateFromFile says of quorum-state, and whether Kafka throws
    an IOException there (UncheckedIOException: 3.3 to 3.7 clear the file and go on, 3.8+ exit) or
    something else (a mandatory field missing: RuntimeException from QuorumStateDataJsonConverter,
    which every release lets through); None when it reads."""
    import json

    raw = files.read_bytes_if_exists(path)
    if raw is None:
        return None
    try:
        line = raw.decode("utf-8").splitlines()[0] if raw else None
    except UnicodeDecodeError:
        return "not UTF-8 (MalformedInputException)", True
    if line is None:
        return "EOFException: File ended prematurely.", True
    try:
        node, _ = json.JSONDecoder().raw_decode(line.lstrip())
    except ValueError as e:
        return f"not JSON (JsonParseException: {e})", True
    if not isinstance(node, dict):
        return f"Deserialized node {line.strip()[:40]} is not an object node", True
    if "data_version" not in node:
        return "no data_version field", True
    version = node["data_version"]
    mandatory = (
        "clusterId",
        "leaderId",
        "leaderEpoch",
        "votedId",
        "appliedOffset",
        "currentVoters",
    )
    if version == 0:
        missing = [k for k in mandatory if k not in node]
        if missing:
            return (
                f"QuorumStateData: unable to locate field '{missing[0]}', which is mandatory in version 0",
                False,
            )
    return None


def check_quorum_voters(
    metadata_dir: Path, config: BrokerConfig, checked: bool | None
) -> list[Finding]:
    """quorum-state's voters against server.properties' controller.quorum.voters, as 3.3 to 3.7's
    QuorumState.initialize compares them: a different set, or a vote cast by a node that is no
    longer a voter, stops the broker. `checked`: the release compares them (before 3.8); None:
    the release is not known. Nothing without server.properties' voters or a readable file."""
    from kafkalog_cli.ops.metadata_image import QuorumState

    f = metadata_dir / METADATA_DIR / "quorum-state"
    voters = config.quorum_voters
    if voters is None or checked is False or not f.is_file():
        return []
    try:
        if quorum_state_damage(f) is not None:
            return []  # check_quorum_state says it
        state = QuorumState.read(f)
    except KafkalogError:
        return []  # not readable by kafkalog: check_access says it
    if state is None:
        return []
    stored = set(state.voters or ())
    if stored and stored != voters:
        problem = (
            f"its voters are {sorted(stored)}; controller.quorum.voters in {config.path} names "
            f"{sorted(voters)}"
        )
        said = (
            f"IllegalStateException: Configured voter set: {sorted(voters)} is different from the "
            f"voter set read from the state file: {sorted(stored)}"
        )
    elif state.voted_id is not None and config.node_id is not None and config.node_id not in voters:
        problem = (
            f"it holds a vote (for node {state.voted_id}) cast by this node, {config.node_id}, which "
            f"controller.quorum.voters in {config.path} no longer names"
        )
        said = (
            "IllegalStateException: Initialized quorum state ... with a voted candidate, which indicates "
            f"this node was previously a voter, but the local id {config.node_id} is not a voter"
        )
    else:
        return []
    fix = (
        f"set controller.quorum.voters in {config.path} to the quorum's voters; if the quorum's voters "
        f"did change, mv {f} {f}.old (Kafka's own advice: \"wipe out the local state file if "
        'necessary"; the node writes a new one)'
    )
    if checked:
        severity, broker = Severity.ERROR, f"{said} (QuorumState.initialize): the broker exits"
    else:
        severity = Severity.WARNING
        broker = f"3.3 to 3.7: {said} (QuorumState.initialize), the broker exits; 3.8+: it starts"
    return [
        Finding(
            severity,
            "checkpoint",
            str(f),
            problem,
            broker,
            fix,
            unchecked=checked is None,
        )
    ]


def check_quorum_state(metadata_dir: Path, fatal: bool | None) -> list[Finding]:
    """The metadata log's quorum-state, read as KafkaRaftClient starts (QuorumState.initialize).
    `fatal`: the release exits on a file it cannot read (3.8+); None: the release is not known."""
    f = metadata_dir / METADATA_DIR / "quorum-state"
    if not f.is_file():
        return []
    try:
        damage = quorum_state_damage(f)
    except KafkalogError:
        return []  # not readable by kafkalog: check_access says it
    if damage is None:
        return []
    what, io = damage
    fix = (
        f"mv {f} {f}.damaged: the broker starts without it, in the epoch of its metadata log "
        '("Epoch from quorum-state file is 0, which is smaller than last written epoch"), as 3.3 to 3.7 '
        "do themselves"
    )
    cleared = (
        '"Clearing local quorum state store after error loading state" (QuorumState.initialize, 3.3 to '
        "3.7): it starts"
    )
    exits = (
        f"UncheckedIOException: Error while reading the Quorum status from the file {f} "
        f"({QUORUM_STATE_READ_FATAL.where}): the broker exits"
    )
    if not io:
        severity, broker = Severity.ERROR, f"RuntimeException ({what}): the broker exits"
    elif fatal:
        severity, broker = Severity.ERROR, exits
    elif fatal is None:
        severity, broker = Severity.WARNING, f"3.3 to 3.7: {cleared}; 3.8+: {exits}"
    else:
        severity, broker = Severity.NOTE, cleared
    return [
        Finding(
            severity,
            "checkpoint",
            str(f),
            f"damaged: {what}",
            broker,
            fix if severity is not Severity.NOTE else "nothing to do (or: " + fix + ")",
            unchecked=fatal is None and io,
        )
    ]


def judge_cluster_ids(seen: dict[Path, dict], metadata_dir: Path) -> tuple[str, str]:
    """Which meta.properties holds the wrong cluster.id, from evidence: a log dir whose partitions'
    topic ids (partition.metadata) are all in this cluster's metadata log (the image at the end
    of __cluster_metadata-0, in the metadata log dir) is this cluster's, one whose partitions'
    ids are none of them another cluster's. Among this cluster's log dirs the cluster.id most of
    them hold is right; on a tie, the metadata log dir's (kafka-storage format wrote it with the
    metadata log, and the quorum replicated that log under it: KafkaRaftClient answers another
    cluster id with INCONSISTENT_CLUSTER_ID). The metadata log holds no cluster id of its own
    (quorum-state's clusterId is empty). Returns (the evidence, the fix)."""
    from collections import Counter

    from kafkalog_cli.ops.metadata_image import read_metadata_image

    cannot = (
        "cannot tell which cluster.id is right from these log dirs (no metadata log among them to match "
        "their partitions' topic ids against): set the cluster.id of the other brokers of this cluster "
        "(their meta.properties) in every log dir of this broker, or keep only this broker's log dirs in "
        "log.dirs"
    )
    topic_ids: set[str] = set()
    if (metadata_dir / METADATA_DIR).is_dir():
        try:
            topic_ids = {t.id for t in read_metadata_image(metadata_dir).image.topics.values()}
        except KafkalogError:
            pass
    if not topic_ids:
        return "", cannot
    ours: dict[Path, int] = {}
    theirs: dict[Path, int] = {}
    for d in seen:
        ids = [t for t in (_topic_id(Path(e.path)) for e in _partition_dirs(d)) if t is not None]
        ours[d] = sum(t in topic_ids for t in ids)
        theirs[d] = len(ids) - ours[d]
    cluster = {d: m.get("cluster.id") for d, m in seen.items()}
    this = [d for d in seen if (d == metadata_dir or ours[d]) and not theirs[d]]
    votes = Counter(cluster[d] for d in this).most_common()
    if not votes:
        return "", cannot
    right = votes[0][0]
    why = f"held by {votes[0][1]} of this cluster's {len(this)} log dirs"
    if len(votes) > 1 and votes[1][1] == votes[0][1]:
        if metadata_dir not in seen:
            return "", cannot
        right, why = cluster[metadata_dir], f"the metadata log dir's, {metadata_dir}"
    evidence, fixes = [], []
    for d in seen:
        if cluster[d] == right:
            continue
        meta = d / names.META_PROPERTIES
        if d in this:
            evidence.append(
                f"{d}: {ours[d]} partition(s), every topic id in the metadata log of {metadata_dir}: "
                "this cluster's"
                if d != metadata_dir
                else f"{d}: holds this cluster's metadata log"
            )
            fixes.append(f"set cluster.id={right} in {meta} (the cluster.id {why})")
        elif theirs[d] and not ours[d]:
            evidence.append(
                f"{d}: {theirs[d]} partition(s), no topic id in the metadata log of {metadata_dir}: "
                "another cluster's"
            )
            fixes.append(f"remove {d} from log.dirs (another cluster's log dir)")
        elif not theirs[d] and not ours[d]:
            evidence.append(f"{d}: no partition with a topic id")
            fixes.append(
                f"set cluster.id={right} in {meta} (it holds no partition to lose), or remove {d} from "
                "log.dirs"
            )
        else:
            evidence.append(
                f"{d}: {ours[d]} partition(s) of this cluster, {theirs[d]} of none it knows"
            )
            fixes.append(
                f"cannot tell which for {d}: compare its partitions with the cluster's (kafkalog "
                f"compare-replicas), then set cluster.id={right} in {meta} or remove {d} from log.dirs"
            )
    return "; evidence: " + "; ".join(evidence), "; ".join(fixes)


def _partition_dirs(d: Path, *kinds: PartitionDirKind) -> list[os.DirEntry]:
    """The partition dirs of `kinds` (live ones by default) of a log dir, but the metadata log's."""
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for e in entries:
        parsed = parse_partition_dir_name(e.name) if e.is_dir() else None
        if (
            parsed is not None
            and parsed.kind in (kinds or (PartitionDirKind.LIVE,))
            and e.name != METADATA_DIR
        ):
            out.append(e)
    return out


def _topic_id(partition_dir: Path) -> str | None:
    """partition.metadata's topic id, None without a readable one."""
    try:
        return read_topic_id(partition_dir)
    except KafkalogError:
        return None


# ------------------------------------------------------------------ .lock, access, space
def check_lock(d: Path, unread: list | None = None) -> list[Finding]:
    path = d / names.LOCK_FILE
    try:
        fd = files.open_fd(path)
    except KafkalogError as e:
        # none yet (the broker creates it); not a regular file (check_file_types says it); or not
        # readable by kafkalog itself: who holds it is not checked
        _unread(e, unread)
        return []
    try:
        pid = holder_pid(fd)
    finally:
        os.close(fd)
    if not pid:
        return []
    return [
        Finding(
            Severity.ERROR,
            "lock",
            str(path),
            f"held by process {pid}",
            f'"Failed to acquire lock on file .lock in {d}. A Kafka instance in another process or thread '
            'is using this directory.": the broker exits',
            f"if process {pid} is a broker on this log dir, it is running already (ps -p {pid} -o args); "
            f"else stop it (kill {pid}) before starting the broker",
        )
    ]


def _can(st: os.stat_result, uid: int, gids: frozenset[int], need: int) -> bool:
    """`need` (a mask of 4 read, 2 write, 1 execute) granted to uid/gids by st's mode."""
    if uid == 0:
        return True
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid == uid:
        bits = (mode >> 6) & 7
    elif st.st_gid in gids:
        bits = (mode >> 3) & 7
    else:
        bits = mode & 7
    return bits & need == need


@dataclass(frozen=True)
class BrokerUser:
    """Whom access is judged for: a uid and its groups, as the kernel checks them."""

    uid: int
    gids: frozenset[int]
    owner: str  # for chown: the name, else the uid
    group: int  # for chown: the primary group
    label: str  # "kafka (uid 1000)", or "uid 4242"
    how: str = ""  # how it was found, when inferred


def broker_user(d: Path, st: os.stat_result, user: str | None) -> BrokerUser | Finding:
    """The broker's user: --user (a uid, or a name this host's passwd knows), else the log dir's
    owner. A uid without a passwd entry (a container's user) is judged by its number, with the
    log dir's group as its group when it owns the log dir. A name this host does not know is a
    warning that access was not checked."""
    if user is not None and not user.isdigit():
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            return Finding(
                Severity.WARNING,
                "access",
                str(d),
                f"access could not be checked: --user {user}: no such user on this host",
                "unknown: whether the broker's user can read and write these files was not checked",
                "give the broker's uid instead (--user UID: `id -u` where the broker runs, or the uid "
                "in its container image)",
                unchecked=True,
            )
        uid = pw.pw_uid
    else:
        uid = int(user) if user is not None else st.st_uid
        try:
            pw = pwd.getpwuid(uid)
        except KeyError:
            pw = None
    source = f"--user {user}" if user is not None else f"inferred from the owner of {d}"
    if pw is not None:
        return BrokerUser(
            uid,
            frozenset(os.getgrouplist(pw.pw_name, pw.pw_gid)),
            pw.pw_name,
            pw.pw_gid,
            f"{pw.pw_name} (uid {uid})",
            f"; the broker's user {source}" if user is None else "",
        )
    gid = st.st_gid if st.st_uid == uid else None
    groups = f"its group taken as {gid}, the log dir's" if gid is not None else "no group known"
    return BrokerUser(
        uid,
        frozenset({gid} if gid is not None else ()),
        str(uid),
        gid if gid is not None else st.st_gid,
        f"uid {uid}",
        f"; uid {uid} has no passwd entry here ({source}; {groups})",
    )


def check_access(d: Path, user: str | None) -> list[Finding]:
    """Files and dirs the broker's user (`user`, else the log dir's owner) cannot read and write,
    and a read-only mount."""
    out: list[Finding] = []
    try:
        vfs = os.statvfs(d)
    except OSError:
        return out
    if vfs.f_flag & os.ST_RDONLY:
        out.append(
            Finding(
                Severity.WARNING,
                "access",
                str(d),
                "on a read-only file system",
                '"Failed to create lock file" / AccessDeniedException: the log dir is offline',
                f"remount it read-write (mount -o remount,rw $(df --output=target {d} | tail -1))",
                offline=True,
            )
        )
        return out
    st = d.stat()
    who = broker_user(d, st, user)
    if isinstance(who, Finding):
        return [who]
    uid, gids = who.uid, who.gids
    bad = []
    for root, dirs, regular in os.walk(d):
        depth = len(Path(root).relative_to(d).parts)
        for name in dirs + regular:
            p = Path(root, name)
            try:
                pst = p.lstat()
            except OSError:
                continue
            # read and write: LogSegment.open -> FileRecords.open(mutable) -> openChannel opens an
            # existing segment with FileChannel.open(CREATE, READ, WRITE) (RandomAccessFile "rw"
            # only for a new preallocated one); the indexes are mapped read-write too
            need = 7 if stat.S_ISDIR(pst.st_mode) else 6
            if stat.S_ISREG(pst.st_mode) or stat.S_ISDIR(pst.st_mode):
                if not _can(pst, uid, gids, need):
                    bad.append(p)
        if depth >= 1:
            dirs[:] = []
    if not _can(st, uid, gids, 7):
        bad.insert(0, d)
    if bad:
        shown = ", ".join(str(p) for p in bad[:5]) + (
            f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        )
        out.append(
            Finding(
                Severity.WARNING,
                "access",
                shown,
                f"{len(bad)} file(s) or dir(s) the broker's user {who.label} cannot read and write "
                f"(owned by another user, or its mode){who.how}",
                "AccessDeniedException while loading (LogSegment.open -> FileRecords.open opens every "
                "segment for reading and writing): the log dir is offline",
                f"chown -R {who.owner}:{who.group} {d} && chmod -R u+rwX {d}",
                offline=True,
            )
        )
    return out


def check_space(d: Path) -> list[Finding]:
    """What the broker writes as it starts: its checkpoints and leader-epoch-checkpoints (each
    a new file written before the old one goes: a block or two at a time) and the metadata log's
    first appends. A 3.3.1 broker with 0 bytes free exits; with 36864 (nine 4 KiB blocks) it
    started (tests/crash/test_full_disk.py)."""
    try:
        free = FreeSpace.of(d)
    except OSError:
        return []
    need = free.blocks_for(1) * 4
    inodes = 4
    fix = (
        f"free space without writing first: kafkalog retain {d} --no-quarantine --dry-run (then without "
        f"--dry-run), or kafkalog delete-records {d} --topic T --before OFFSET --no-quarantine; "
        f"kafkalog quarantine prune removes old quarantine folders on this disk"
    )
    if free.bytes < need:
        return [
            Finding(
                Severity.ERROR,
                "space",
                str(d),
                f"{free.bytes} bytes free, the broker needs {need} or more as "
                "it starts (checkpoints written anew, the metadata log's appends)",
                '"Error while writing to checkpoint file ...: No space left on device": "Exiting Kafka due '
                'to fatal exception"',
                fix,
            )
        ]
    if 0 <= free.inodes < inodes:
        return [
            Finding(
                Severity.ERROR,
                "space",
                str(d),
                f"{free.inodes} inodes free, the broker creates about {inodes}",
                '"No space left on device" creating a checkpoint\'s temporary file: the broker exits',
                fix,
            )
        ]
    if free.full:
        return [
            Finding(
                Severity.WARNING,
                "space",
                str(d),
                f"only {free.bytes} bytes free",
                "it starts, and fails its first appends or segment rolls (the log dir goes offline)",
                fix,
            )
        ]
    return []


# ------------------------------------------------------------------ what loadLogs reads
def check_links(d: Path) -> list[Finding]:
    """A partition dir that is, or holds, a symbolic link out of the log dir (storage.links): the
    broker follows it; kafkalog's mutating commands leave that partition unless --follow-symlinks."""
    from kafkalog_cli.storage.links import link_out

    out = []
    for e in sorted(os.scandir(d), key=lambda e: e.name):
        if (
            parse_partition_dir_name(e.name) is not None
            and e.is_dir(follow_symlinks=True)
            and (found := link_out(d, Path(e.path))) is not None
        ):
            out.append(
                Finding(
                    Severity.NOTE,
                    "link",
                    e.path,
                    f"{found.what} to {found.leads_to}, outside the log dir",
                    "follows it (LogManager.loadLogs keeps what File.isDirectory takes for a dir) and "
                    "reads, appends to, truncates and deletes the partition's files where it leads",
                    "nothing to do for the broker; kafkalog's mutating commands (recover, roll, retain, "
                    "compact, delete-records, move-partition) leave this partition unchanged unless "
                    "--follow-symlinks",
                )
            )
    return out


def check_directories(d: Path, since_3_7: bool = False, index_cache: bool = False) -> list[Finding]:
    """Every subdirectory must parse as a partition dir (LogManager.loadLogs). `-stray` is 3.7+'s:
    a broker before it (the one that wrote a meta.properties without directory.id) exits on it.
    `index_cache`: the broker passes over tiered storage's remote-log-index-cache (3.5+)."""
    out = []
    for e in sorted(os.scandir(d), key=lambda e: e.name):
        if e.is_dir(follow_symlinks=True) and e.name == REMOTE_INDEX_CACHE and index_cache:
            out.append(
                Finding(
                    Severity.NOTE,
                    "directory",
                    e.path,
                    "tiered storage's remote index cache",
                    f"not loaded as a partition ({REMOTE_INDEX_CACHE_DIR.where})",
                    "nothing to do",
                )
            )
        elif e.is_dir(follow_symlinks=True):
            parsed = parse_partition_dir_name(e.name)
            if parsed is None:
                out.append(
                    Finding(
                        Severity.ERROR,
                        "directory",
                        e.path,
                        "not a partition dir",
                        f"KafkaException: Found directory {e.path}, '{e.name}' is not in the form of "
                        "topic-partition or topic-partition.uniqueId-delete (or -future): the broker exits",
                        f"move it out of the log dir (mv {e.path} {d.parent}/), or give log.dirs a "
                        "subdirectory of this mount"
                        + (
                            f" (a Kafka {REMOTE_INDEX_CACHE_DIR.since}+ broker passes over it: check with "
                            "--kafka-version)"
                            if e.name == REMOTE_INDEX_CACHE
                            else ""
                        ),
                    )
                )
            elif parsed.kind is PartitionDirKind.NOT_UTF8:
                out.append(
                    Finding(
                        Severity.NOTE,
                        "directory",
                        e.path,
                        "a partition dir whose name is not UTF-8",
                        "it loads it under a topic name with U+FFFD, which no topic has ([a-zA-Z0-9._-]): "
                        "its records are served to nobody",
                        "rename it to the topic's name, or move it out of the log dir",
                    )
                )
            elif parsed.kind is PartitionDirKind.DELETE:
                out.append(
                    Finding(
                        Severity.NOTE,
                        "directory",
                        e.path,
                        "a partition being deleted",
                        'deleted after file.delete.delay.ms ("Deleted log for partition")',
                        "nothing to do",
                    )
                )
            elif (
                parsed.kind is PartitionDirKind.FUTURE
                and (d / str(parsed.topic_partition)).is_dir()
            ):
                current = d / str(parsed.topic_partition)
                out.append(
                    Finding(
                        Severity.WARNING,
                        "directory",
                        e.path,
                        f"a future replica in the same log dir as the current one ({current})",
                        f"it promotes the future replica by renaming it over {current.name}: "
                        f'"Error while renaming dir for {current.name}" (DirectoryNotEmptyException): the '
                        "log dir is offline",
                        f"keep the current replica and drop the copy being made: mv {e.path} {d.parent}/",
                        offline=True,
                    )
                )
            elif parsed.kind is PartitionDirKind.FUTURE:
                out.append(
                    Finding(
                        Severity.NOTE,
                        "directory",
                        e.path,
                        "a replica being moved to this log dir",
                        "loaded as the future replica; the move goes on",
                        "nothing to do",
                    )
                )
            elif parsed.kind is PartitionDirKind.STRAY and since_3_7:
                out.append(
                    Finding(
                        Severity.NOTE,
                        "directory",
                        e.path,
                        "a stray partition (no longer assigned to this broker, 3.7+)",
                        "left alone by the broker",
                        f"once sure it is not needed: rm -r {e.path}",
                    )
                )
            elif parsed.kind is PartitionDirKind.STRAY:
                out.append(
                    Finding(
                        Severity.ERROR,
                        "directory",
                        e.path,
                        "a stray partition dir of a 3.7+ broker, in a log dir of an older one",
                        f"KafkaException: Found directory {e.path}, '{e.name}' is not in the form of "
                        "topic-partition or topic-partition.uniqueId-delete (if marked for deletion): "
                        "a broker before 3.7 exits",
                        f"move it out of the log dir (mv {e.path} {d.parent}/), or run a 3.7+ broker",
                    )
                )
        elif e.is_file() and e.name == names.CLEAN_SHUTDOWN_ASIDE:
            out.append(
                Finding(
                    Severity.NOTE,
                    "file",
                    e.path,
                    "the clean-shutdown marker, set aside by a kafkalog run that was killed",
                    "ignored: without the marker it recovers the log dir on start",
                    f"nothing to do; the next kafkalog run on the log dir (kafkalog recover {d}) puts it "
                    f"back where every partition loads without recovery as with it, else removes it",
                )
            )
        elif e.is_file() and e.name not in ROOT_FILES and not e.name.endswith(".tmp"):
            out.append(
                Finding(
                    Severity.NOTE,
                    "file",
                    e.path,
                    "not a file Kafka keeps in a log dir",
                    "ignored",
                    "nothing to do (or move it away)",
                )
            )
    return out


def _not_regular(path: str | os.PathLike) -> str | None:
    """What is at `path` when it is there and not a regular file ("a FIFO", ...), else None."""
    try:
        return files.kind_of(os.stat(path).st_mode)
    except OSError:
        return None


def check_file_types(d: Path) -> list[Finding]:
    """Each file the broker reads (the log dir's own files, a partition's segments, indexes,
    snapshots and checkpoints) must be a regular file: a FIFO there blocks the broker's read, a
    directory, socket or device fails it. meta.properties is check_meta_properties'."""
    out = []

    def finding(path: str, kind: str) -> Finding:
        return Finding(
            Severity.ERROR,
            "file",
            path,
            files.not_regular_message(kind),
            "the broker cannot read it as a file (a FIFO blocks its read, anything else fails it): "
            "the log dir does not load",
            f"move it out of the log dir (mv {path} {d.parent}/); kafkalog recover {d} then shows what "
            "is missing",
        )

    for e in sorted(os.scandir(d), key=lambda e: e.name):
        if e.name in ROOT_FILES and e.name != names.META_PROPERTIES:
            kind = _not_regular(e.path)
            if kind is not None:
                out.append(finding(e.path, kind))
        elif e.is_dir() and parse_partition_dir_name(e.name) is not None:
            try:
                inner = sorted(os.scandir(e.path), key=lambda f: f.name)
            except OSError:
                continue  # access: check_access says it
            for f in inner:
                if names.offset_from_name(f.name) is not None or f.name in (
                    names.LEADER_EPOCH_CHECKPOINT,
                    names.PARTITION_METADATA,
                ):
                    kind = _not_regular(f.path)
                    if kind is not None:
                        out.append(finding(f.path, kind))
    return out


def _unread(err: KafkalogError, unread: list | None) -> bool:
    """Whether `err` is a file kafkalog itself could not open (permission denied to this process,
    not a FIFO in a file's place: that is check_file_types' finding); then it goes to `unread`."""
    if (
        unread is None
        or not isinstance(err, InputError)
        or not err.path
        or _not_regular(err.path) not in (None, "a directory")
    ):
        return False
    if isinstance(err, files.MissingFile) or os.access(
        err.path, os.R_OK | (os.X_OK if os.path.isdir(err.path) else 0)
    ):
        return False
    unread.append(err)
    return True


def check_checkpoints(d: Path, unread: list | None = None) -> list[Finding]:
    """A damaged checkpoint takes its log dir offline: LogDirFailureChannel hears of the read
    error before LogManager resets the value (\"Error while reading checkpoint file\", then
    \"resetting the recovery checkpoint to 0\", then \"Stopping serving logs in dir\"), as a
    3.3.1 broker showed (tests/commands/test_doctor_cli.py)."""
    out = []
    recover_all = (
        f"kafkalog recover {d} --all (recovers every segment, as the broker would from 0, and writes the "
        "file anew)"
    )
    set_aside = "mv {f} {f}.damaged (the broker starts without it: {what} from the log start)"
    after = {
        names.RECOVERY_POINT_CHECKPOINT: (", resetting the recovery checkpoint to 0", recover_all),
        names.LOG_START_OFFSET_CHECKPOINT: (
            ", resetting to the base offset of the first segment",
            recover_all,
        ),
        names.REPLICATION_CHECKPOINT: ("", set_aside.replace("{what}", "high watermarks")),
        names.CLEANER_CHECKPOINT: ("", set_aside.replace("{what}", "cleaner offsets")),
    }
    for name, (reset, fix) in after.items():
        f = d / name
        if not f.exists() or _not_regular(f):
            continue  # a FIFO, a directory: check_file_types says it
        try:
            ckpt.read_offsets_strict(f)
        except KafkalogError as e:
            if _unread(e, unread):
                continue
            out.append(_damaged_checkpoint(d, f, name, reset, fix, e))
        except (ValueError, OSError) as e:
            out.append(_damaged_checkpoint(d, f, name, reset, fix, e))
    return out + _epoch_checkpoints(d, unread)


def _damaged_checkpoint(d: Path, f: Path, name: str, reset: str, fix: str, e: Exception) -> Finding:
    said = f', "Error occurred while reading {name} file of directory {d}{reset}"' if reset else ""
    return Finding(
        Severity.WARNING,
        "checkpoint",
        str(f),
        f"damaged: {e}",
        f'"Error while reading checkpoint file {f}" (LogDirFailureChannel){said}, then '
        f'"Stopping serving logs in dir {d}": the log dir is offline',
        fix.format(f=f),
        offline=True,
    )


def _epoch_checkpoints(d: Path, unread: list | None) -> list[Finding]:
    """Each partition's leader-epoch-checkpoint, as LeaderEpochCheckpointFile.read."""
    out = []
    for e in os.scandir(d):
        if not e.is_dir() or parse_partition_dir_name(e.name) is None:
            continue
        f = Path(e.path) / names.LEADER_EPOCH_CHECKPOINT
        if _not_regular(f):
            continue  # check_file_types says it
        try:
            raw = files.read_bytes_if_exists(f)
            if raw is None:
                continue
            parse_leader_epoch_checkpoint(raw, path=str(f))
        except (KafkalogError, ValueError) as err:
            if isinstance(err, KafkalogError) and _unread(err, unread):
                continue
            out.append(
                Finding(
                    Severity.WARNING,
                    "checkpoint",
                    str(f),
                    f"damaged: {err}",
                    f"KafkaStorageException: Error while reading checkpoint file {f}: the log dir is offline",
                    f"kafkalog recover {d} (writes the leader epochs of the recovered log) or "
                    f"mv {f} {f}.damaged",
                    offline=True,
                )
            )
    return out


def _image_topic_ids(metadata_dir: Path) -> dict[str, str]:
    """topic name -> topic id in the image at the end of the metadata log ({} without one)."""
    from kafkalog_cli.ops.metadata_image import read_metadata_image

    if not (metadata_dir / METADATA_DIR).is_dir():
        return {}
    try:
        return {t.name: t.id for t in read_metadata_image(metadata_dir).image.topics.values()}
    except KafkalogError:
        return {}  # the metadata checks say what is wrong with it


def read_topic_id(partition_dir: Path, newer_versions: bool = False) -> str | None:
    """partition.metadata's topic id as the broker reads it (UnifiedLog.initializeTopicId); None
    without the file. Raises PartitionMetadataError where Kafka's reader fails, KafkalogError
    where the file cannot be read."""
    f = partition_dir / names.PARTITION_METADATA
    raw = files.read_bytes_if_exists(f)
    if raw is None:
        return None
    return parse_partition_metadata(raw, path=str(f), newer_versions=newer_versions).topic_id


def check_partition_metadata(
    d: Path, newer_versions: bool, topic_ids: dict[str, str], unread: list | None = None
) -> list[Finding]:
    """Each partition's partition.metadata, read as every partition dir loads
    (UnifiedLog.initializeTopicId, KRaft keeps the file): where Kafka's reader throws an
    IOException the log dir goes offline; a missing line or a topic id that is no Uuid throws
    what LogManager.loadLogs does not catch, and the broker exits; in the metadata log's own dir
    (KafkaMetadataLog, outside loadLogs) either stops it. Removing the file is no fix from 3.7: a
    partition without a topic id is taken for stray (LogManager.isStrayKraftReplica)."""
    out = []
    for e in sorted(os.scandir(d), key=lambda e: e.name):
        parsed = parse_partition_dir_name(e.name) if e.is_dir() else None
        f = Path(e.path) / names.PARTITION_METADATA
        if parsed is None or _not_regular(f):
            continue  # a FIFO, a directory: check_file_types says it
        try:
            read_topic_id(Path(e.path), newer_versions)
        except PartitionMetadataError as err:
            tp = parsed.topic_partition
            known = METADATA_TOPIC_ID if e.name == METADATA_DIR else topic_ids.get(tp.topic)
            whose = (
                "of the metadata topic (Uuid.METADATA_TOPIC_ID)"
                if e.name == METADATA_DIR
                else f"this cluster's metadata log gives {tp.topic}"
            )
            write = (
                f"write the topic id {whose}: printf 'version: 0\\ntopic_id: {known}' > {f}"
                if known
                else f"copy {names.PARTITION_METADATA} of {tp} from another broker that holds it (every "
                f"replica has the same topic id; kafka-topics.sh --describe --topic {tp.topic} shows it), "
                f"or write it: printf 'version: 0\\ntopic_id: TOPIC_ID' > {f}"
            )
            exits = not err.offline or e.name == METADATA_DIR
            out.append(
                Finding(
                    Severity.ERROR if exits else Severity.WARNING,
                    "checkpoint",
                    str(f),
                    f"damaged: {err.message}",
                    (
                        f"{'KafkaStorageException' if err.offline else err.kafka_exception} while "
                        f"loading {e.name} (UnifiedLog.initializeTopicId -> PartitionMetadataFile.read), "
                        + (
                            "which KafkaMetadataLog does not catch: the broker exits"
                            if e.name == METADATA_DIR
                            else f"which LogManager.loadLogs does not catch: {FATAL_LOAD}"
                        )
                        if exits
                        else f'"Error while reading partition metadata file {f}" (KafkaStorageException): '
                        "the log dir is offline"
                    ),
                    write
                    + (
                        ""
                        if e.name == METADATA_DIR
                        else " (without the file a 3.7+ broker takes the partition for stray)"
                    ),
                    offline=not exits,
                )
            )
        except KafkalogError as err:
            _unread(err, unread)  # access: check_access says it; a FIFO: check_file_types
    return out


# the files LogLoader and ProducerStateManager name by offset (LocalLog.isLogFile / isIndexFile,
# .cleaned and .swap files, ProducerStateManager.isSnapshotFile), with what Long.parseLong reads
_OFFSET_NAMED = (*names.SEGMENT_SUFFIXES, names.SNAPSHOT_SUFFIX, ".cleaned", ".swap")
_JAVA_LONG = re.compile(r"^[+-]?[0-9]+$")


def check_offset_names(d: Path) -> list[Finding]:
    """A file in a partition dir that Kafka takes for a segment, index, producer snapshot or
    leftover by its suffix, but whose name before the first '.' is no long: offsetFromFileName
    throws NumberFormatException, which LogManager.loadLogs does not catch (an output saved as
    `dump.log` in a partition dir stops the broker)."""
    out = []
    for e in sorted(os.scandir(d), key=lambda e: e.name):
        parsed = parse_partition_dir_name(e.name) if e.is_dir() else None
        if parsed is None or e.name == METADATA_DIR:
            continue  # the metadata log's snapshots are named by Snapshots.parse, which copes
        try:
            inner = sorted(os.scandir(e.path), key=lambda f: f.name)
        except OSError:
            continue  # access: check_access says it
        for f in inner:
            if not f.name.endswith(_OFFSET_NAMED) or not f.is_file():
                continue
            stem = f.name.split(".", 1)[0]
            if _JAVA_LONG.match(stem) and -(1 << 63) <= int(stem) < (1 << 63):
                continue
            out.append(
                Finding(
                    Severity.ERROR,
                    "file",
                    f.path,
                    f"named like a Kafka file ({f.name[len(stem) :]}) but {stem!r} is no offset",
                    f'NumberFormatException: For input string: "{stem}" while loading {e.name} '
                    f"(LocalLog.offsetFromFileName), which LogManager.loadLogs does not catch: {FATAL_LOAD}",
                    f"move it out of the partition dir: mv {f.path} {d.parent}/",
                )
            )
    return out


def check_duplicate_partitions(log_dirs: list[Path]) -> list[Finding]:
    """One partition in two log dirs (a copy left by a move, or a log dir restored beside its
    replacement): LogManager.loadLog puts both in one map and throws IllegalStateException, which
    loadLogs does not catch: the broker exits. Future replicas (-future) likewise."""
    seen: dict[tuple[str, bool], list[str]] = {}
    for d in log_dirs:
        for e in _partition_dirs(d, PartitionDirKind.LIVE, PartitionDirKind.FUTURE):
            parsed = parse_partition_dir_name(e.name)
            if parsed is not None:
                key = (str(parsed.topic_partition), parsed.kind is PartitionDirKind.FUTURE)
                seen.setdefault(key, []).append(e.path)
    out = []
    for (tp, future), paths in seen.items():
        if len(paths) < 2:
            continue
        out.append(
            Finding(
                Severity.ERROR,
                "directory",
                ", ".join(paths),
                f"{'the future replica of ' if future else ''}{tp} in {len(paths)} log dirs",
                "IllegalStateException: "
                + (
                    f"Duplicate log directories found: {paths[-1]}, {paths[0]}"
                    if future
                    else f"Duplicate log directories for {tp} are found in both {paths[-1]} and {paths[0]}"
                )
                + f" (LogManager.loadLog): {FATAL_LOAD}",
                "keep one: compare them (kafkalog compare-replicas "
                + " ".join(paths)
                + "), then move the other out of the log dirs (mv PARTITION_DIR to a folder outside "
                'them); Kafka: "It is recommended to delete the partition in the log directory that '
                'is known to have failed recently"',
            )
        )
    return out


_KAFKA_NAMES = {
    "OffsetOverflowError": "LogSegmentOffsetOverflowException",
    "InvalidOffsetError": "InvalidOffsetException",
    "CorruptIndexError": "CorruptIndexException",
    "CorruptRecordError": "CorruptRecordException",
    "InvalidRecordError": "InvalidRecordException",
    "CorruptSnapshotError": "CorruptSnapshotException",
}


def check_segments(d: Path, unread: list | None = None) -> list[Finding]:
    """recover's plan, partition by partition, as the broker's load would run: what it cannot
    recover stops the broker; what it truncates is lost; a batch failing its CRC in a segment it
    does not recover (bit rot, the plan's kept damage) is served as it is: a warning."""
    from kafkalog_cli.config import ConfigResolver, cluster_metadata_configs
    from kafkalog_cli.ops import recover

    out = []
    try:
        opts = recover.RecoverOptions(
            now_ms=0, resolver=ConfigResolver(cluster_metadata=cluster_metadata_configs(d))
        )
    except InputError as err:
        if err.path and os.path.dirname(err.path) == str(d) and not os.path.isdir(err.path):
            return []  # a log dir's own file that cannot be read: its check names it
        if _unread(err, unread):
            return []
        raise
    for e in sorted(os.scandir(d), key=lambda e: e.name):
        parsed = parse_partition_dir_name(e.name) if e.is_dir() else None
        if parsed is None or parsed.kind not in (PartitionDirKind.LIVE, PartitionDirKind.FUTURE):
            continue
        try:
            p = recover.plan(d, [Path(e.path)], opts)
        except KafkalogError as err:
            if isinstance(err, OSError) or getattr(err, "errno", None) in (
                errno.EACCES,
                errno.EPERM,
            ):
                continue
            if (
                isinstance(err, InputError)
                and err.path
                and err.path != e.path
                and (
                    os.path.dirname(err.path) == str(d)
                    and not os.path.isdir(err.path)
                    or _not_regular(err.path)
                )
            ):
                continue  # a log dir's own file, or not a regular file: their checks name it once
            if _unread(err, unread):
                continue
            kafka = _KAFKA_NAMES.get(type(err).__name__, "KafkaException")
            out.append(
                Finding(
                    Severity.ERROR,
                    "segment",
                    err.path or e.path,
                    err.message,
                    f"{kafka} while loading {e.name}: the broker exits",
                    f"kafkalog recover {d} --dry-run shows the damage; kafkalog recover {d} --salvage "
                    "keeps what can be kept (the rest goes to the quarantine)",
                )
            )
            continue
        except OSError as err:
            if (
                isinstance(err, PermissionError) and unread is not None
            ):  # to kafkalog itself: not checked
                unread.append(InputError("permission denied", path=err.filename or e.path))
            continue  # the broker's user's access: check_access says it
        for kept in p.findings:
            if isinstance(kept, recover.BitRotFinding) and kept.rot is not None:
                out.append(
                    Finding(
                        Severity.WARNING,
                        "crc",
                        kept.rot.file,
                        kept.rot.what(),
                        kept.rot.who_is_hit(),
                        kept.rot.fixes(d),
                    )
                )
        out += _load_findings(d, p)
        if any(isinstance(f, recover.LogRestartFinding) for f in p.findings):
            continue  # every segment goes: _load_findings says it
        gaps = {f.path for f in p.findings if isinstance(f, recover.GapFinding)}
        cuts = [
            a
            for a in p.actions
            if a.kind.value == "truncate"
            and a.path.suffix == names.LOG_SUFFIX
            and a.bytes_removed
            and str(a.path) not in gaps
        ]
        gone = [
            a
            for a in p.actions
            if a.kind.value == "delete"
            and a.path.suffix == names.LOG_SUFFIX
            and "replaced by" not in a.reason
        ]  # a swap's old segment is data kept, not lost
        if cuts or gone:
            lost = sum(a.bytes_removed or 0 for a in cuts)
            out.append(
                Finding(
                    Severity.WARNING,
                    "segment",
                    e.path,
                    f"a damaged segment: {lost} bytes after the last valid batch"
                    + (f", {len(gone)} later segment(s)" if gone else ""),
                    '"Found invalid messages in log segment": it truncates the log there and drops what '
                    "follows, then starts",
                    f"kafkalog recover {d} --salvage keeps the valid batches after the damage (what is "
                    f"cut goes to the quarantine); kafkalog recover {d} --dry-run shows it",
                )
            )
        for f in p.findings:
            if isinstance(f, recover.IndexFaultFinding) and f.path is not None:
                what = f.message.removesuffix("; recovering it")
                out.append(
                    Finding(
                        Severity.WARNING,
                        "index",
                        f.path,
                        f"a corrupt offset index: {what}",
                        "it loads the segment without recovering it (.kafka_cleanshutdown) and serves "
                        "from the log end the index gives",
                        f"kafkalog recover {d} rebuilds the index",
                    )
                )
    return out


def _load_findings(d: Path, p) -> list[Finding]:
    """What recover's plan says LogLoader does beyond a recovery from the recovery point: segments
    it recovers as it loads them, the gap a cut one leaves, a log restarted at its log start."""
    from kafkalog_cli.ops import recover

    out = []
    for f in p.findings:
        if isinstance(f, recover.RecoveredAtLoadFinding):
            out.append(
                Finding(
                    Severity.NOTE,
                    "segment",
                    f.path or str(d),
                    f.message.removesuffix("; so does kafkalog"),
                    "it recovers the segment on load (LogLoader.loadSegmentFiles: recoverSegment), "
                    "with or without .kafka_cleanshutdown, rebuilds its indexes and starts",
                    f"nothing to do; kafkalog recover {d} does the same before the broker starts",
                )
            )
        elif isinstance(f, recover.GapFinding):
            out.append(
                Finding(
                    Severity.WARNING,
                    "segment",
                    f.path or str(d),
                    f"a damaged segment recovered on load: {f.message}",
                    "it truncates the segment at the first invalid batch as it loads it "
                    "(LogLoader.loadSegmentFiles) and keeps the segments after it: consumers "
                    "skip the offsets lost, then starts",
                    f"kafkalog recover {d} --salvage keeps the valid batches after the damage (what is "
                    f"cut goes to the quarantine); kafkalog recover {d} --dry-run shows it",
                )
            )
        elif isinstance(f, recover.LogRestartFinding):
            out.append(
                Finding(
                    Severity.WARNING,
                    "segment",
                    f.path or str(d),
                    f"log end offset {f.log_end} is below the log start offset {f.log_start} "
                    "(log-start-offset-checkpoint)",
                    f'"Deleting all segments because logEndOffset ({f.log_end}) is smaller than '
                    f"logStartOffset {f.log_start}. This could happen if segment files were deleted "
                    f'from the file system.": it deletes all {f.segments} segment(s), the leader '
                    f"epochs and the producer state, and starts the log empty at {f.log_start}",
                    "restore the missing segment files (or the log-start-offset-checkpoint) "
                    f"before the broker starts; else kafkalog recover {d} --dry-run shows what goes",
                )
            )
    return out


# ------------------------------------------------------------------ assignments
def _node_id(metas: dict) -> int | None:
    for m in metas.values():
        if isinstance(m, dict):
            try:
                node = MetaProperties.parse(m).node_id
            except CheckpointError:
                continue
            if node is not None:
                return node
    return None


def check_assignments(
    log_dirs: list[Path],
    metadata_dir: Path,
    node_id: int | None,
    unread: list | None = None,
    stray_kept: bool = False,
    kraft: bool = True,
) -> list[Finding]:
    """Partitions the metadata (the image at the end of __cluster_metadata-0) does not assign to
    this broker: a topic id the image does not hold (deleted, or recreated under a new id), or
    replicas without this node. Kafka 3.0 to 3.6 delete them at start
    (BrokerMetadataPublisher.findStrayPartitions -> ReplicaManager.deleteStrayReplicas: renamed
    -delete, removed after file.delete.delay.ms); 3.7+ (`stray_kept`) renames them -stray and
    keeps them (LogManager.isStrayKraftReplica), as it does a partition without a topic id, on
    which 3.0 to 3.6's findStrayPartitions throws: none is deleted at that start. A metadata log
    dir without a metadata log, or one whose image holds no topic, leaves every partition stray
    if this node is the quorum's only controller (it starts a new, empty metadata log): said of
    KRaft log dirs only (`kraft`). Nothing is checked without a node id."""
    from kafkalog_cli.ops.metadata_image import read_metadata_image

    if node_id is None or node_id < 0:  # < 0: never a KRaft node
        return []
    partitions = [(d, e) for d in log_dirs if d.is_dir() for e in _partition_dirs(d)]
    if not (metadata_dir / METADATA_DIR).is_dir():
        if not kraft:
            return []  # a ZooKeeper-mode broker's log dirs: the controller holds the metadata
        return _no_metadata(metadata_dir, partitions, "no metadata log", stray_kept)
    try:
        image = read_metadata_image(metadata_dir).image
    except KafkalogError:
        return []  # the metadata checks say what is wrong with it
    if not image.topics:
        return _no_metadata(metadata_dir, partitions, "a metadata log with no topic", stray_kept)
    by_id = {t.id: t for t in image.topics.values()}
    stray: list[tuple[Path, os.DirEntry, str]] = []
    no_id: list[tuple[os.DirEntry, str]] = []
    for d, e in partitions:
        parsed = parse_partition_dir_name(e.name)
        if parsed is None:  # _partition_dirs keeps only the names that parse
            continue
        tp = parsed.topic_partition
        try:
            topic_id = read_topic_id(Path(e.path), newer_versions=True)
        except KafkalogError:
            continue  # damaged or not readable: check_partition_metadata and its kin say it
        topic = by_id.get(topic_id) if topic_id else None
        part = topic.partitions.get(tp.partition) if topic is not None else None
        if topic_id is None:
            no_id.append((e, tp.topic))
            continue
        if topic is None:
            why = (
                f"its topic id {topic_id} is not in the metadata "
                "(the topic was deleted, or recreated under a new id)"
            )
        elif part is None:
            why = f"partition {tp.partition} is not in the metadata of {topic.name}"
        elif node_id not in part.replicas:
            why = f"its replicas are {part.replicas}, without this broker (node {node_id})"
        else:
            continue
        stray.append((d, e, why))
    out = []
    keep = (
        "to keep its data, move it out of the log dir before the broker starts: mv {path} {parent}/"
    )
    for e, name in no_id:
        known = image.topics[name].id if name in image.topics else "TOPIC_ID"
        out.append(
            Finding(
                Severity.WARNING if stray_kept else Severity.NOTE,
                "assignment",
                e.path,
                "no topic id in partition.metadata (or no partition.metadata)",
                "3.7+ takes it for stray, renames it -stray and serves it no more (LogManager.isStrayKraftReplica); "
                '3.0 to 3.6 fail to look for strays ("does not have a topic ID, which is not allowed when '
                'running in KRaft mode": "Error deleting stray partitions during startup") and give it '
                "the topic id of the metadata when it takes the partition",
                f"write the topic id of {name} in it: printf 'version: 0\\ntopic_id: {known}' > "
                f"{e.path}/{names.PARTITION_METADATA}"
                + ("" if name in image.topics else " (kafka-topics.sh --describe shows the id)"),
            )
        )
    deleted = not stray_kept and not no_id
    for d, e, why in stray:
        out.append(
            Finding(
                Severity.WARNING if deleted else Severity.NOTE,
                "assignment",
                e.path,
                f"not assigned to this broker by the metadata: {why}",
                (
                    'Kafka 3.0 to 3.6 delete it at start ("Found stray log dir", then renamed -delete and '
                    "removed after file.delete.delay.ms: ReplicaManager.deleteStrayReplicas); 3.7+ renames "
                    "it -stray and keeps it"
                    if deleted
                    else 'a 3.7+ broker renames it to a -stray dir on start ("Found stray log dir") and '
                    "keeps it"
                    + (
                        ""
                        if stray_kept
                        else "; 3.0 to 3.6 would delete it, but not at this start: a partition here has "
                        "no topic id"
                    )
                ),
                keep.format(path=e.path, parent=d.parent)
                + " (compare it with the replicas that hold it: kafkalog compare-replicas)",
            )
        )
    return out


def _no_metadata(
    metadata_dir: Path, partitions: list[tuple[Path, os.DirEntry]], what: str, stray_kept: bool
) -> list[Finding]:
    """No image to judge the partitions by: what happens depends on the node's role."""
    if not partitions:
        return []
    return [
        Finding(
            Severity.WARNING,
            "assignment",
            str(metadata_dir / METADATA_DIR),
            f"{what} in the metadata log dir ({metadata_dir}), and {len(partitions)} partition(s) in "
            "the log dirs",
            "if this node is its quorum's only controller (process.roles with controller, itself the "
            "only voter), it starts a new, empty metadata log in which no partition here exists: "
            + (
                "it renames every one -stray and serves none (3.7+)"
                if stray_kept
                else '3.0 to 3.6 delete every one at start ("Found stray log dir ... does not exist in '
                'the metadata image"), 3.7+ renames every one -stray'
            )
            + "; a broker whose controllers run elsewhere fetches the metadata from them",
            f"restore {METADATA_DIR} into {metadata_dir} (from a copy, or point metadata.log.dir at the "
            "log dir that holds it) before starting a controller on these log dirs",
        )
    ]
