"""`doctor --kafka-version`: what a broker of that version refuses at start-up beyond 3.3.1's
checks (ops.doctor), each rule from config.versions, where it cites Kafka's class and method:

- KRAFT_ONLY (4.0+): a released 4.x broker runs KRaft only. server.properties without
  process.roles is a ConfigException before any log dir is read (KRaftConfigs: process.roles has
  no default); without server.properties, a log dir that only a ZooKeeper-mode broker can load (a
  version 0 meta.properties and no KRaft metadata log in any log dir) is refused. A version 0
  meta.properties with broker.id is still read in KRaft (MetaProperties.Builder: migrated
  clusters run on it).
- METADATA_VERSION_FLOOR (4.0+) and the release's newest metadata.version: the bootstrap
  checkpoint's and the metadata log's metadata.version must be one the release knows
  (MetadataVersion.fromFeatureLevel: from 3.3-IV3, feature level 7, to its latestTesting).
- REMOVED_BROKER_CONFIGS (4.0+): settings 4.0 removed are ignored (a note each).
- DIRECTORY_ID_ENSEMBLE (3.7+): a reserved directory.id (DirectoryId.reserved: the first 100
  Uuids) stops the broker (MetaPropertiesEnsemble.verify); a log dir without one gets a fresh one
  (Copier.generateValidDirectoryId). A duplicate is ops.doctor's check (it holds from 3.7 on).

Reading only; no finding for a version before the rule's.
"""

from __future__ import annotations

from pathlib import Path

from kafkalog_cli.config.versions import (
    DIRECTORY_ID_ENSEMBLE,
    KRAFT_ONLY,
    LATEST_METADATA_VERSION,
    METADATA_VERSION_FLOOR,
    MINIMUM_METADATA_VERSION_4X,
    REMOVED_BROKER_CONFIGS,
    KafkaVersion,
    bootstrap_metadata_version,
    metadata_version_release,
)
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.checkpoints import parse_properties, topic_id_bytes
from kafkalog_cli.storage import files, names

METADATA_DIR = "__cluster_metadata-0"

# server.properties settings Kafka 4.0 removed (an unknown setting is logged and ignored):
# ZooKeeper mode (KIP-500), the message format (KIP-724), the timestamp difference (KIP-937)
REMOVED_IN_4_0 = {
    "zookeeper.connect": "ZooKeeper mode is gone (KIP-500)",
    "zookeeper.metadata.migration.enable": "the ZooKeeper migration is over in 4.0 (KIP-866)",
    "log.message.format.version": "message formats v0 and v1 are not written any more (KIP-724)",
    "log.message.timestamp.difference.max.ms": "replaced by log.message.timestamp.before.max.ms and "
    "log.message.timestamp.after.max.ms (KIP-937)",
}


def latest_metadata_version(version: KafkaVersion) -> int:
    """The highest metadata.version feature level `version` knows (MetadataVersion.latestTesting)."""
    if version in LATEST_METADATA_VERSION:
        return LATEST_METADATA_VERSION[version]
    levels = [
        n
        for n in range(1, 64)
        if (r := metadata_version_release(n)) is not None
        and KafkaVersion.parse(r.split("-")[0]) <= version
    ]
    return max(levels)


def minimum_metadata_version(version: KafkaVersion) -> int:
    """The lowest metadata.version `version` reads: 3.3-IV3 from 4.0 (MetadataVersion.MINIMUM_VERSION),
    3.0-IV1 before (MINIMUM_KRAFT_VERSION)."""
    return MINIMUM_METADATA_VERSION_4X if METADATA_VERSION_FLOOR.applies(version) else 1


def check_startup(
    version: KafkaVersion, log_dirs: list[Path], metas: dict, config, metadata_dir: Path, finding
) -> list:
    """The findings of `version`'s start-up rules; `finding(severity, check, path, problem, broker,
    fix)` builds ops.doctor's Finding (this module stays free of its types)."""
    out = []
    props = _server_properties(config.path)
    kraft_dir = any((d / METADATA_DIR).is_dir() for d in log_dirs)
    if KRAFT_ONLY.applies(version):
        refused = _kraft_only(version, log_dirs, metas, config, props, kraft_dir, finding)
        out += refused or _removed_configs(
            version, config, props, finding
        )  # refused: it never reads them
    out += _metadata_versions(version, metadata_dir, finding)
    if DIRECTORY_ID_ENSEMBLE.applies(version):
        out += _directory_ids(version, metas, finding)
    return out


def _server_properties(path: str | None) -> dict:
    if path is None:
        return {}
    try:
        return parse_properties(files.read_bytes(Path(path)), path=path)
    except KafkalogError:
        return {}  # ops.doctor's BrokerConfig.read said what is wrong with it


