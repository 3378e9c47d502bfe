"""tests/helpers/kafka_dist.py: which Kafka a KAFKA_HOME holds, as the broker tests report it, on small
stand-in distributions (the jar's kafka-version.properties and tools/kafka-broker's BUILD-INFO)."""

from __future__ import annotations

import zipfile

from tests.helpers.kafka_dist import kafka_dist


def _home(tmp_path, jar_version: str, props: str, build_info: str | None):
    home = tmp_path / jar_version
    (home / "libs").mkdir(parents=True)
    with zipfile.ZipFile(home / "libs" / f"kafka-clients-{jar_version}.jar", "w") as z:
        z.writestr("kafka/kafka-version.properties", props)
    if build_info is not None:
        (home / "BUILD-INFO").write_text(build_info)
    return str(home)


def test_the_trunk_snapshot_is_reported_with_its_branch_and_commit(tmp_path):
    home = _home(
        tmp_path,
        "4.0.0-SNAPSHOT",
        "commitId=1eb7644349cb0713\nversion=4.0.0-SNAPSHOT",
        "tag=4.0.0-SNAPSHOT\nversion=4.0.0-SNAPSHOT\nbranch=trunk\n"
        "commit=1eb7644349cb07139d6a3c1ad1986979647cac99\ndate=2024-10-25\n",
    )
    d = kafka_dist(home)
    assert d.label == f"Kafka 4.0.0-SNAPSHOT (trunk 1eb76443) at {home}"
    assert d.version_tuple == (4, 0, 0) and d.at_least(4, 0) and not d.at_least(4, 1)
    assert d.commit == "1eb7644349cb07139d6a3c1ad1986979647cac99"
    # its kafka-dump-log prints 3.9's text; it checks meta.properties as 3.7+ do
    assert d.dump_log_text_version == "3.9" and d.meta_properties_ensemble


def test_a_tagged_build_keeps_its_label(tmp_path):
    home = _home(
        tmp_path,
        "3.9.0",
        "commitId=dd5272687e8adf9e\nversion=3.9.0",
        "tag=3.9.0-rc3\ncommit=dd5272687e8adf9e0000000000000000000000\n",
    )
    assert kafka_dist(home).label == f"Kafka 3.9.0-rc3 (3.9.0, commit dd5272687e8adf9e) at {home}"
    assert kafka_dist(home).dump_log_text_version == "3.9"
    home = _home(tmp_path, "3.3.1", "commitId=e23c59d00e687ff5\nversion=3.3.1", None)
    assert kafka_dist(home).label == f"Kafka 3.3.1 (commit e23c59d00e687ff5) at {home}"
    assert kafka_dist(home).dump_log_text_version == "3.3"
    assert not kafka_dist(home).meta_properties_ensemble


def test_format_sets_feature_levels(tmp_path):
    home = _home(
        tmp_path, "4.0.0-SNAPSHOT", "commitId=1eb7644349cb0713\nversion=4.0.0-SNAPSHOT", None
    )
    args = kafka_dist(home).format_args(
        "CID", "/c/server.properties", features={"transaction.version": 2}
    )
    assert args == [
        f"{home}/bin/kafka-storage.sh",
        "format",
        "-t",
        "CID",
        "-c",
        "/c/server.properties",
        "--feature",
        "transaction.version=2",
    ]
