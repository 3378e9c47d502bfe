"""Issue 11, the config side: every effective value carries its source; a value that decides a
deletion and can only be Kafka's built-in default is reported unknown, with the flags that state
it; damaged __cluster_metadata is read as the broker reads it; overrides are checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.config import (
    ClusterMetadata,
    ConfigResolver,
    ConfigSource,
    MetadataState,
    Unknown,
    check_topic_overrides,
    compaction_deciding_configs,
    parse_key_values,
    parse_topic_key_values,
    read_cluster_metadata,
    read_server_properties,
    refusal_line,
    retention_deciding_configs,
    unknown_configs,
)
from kafkalog_cli.errors import ExitCode, UsageError
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch
from kafkalog_cli.ops.runner import ConfigSources
from tests.helpers.kraft_records import config_record as _config_record
from tests.helpers.kraft_records import kraft_log_dir
from tests.helpers.kraft_records import topic_record as _topic_record
from tests.helpers.paths import FIXTURES


def resolver_from_options(
    log_dir,
    config_pairs=(),
    topic_config_items=(),
    server_properties=None,
    no_cluster_metadata=False,
    *,
    topics=None,
    assume_kafka_defaults=False,
):
    """What a command resolves for one log dir from its options."""
    return ConfigSources(
        tuple(config_pairs),
        tuple(topic_config_items),
        server_properties,
        no_cluster_metadata,
        frozenset(topics) if topics is not None else None,
        assume_kafka_defaults,
    ).resolver(log_dir)


RETAIN_SIZE = FIXTURES / "broker" / "retain-size"
BASIC = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before"
META_LOG = "__cluster_metadata-0/00000000000000000000.log"
DAY = 86_400_000


# ------------------------------------------------------------------ a KRaft metadata log, written here


def copy_dir(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


# ------------------------------------------------------------------ 1. provenance
def test_every_value_says_where_it_comes_from(tmp_path):
    d = kraft_log_dir(
        tmp_path / "logs",
        [
            _topic_record("t", 1),
            _config_record(2, "t", "retention.bytes", "100"),
            _config_record(4, "", "log.cleaner.delete.retention.ms", "7"),  # cluster-wide default
            _config_record(4, "1", "log.cleaner.min.compaction.lag.ms", "9"),  # this broker's
            _config_record(4, "2", "log.cleaner.min.cleanable.ratio", "0.9"),  # another broker's
        ],
    )
    r = ConfigResolver(
        server_properties={"log.retention.ms": "-1", "log.cleaner.min.cleanable.ratio": "0.2"},
        cluster_metadata=read_cluster_metadata(d),
        overrides={"segment.bytes": "1000"},
        topic_overrides={"t": {"segment.ms": "5"}},
    )
    c = r.for_topic("t")
    expected = {
        "segment.ms": (5, ConfigSource.TOPIC_CONFIG_OPTION, None),
        "segment.bytes": (1000, ConfigSource.CONFIG_OPTION, None),
        "retention.bytes": (100, ConfigSource.DYNAMIC_TOPIC_CONFIG, None),
        "min.compaction.lag.ms": (
            9,
            ConfigSource.DYNAMIC_BROKER_CONFIG,
            "log.cleaner.min.compaction.lag.ms=9 (broker 1)",
        ),
        "delete.retention.ms": (
            7,
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            "log.cleaner.delete.retention.ms=7",
        ),
        "retention.ms": (-1, ConfigSource.STATIC_BROKER_CONFIG, "log.retention.ms=-1"),
        "min.cleanable.dirty.ratio": (
            0.2,
            ConfigSource.STATIC_BROKER_CONFIG,
            "log.cleaner.min.cleanable.ratio=0.2",
        ),
        "cleanup.policy": (("delete",), ConfigSource.DEFAULT_CONFIG, None),
    }
    for name, (value, source, detail) in expected.items():
        v = c.source(name)
        assert (v.value, v.source, v.detail, v.known) == (value, source, detail, True), name
        assert c.get(name) == value
    internal = r.for_topic("__consumer_offsets").source("cleanup.policy")
    assert (internal.value, internal.source) == (("compact",), ConfigSource.INTERNAL_TOPIC_CONFIG)


def test_provenance_for_text_and_json_plans():
    c = ConfigResolver(
        server_properties={"log.retention.hours": "-1"},
        cluster_metadata={"t": {"retention.bytes": "40000"}},
    ).for_topic("t")
    names = ("retention.ms", "retention.bytes", "cleanup.policy")
    assert c.describe(names) == (
        "retention.ms=-1 from --server-properties: log.retention.hours=-1; "
        "retention.bytes=40000 from cluster metadata; cleanup.policy=delete from Kafka default"
    )
    out = json.loads(json.dumps(c.provenance(names)))
    assert out["retention.ms"] == {
        "value": -1,
        "source": "STATIC_BROKER_CONFIG",
        "origin": "--server-properties: log.retention.hours=-1",
        "known": True,
        "assumed": False,
        "unknown": None,
    }
    assert (
        out["cleanup.policy"]["value"] == "delete"
        and out["retention.bytes"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    )


def test_a_dynamic_broker_config_beats_the_static_synonyms():
    # DynamicBrokerConfig.overrideProps: a dynamic log.retention.ms removes the static hours
    meta = ClusterMetadata(
        MetadataState.READ,
        frozenset({"t"}),
        {"t": {}},
        {"": {"log.retention.ms": "5000"}},
        node_id=1,
    )
    c = ConfigResolver(
        server_properties={"log.retention.hours": "-1"}, cluster_metadata=meta
    ).for_topic("t")
    assert (c.retention_ms, c.source("retention.ms").source) == (
        5000,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )


def test_internal_topics_stay_compacted_whatever_log_cleanup_policy_says():
    r = ConfigResolver(
        server_properties={"log.cleanup.policy": "delete", "log.segment.bytes": "20000"}
    )
    assert r.for_topic("__consumer_offsets").cleanup_policy == ("compact",)
    assert r.for_topic("__transaction_state").compact
    # KafkaMetadataLog builds its LogConfig from metadata.log.* only, never from log.*
    meta = r.for_topic("__cluster_metadata")
    assert (meta.segment_bytes, meta.retention_ms, meta.retention_bytes) == (1073741824, -1, -1)


# ------------------------------------------------------------------ 2. refuse rather than guess
def test_retain_size_without_broker_config_would_guess_the_7_day_default():
    d = RETAIN_SIZE / "before"
    c = ConfigResolver(cluster_metadata=read_cluster_metadata(d)).for_topic("ret-size")
    assert c.retention_ms == 7 * DAY  # what deleted all 6 segments
    unknown = unknown_configs("ret-size", c, retention_deciding_configs(c))
    assert [(u.name, u.reason) for u in unknown] == [
        ("cleanup.policy", Unknown.NO_BROKER_CONFIG),
        ("retention.ms", Unknown.NO_BROKER_CONFIG),
    ]
    assert unknown[1].how_to_state == (
        "--server-properties FILE",
        "--config retention.ms=...",
        "--topic-config ret-size:retention.ms=...",
        "--assume-kafka-defaults",
    )
    assert refusal_line("ret-size-0", unknown) == (
        "ret-size-0: cleanup.policy, retention.ms are unknown (no --server-properties, and __cluster_metadata "
        "has no broker config for it); state them with --server-properties FILE, --config NAME=..., "
        "--topic-config ret-size:NAME=... or --assume-kafka-defaults"
    )
    # with the broker's server.properties: log.retention.hours=-1, as the broker ran
    props = read_server_properties(RETAIN_SIZE / "config" / "server.properties")
    c = ConfigResolver(
        server_properties=props, cluster_metadata=read_cluster_metadata(d)
    ).for_topic("ret-size")
    assert c.retention_ms == -1 and c.retention_bytes == 40000
    assert retention_deciding_configs(c) == ("cleanup.policy", "retention.bytes")
    assert unknown_configs("ret-size", c, retention_deciding_configs(c)) == []
    assert c.source("cleanup.policy").origin == "Kafka default"  # not in server.properties: known


def test_a_zookeeper_era_log_dir_never_takes_delete_for_granted(tmp_path):
    (tmp_path / "t-0").mkdir()
    r = resolver_from_options(
        tmp_path,
        server_properties=RETAIN_SIZE / "config" / "server.properties",
        config_pairs=["retention.ms=1000"],
    )
    c = r.for_topic("t")
    unknown = unknown_configs("t", c, retention_deciding_configs(c))
    # a topic override in ZooKeeper (cleanup.policy=compact) may hide behind the broker's value
    assert [(u.name, u.reason) for u in unknown] == [
        ("cleanup.policy", Unknown.NO_CLUSTER_METADATA)
    ]
    assert "--server-properties FILE" not in unknown[0].how_to_state
    assert "--config cleanup.policy=..." in unknown[0].how_to_state
    stated = resolver_from_options(
        tmp_path, config_pairs=["retention.ms=1000", "cleanup.policy=delete"]
    )
    assert unknown_configs("t", stated.for_topic("t"), ("cleanup.policy", "retention.ms")) == []


def test_assume_kafka_defaults_makes_defaults_count_and_says_so(tmp_path):
    c = resolver_from_options(tmp_path, assume_kafka_defaults=True).for_topic("t")
    assert unknown_configs("t", c, retention_deciding_configs(c)) == []
    v = c.source("retention.ms")
    assert (v.value, v.known, v.assumed, v.origin) == (
        7 * DAY,
        True,
        True,
        "Kafka default (assumed)",
    )


def test_no_topic_record_and_no_cluster_metadata_option_are_unknown(tmp_path):
    meta = read_cluster_metadata(RETAIN_SIZE / "before")
    props = {"log.retention.hours": "1"}
    c = ConfigResolver(server_properties=props, cluster_metadata=meta).for_topic("other")
    assert c.source("retention.ms").unknown is Unknown.NO_TOPIC_RECORD
    c = resolver_from_options(RETAIN_SIZE / "before", no_cluster_metadata=True).for_topic(
        "ret-size"
    )
    assert c.source("retention.bytes").unknown is Unknown.CLUSTER_METADATA_IGNORED


def test_only_values_that_can_delete_decide():
    compact = ConfigResolver(cluster_metadata={"t": {"cleanup.policy": "compact"}}).for_topic("t")
    assert retention_deciding_configs(compact) == ()  # only the log start offset rule
    infinite = ConfigResolver(
        overrides={"retention.ms": "-1"}, cluster_metadata={"t": {}}
    ).for_topic("t")
    assert retention_deciding_configs(infinite) == ()  # the broker can only have deleted more
    both = ConfigResolver(cluster_metadata={"t": {"cleanup.policy": "compact,delete"}}).for_topic(
        "t"
    )
    assert compaction_deciding_configs(both) == (
        "cleanup.policy",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "delete.retention.ms",
        "retention.ms",
    )
    assert compaction_deciding_configs(infinite) == ()


def test_compaction_of_an_internal_topic_needs_the_broker_cleaner_configs():
    meta = read_cluster_metadata(BASIC)
    c = ConfigResolver(cluster_metadata=meta).for_topic("__consumer_offsets")
    assert c.source("cleanup.policy").source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    unknown = unknown_configs("__consumer_offsets", c, compaction_deciding_configs(c))
    assert [u.name for u in unknown] == [
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "delete.retention.ms",
    ]
    compacted = ConfigResolver(cluster_metadata=meta).for_topic(
        "compacted"
    )  # every deciding value set
    assert unknown_configs("compacted", compacted, compaction_deciding_configs(compacted)) == []


def test_kafka_17584_a_dynamic_log_config_hides_the_static_hours():
    props = {"log.retention.hours": "-1"}
    meta = ClusterMetadata(
        MetadataState.READ,
        frozenset({"t"}),
        {"t": {}},
        {"": {"log.cleaner.delete.retention.ms": "7"}},
        node_id=1,
    )
    c = ConfigResolver(server_properties=props, cluster_metadata=meta).for_topic("t")
    assert (c.retention_ms, c.source("retention.ms").unknown) == (-1, Unknown.KAFKA_17584)
    quiet = ClusterMetadata(MetadataState.READ, frozenset({"t"}), {"t": {}}, node_id=1)
    assert (
        ConfigResolver(server_properties=props, cluster_metadata=quiet)
        .for_topic("t")
        .source("retention.ms")
        .known
    )


def test_per_broker_configs_need_the_broker_id(tmp_path):
    d = kraft_log_dir(
        tmp_path / "logs",
        [_topic_record("t", 1), _config_record(4, "3", "log.retention.ms", "5")],
        node_id=None,
    )
    c = ConfigResolver(
        server_properties={"log.retention.hours": "1"}, cluster_metadata=read_cluster_metadata(d)
    ).for_topic("t")
    assert c.source("retention.ms").unknown is Unknown.UNKNOWN_BROKER_ID
    c = ConfigResolver(
        server_properties={"log.retention.hours": "1", "node.id": "3"},
        cluster_metadata=read_cluster_metadata(d),
    ).for_topic("t")
    assert (c.retention_ms, c.source("retention.ms").source) == (
        5,
        ConfigSource.DYNAMIC_BROKER_CONFIG,
    )


# ------------------------------------------------------------------ 3. damaged __cluster_metadata
def test_damaged_metadata_is_read_up_to_the_first_invalid_batch(tmp_path):
    d = copy_dir(BASIC, tmp_path / "basic")
    log = d / META_LOG
    data = bytearray(log.read_bytes())
    data[434 + 80] ^= 0x40  # a record varint of the batch holding every topic's configs
    log.write_bytes(bytes(data))
    meta = read_cluster_metadata(d)
    assert meta.state is MetadataState.DAMAGED
    assert (meta.damage.path, meta.damage.position) == (str(log), 434)
    assert meta.warning.startswith(f"{log}: byte 434: Record is corrupt (stored crc = ")
    assert len(meta.warning.splitlines()) == 1
    c = ConfigResolver(cluster_metadata=meta).for_topic("compacted")
    assert c.cleanup_policy == ("delete",)  # what the base code acted on
    unknown = unknown_configs("compacted", c, retention_deciding_configs(c))
    assert {u.reason for u in unknown} == {Unknown.DAMAGED_METADATA} and unknown
    assert "--server-properties FILE" not in unknown[0].how_to_state
    stated = ConfigResolver(
        cluster_metadata=meta, topic_overrides={"compacted": {"cleanup.policy": "compact"}}
    )
    assert retention_deciding_configs(stated.for_topic("compacted")) == ()


def test_damage_after_a_topic_leaves_what_was_read_but_unknown(tmp_path):
    d = copy_dir(BASIC, tmp_path / "basic")
    log = d / META_LOG
    data = bytearray(log.read_bytes())
    data[4530 + 100] ^= 0x01  # the __consumer_offsets batch, after the other topics
    log.write_bytes(bytes(data))
    c = ConfigResolver(cluster_metadata=read_cluster_metadata(d)).for_topic("compacted")
    v = c.source("cleanup.policy")
    assert (v.value, v.source, v.unknown) == (
        ("compact",),
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        Unknown.DAMAGED_METADATA,
    )
    assert [u.name for u in unknown_configs("compacted", c, compaction_deciding_configs(c))][
        0
    ] == "cleanup.policy"


@pytest.mark.parametrize(
    "tail", [b"\x00" * 40, build_v2_batch([SimpleRecord(None, b"x" * 50)], 227)[:70]]
)
def test_a_crash_cut_tail_of_the_last_segment_is_no_damage(tmp_path, tail):
    d = copy_dir(BASIC, tmp_path / "basic")
    with open(d / META_LOG, "ab") as f:
        f.write(tail)
    meta = read_cluster_metadata(d)
    assert (meta.state, meta.damage) == (MetadataState.READ, None)
    assert "compacted" in meta.topics


def test_garbage_in_the_middle_and_missing_offsets_are_damage(tmp_path):
    d = copy_dir(BASIC, tmp_path / "basic")
    log = d / META_LOG
    data = log.read_bytes()
    (d / META_LOG).write_bytes(data[:4530] + b"\x07" * 40)  # garbage, then a later segment
    later = build_v2_batch([SimpleRecord(None, _topic_record("late", 9))], 300)
    (d / "__cluster_metadata-0" / "00000000000000000300.log").write_bytes(later)
    meta = read_cluster_metadata(d)
    assert (meta.state, meta.damage.position) == (MetadataState.DAMAGED, 4530)
    (d / META_LOG).write_bytes(data)  # whole again: offsets 227-299 missing
    meta = read_cluster_metadata(d)
    assert meta.state is MetadataState.DAMAGED
    assert (
        str(meta.damage) == f"{d / '__cluster_metadata-0' / '00000000000000000300.log'}: byte 0: "
        "offsets 227 to 299 are missing"
    )


def test_the_latest_valid_snapshot_is_read(tmp_path):
    src = (
        FIXTURES
        / "kraft-snapshot"
        / "__cluster_metadata-0"
        / "00000000000000060500-0000000025.checkpoint"
    )
    meta_dir = tmp_path / "logs" / "__cluster_metadata-0"
    meta_dir.mkdir(parents=True)
    shutil.copy(src, meta_dir / src.name)
    newer = meta_dir / "00000000000000070000-0000000026.checkpoint"
    newer.write_bytes(src.read_bytes()[:-10])  # cut short: damaged
    meta = read_cluster_metadata(tmp_path / "logs")
    # the newer one's records 60500..69999 are nowhere else: what the older one says is not enough
    assert meta.state is MetadataState.DAMAGED and meta.damage.path == str(newer)
    assert meta.snapshot == src.name and "__consumer_offsets" in meta.topics
    newer.unlink()
    meta = read_cluster_metadata(tmp_path / "logs")
    assert (meta.state, meta.damage, meta.warning) == (MetadataState.READ, None, None)


def test_the_resolver_hands_the_warning_to_the_command(tmp_path):
    d = copy_dir(BASIC, tmp_path / "basic")
    data = bytearray((d / META_LOG).read_bytes())
    data[500] ^= 0xFF
    (d / META_LOG).write_bytes(bytes(data))
    r = resolver_from_options(d)
    assert r.warning.startswith(f"{d / META_LOG}: byte 434: ")
    assert resolver_from_options(RETAIN_SIZE / "before").warning is None


# ------------------------------------------------------------------ 4. checked overrides
@pytest.mark.parametrize(
    "pair, why",
    [
        ("retention.ms=-5", "at least -1"),
        ("min.cleanable.dirty.ratio=5", "between 0 and 1"),
        ("segment.bytes=13", "at least 14"),
        ("segment.bytes=2147483648", "not a 32-bit integer"),
        ("segment.index.bytes=3", "at least 4"),
        ("max.compaction.lag.ms=0", "at least 1"),
        ("flush.messages=0", "at least 1"),
        ("min.insync.replicas=0", "at least 1"),
        ("delete.retention.ms=1e3", "not a number"),
        ("preallocate=yes", "true or false"),
    ],
)
def test_values_outside_kafkas_validators_are_usage_errors(pair, why):
    with pytest.raises(UsageError) as e:
        parse_key_values([pair], "--config")
    name, _, value = pair.partition("=")
    assert str(e.value) == f"--config: invalid value {value!r} for config {name} ({why})"
    assert e.value.exit_code == ExitCode.USAGE


def test_min_compaction_lag_above_max_is_a_usage_error():
    with pytest.raises(
        UsageError, match=r"min.compaction.lag.ms \(10\) > max.compaction.lag.ms \(5\)"
    ):
        parse_topic_key_values(["t:min.compaction.lag.ms=10", "t:max.compaction.lag.ms=5"])
    assert parse_key_values(
        ["retention.ms=-1", "retention.bytes=-7", "min.cleanable.dirty.ratio=1"], "--config"
    )


def test_a_topic_config_for_a_topic_that_is_not_there_is_a_usage_error():
    with pytest.raises(UsageError) as e:
        parse_topic_key_values(["ordrs:retention.ms=5"], topics={"orders", "payments"})
    assert (
        str(e.value)
        == "--topic-config: topic 'ordrs' has no partition in the log dirs given (did you mean orders?)"
    )
    assert parse_topic_key_values(["orders:retention.ms=5"], topics={"orders"}) == {
        "orders": {"retention.ms": "5"}
    }
    with pytest.raises(UsageError):
        check_topic_overrides({"x": {}}, [])
    with pytest.raises(UsageError):
        resolver_from_options(
            RETAIN_SIZE / "before",
            topic_config_items=["ret-sise:retention.ms=5"],
            topics={"ret-size"},
        )


def test_server_properties_must_be_a_broker_config(tmp_path):
    with pytest.raises(UsageError, match="not a Kafka broker config"):
        read_server_properties(Path("/etc/passwd"))
    bad = tmp_path / "server.properties"
    bad.write_text("log.retention.hours=forever\n")
    with pytest.raises(UsageError) as e:
        read_server_properties(bad)
    assert (
        str(e.value)
        == f"--server-properties {bad}: invalid value 'forever' for config log.retention.hours (not a number)"
    )
    bad.write_text("log.segment.bytes=5\n")
    with pytest.raises(UsageError, match="segment.bytes"):
        read_server_properties(bad)
    bad.write_text("# only a broker id\nbroker.id=3\n")
    assert read_server_properties(bad) == {"broker.id": "3"}


def test_the_commands_refuse_bad_overrides_with_exit_2(tmp_path):
    d = copy_dir(RETAIN_SIZE / "before", tmp_path / "logs")
    before = sorted(p.name for p in (d / "ret-size-0").iterdir())
    for args in (
        ["--server-properties", "/etc/passwd"],
        ["--config", "retention.ms=-5"],
        ["--config", "min.cleanable.dirty.ratio=5"],
    ):
        r = CliRunner().invoke(cli, ["retain", "--no-quarantine", *args, str(d)])
        assert r.exit_code == 2, (args, r.output)
        assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr
    assert sorted(p.name for p in (d / "ret-size-0").iterdir()) == before