def _kraft_only(version, log_dirs, metas, config, props, kraft_dir, finding) -> list:
    migrate = (
        "migrate the cluster to KRaft on Kafka 3.9 first (KIP-866: kafka-storage format of the controllers, "
        "zookeeper.metadata.migration.enable), then upgrade to " + str(version)
    )
    if config.path is not None:
        if (props.get("process.roles") or "").strip():
            return []
        zk = "zookeeper.connect" in props
        return [
            finding(
                "error",
                "server.properties",
                config.path,
                (
                    "a ZooKeeper-mode configuration (zookeeper.connect, no process.roles)"
                    if zk
                    else "no process.roles"
                ),
                f"Kafka {version} runs KRaft only: ConfigException: Missing required configuration "
                f'"process.roles" which has no default value. (KRaftConfigs; {KRAFT_ONLY.where})',
                migrate
                if zk
                else "set process.roles (broker, controller or both) and the controller.quorum.* "
                "settings of the cluster's controllers",
            )
        ]
    v0 = [
        d for d, m in metas.items() if isinstance(m, dict) and m.get("version", "0").strip() == "0"
    ]
    if kraft_dir or not v0 or len(v0) != len([m for m in metas.values() if isinstance(m, dict)]):
        return []
    return [
        finding(
            "error",
            "meta.properties",
            ", ".join(str(d / names.META_PROPERTIES) for d in v0),
            "a ZooKeeper-mode log dir: version 0 meta.properties and no KRaft metadata log "
            f"({METADATA_DIR}) in any log dir",
            f"Kafka {version} runs KRaft only ({KRAFT_ONLY.where}): only a ZooKeeper-mode broker loads these "
            "log dirs as they are",
            migrate + "; or check them with --server-properties if a KRaft configuration exists",
        )
    ]


def _removed_configs(version, config, props, finding) -> list:
    out = []
    for key, why in REMOVED_IN_4_0.items():
        if key in props:
            out.append(
                finding(
                    "note",
                    "server.properties",
                    config.path,
                    f"{key} is set: {why}",
                    f"Kafka {version} does not know it: it logs it as unused and ignores it "
                    f"({REMOVED_BROKER_CONFIGS.where})",
                    f"remove {key} from {config.path}",
                )
            )
    return out


def _metadata_versions(version, metadata_dir: Path, finding) -> list:
    """metadata.version of the bootstrap checkpoint and of the metadata log, as `version` reads them."""
    from kafkalog_cli.config import MetadataState, read_cluster_metadata

    low, high = minimum_metadata_version(version), latest_metadata_version(version)
    levels = []
    try:
        levels.append(
            (
                bootstrap_metadata_version(metadata_dir),
                metadata_dir / "bootstrap.checkpoint",
                "BootstrapDirectory.read -> BootstrapMetadata.metadataVersion",
            )
        )
    except KafkalogError:
        pass  # unreadable: ops.doctor's own checks
    meta = read_cluster_metadata(metadata_dir)
    if meta.state in (MetadataState.READ, MetadataState.DAMAGED):
        levels.append(
            (
                meta.metadata_version,
                metadata_dir / METADATA_DIR,
                "the metadata log's FeatureLevelRecord, replayed (FeatureControlManager.replay)",
            )
        )
    out = []
    for level, path, where in levels:
        if level is None or low <= level <= high:
            continue
        release = metadata_version_release(level) or "newer than 4.2"
        floor = level < low
        out.append(
            finding(
                "error",
                "metadata.version",
                str(path),
                f"metadata.version feature level {level} ({release}) is "
                + (
                    f"below {metadata_version_release(low)}, the oldest Kafka {version} reads"
                    if floor
                    else f"newer than Kafka {version} knows ({metadata_version_release(high)} is its newest)"
                ),
                f"IllegalArgumentException: No MetadataVersion with feature level {level}. Valid feature levels are "
                f"from {low} to {high}. ({where}; MetadataVersion.fromFeatureLevel): the broker exits",
                (
                    "upgrade metadata.version to at least 3.3-IV3 on the 3.x cluster first (kafka-features.sh upgrade "
                    "--metadata 3.3 or later, the 4.0 upgrade notes), then upgrade the brokers"
                    if floor
                    else f"start a Kafka release that knows {release} (the one that wrote the log dir, or newer)"
                ),
            )
        )
    return out


def _reserved(directory_id: str) -> bool:
    """DirectoryId.reserved: the most significant half 0 and the least below 100."""
    raw = topic_id_bytes(directory_id)
    return int.from_bytes(raw[:8], "big") == 0 and int.from_bytes(raw[8:], "big", signed=True) < 100


def _directory_ids(version, metas: dict, finding) -> list:
    out = []
    for d, m in metas.items():
        if not isinstance(m, dict):
            continue
        directory_id = m.get("directory.id")
        path = str(d / names.META_PROPERTIES)
        if directory_id is None:
            out.append(
                finding(
                    "note",
                    "meta.properties",
                    path,
                    "no directory.id",
                    f"Kafka {version} writes a new random one at start (MetaPropertiesEnsemble.Copier."
                    "generateValidDirectoryId)",
                    "nothing to do",
                )
            )
            continue
        try:
            reserved = _reserved(directory_id)
        except ValueError:
            continue  # not a Uuid: ops.doctor's meta.properties check says it
        if reserved:
            out.append(
                finding(
                    "error",
                    "meta.properties",
                    path,
                    f"directory.id {directory_id} is a reserved id",
                    f"RuntimeException: Invalid resrved directory ID {directory_id} found in {d} "
                    f"({DIRECTORY_ID_ENSEMBLE.where}): the broker exits",
                    f"remove directory.id from {path}: the broker writes a new one at start",
                )
            )
    return out
