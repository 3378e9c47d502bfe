"""Which Kafka a KAFKA_HOME holds, and what differs between the versions the broker tests run.

The version comes from the distribution itself: `kafka/kafka-version.properties` inside
libs/kafka-clients-*.jar (what `kafka-server-start.sh --version` prints), else the name of
libs/kafka_<scala>-<version>.jar. A from-source build by tools/kafka-broker also leaves
BUILD-INFO (the git tag it was built from, e.g. 3.9.0-rc3, whose gradle.properties says 3.9.0;
or, for a build of a branch, `branch` and `commit`: 4.0.0-SNAPSHOT is trunk's commit 1eb76443,
reported "Kafka 4.0.0-SNAPSHOT (trunk 1eb76443)").

Harness differences by version, kept here so every broker helper agrees:
- `kafka-storage.sh format`: the same `-t CLUSTER_ID -c CONFIG` on 3.3 and 3.9 with a static
  `controller.quorum.voters`; 3.9 writes meta.properties version 1 with a directory.id and
  metadata.version 3.9-IV0 (3.3.1: 3.3-IV3) unless `--release-version` says otherwise
  (`format_args(release_version=...)`).
- a 3.9 broker started on a dir formatted by 3.3.1 adds directory.id to meta.properties
  (MetaPropertiesEnsemble), and writes `{"version":0,"brokerEpoch":N}` into
  `.kafka_cleanshutdown` on a clean stop (3.3.1: an empty file).
- 3.9+ KRaft controllers elect uncleanly by themselves when a topic's
  unclean.leader.election.enable is true; 3.3.1's only on kafka-leader-election.
- 4.0.0-SNAPSHOT (trunk 1eb76443): the same format flags; metadata.version 4.0-IV0 by default.
  Transactions version 2 is an unstable feature there: `unstable.feature.versions.enable=true`
  (and `unstable.api.versions.enable=true`, for EndTxn v5) in the config and
  `format_args(release_version="4.0-IV2")` (transaction.version defaults to 2 at that level; this
  snapshot's format parses `--feature` but ignores it: StorageTool.runFormatCommand never passes it on).
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class KafkaDist:
    home: str
    version: str  # as the jars say: "3.3.1", "3.9.0"
    commit: str  # the commit id the jars carry ("" if unknown)
    tag: str  # the git tag of a from-source build (BUILD-INFO), else the version
    branch: str = ""  # a from-source build of a branch (BUILD-INFO), e.g. "trunk"

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", self.version)[:3])

    def at_least(self, *v: int) -> bool:
        return self.version_tuple >= v

    @property
    def label(self) -> str:
        """What a test report says: "Kafka 3.9.0-rc3 (3.9.0, commit dd5272687e8adf9e) at /opt/...",
        "Kafka 4.0.0-SNAPSHOT (trunk 1eb76443) at /opt/..."."""
        if self.branch:
            return f"Kafka {self.version} ({self.branch} {self.commit[:8]}) at {self.home}"
        inner = ", ".join(
            x
            for x in (
                (self.version if self.tag != self.version else ""),
                (f"commit {self.commit}" if self.commit else ""),
            )
            if x
        )
        return f"Kafka {self.tag}" + (f" ({inner})" if inner else "") + f" at {self.home}"

    @property
    def dump_log_text_version(self) -> str:
        """The `kafkalog dump-log --kafka-version` whose text this build's kafka-dump-log prints:
        its major.minor; the trunk snapshot 4.0.0-SNAPSHOT (1eb76443, before 4.0's release) prints
        3.9's (kafkalog models no 4.0 text: the 4.1 changes, LeaderChange bodies (KAFKA-19069) and
        coordinator records as CoordinatorRecordSerde's JSON, are not in it; checked on a
        tiered dir it wrote: topic, uploaded, __remote_log_metadata and __cluster_metadata
        segments print byte for byte as `--kafka-version 3.9`, and differ from 4.1)."""
        if self.branch and self.version_tuple[:2] == (4, 0):
            return "3.9"
        return ".".join(map(str, self.version_tuple[:2]))

    @property
    def meta_properties_ensemble(self) -> bool:
        """3.7+ reads and checks meta.properties with MetaPropertiesEnsemble (Loader, verify),
        in its own words: a node.id that is not an int is "Unable to read node.id as a base-10
        number." (PropertiesUtils.loadRequiredIntProp; the dir is then unreadable: "No readable
        meta.properties files found."), another node id "Stored node id N doesn't match previous
        node id M", another cluster.id "Invalid cluster.id in: <path>. Expected A, but read B".
        3.3.1 (BrokerMetadataCheckpoint, KafkaServer): "Failed to parse node.id property as an
        int", InconsistentNodeIdException, "BrokerMetadata is not consistent across log.dirs".
        Checked against 3.3.1 and 4.0.0-SNAPSHOT."""
        return self.at_least(3, 7)

    @property
    def kraft_unclean_election_by_config(self) -> bool:
        """3.9+ KRaft controllers honour a topic's unclean.leader.election.enable: a leaderless
        partition gets the first live replica outside the ISR as its leader as soon as that
        broker unfences (ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic,
        KAFKA-12670). Through 3.8 it returns false, and only an explicit ElectLeaders
        (kafka-leader-election --election-type unclean) elects such a replica."""
        return self.at_least(3, 9)

    def format_args(
        self,
        cluster_id: str,
        config: str | Path,
        release_version: str | None = None,
        features: dict[str, int] | None = None,
    ) -> list[str]:
        """`kafka-storage.sh format` for a one-node KRaft cluster with a static voter set (the
        same flags on 3.3, 3.9 and 4.0; `--release-version` pins metadata.version; `features`
        sets feature levels with `--feature NAME=LEVEL`, which the trunk snapshot ignores)."""
        args = [f"{self.home}/bin/kafka-storage.sh", "format", "-t", cluster_id, "-c", str(config)]
        if release_version:
            args += ["--release-version", release_version]
        for name, level in (features or {}).items():
            args += ["--feature", f"{name}={level}"]
        return args


def _properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


@cache
def kafka_dist(home: str | None = None) -> KafkaDist | None:
    """The Kafka at `home` (default KAFKA_HOME), or None when there is none."""
    home = home if home is not None else os.environ.get("KAFKA_HOME", "")
    libs = Path(home, "libs") if home else None
    if not libs or not libs.is_dir():
        return None
    version = commit = ""
    for jar in sorted(libs.glob("kafka-clients-*.jar")):
        try:
            with zipfile.ZipFile(jar) as z:
                props = _properties(z.read("kafka/kafka-version.properties").decode("latin-1"))
            version, commit = props.get("version", ""), props.get("commitId", "")
            break
        except (KeyError, OSError, zipfile.BadZipFile):
            continue
    if not version:
        for jar in sorted(libs.glob("kafka_2.*-*.jar")):
            m = re.fullmatch(r"kafka_2\.\d+-(\d+\.\d+\.\d+[^-]*?)\.jar", jar.name)
            if m:
                version = m.group(1)
                break
    if not version:
        return None
    info = Path(home, "BUILD-INFO")
    build = _properties(info.read_text()) if info.exists() else {}
    branch = build.get("branch", "")
    if branch:  # a branch's commit: BUILD-INFO has the full id, the jars 16 characters of it
        commit = build.get("commit", commit)
    return KafkaDist(
        home=home, version=version, commit=commit, tag=build.get("tag", version), branch=branch
    )


def describe() -> str:
    d = kafka_dist()
    return d.label if d else "no Kafka (KAFKA_HOME unset or not a Kafka distribution)"
