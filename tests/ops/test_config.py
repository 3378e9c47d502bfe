from kafkalog_cli.config import ConfigResolver, broker_defaults, read_properties
from tests.helpers import paths


def test_defaults():
    c = ConfigResolver().for_topic("t")
    assert c.segment_bytes == 1073741824 and c.segment_ms == 604800000
    assert c.index_interval_bytes == 4096 and c.cleanup_policy == ("delete",)


def test_internal_topics():
    c = ConfigResolver().for_topic("__consumer_offsets")
    assert c.compact and c.segment_bytes == 104857600


def test_synonym_precedence():
    d = broker_defaults({"log.retention.hours": "1", "log.retention.minutes": "2"})
    assert d["retention.ms"] == str(2 * 60000)
    d = broker_defaults({"log.retention.hours": "-1"})
    assert d["retention.ms"] == "-1"
    d = broker_defaults({"log.roll.hours": "2"})
    assert d["segment.ms"] == str(7200000)


def test_most_specific_wins(tmp_path):
    p = tmp_path / "server.properties"
    p.write_text("# c\nlog.segment.bytes=100\nlog.index.interval.bytes = 7\n")
    r = ConfigResolver(
        server_properties=read_properties(p),
        cluster_metadata={"a": {"segment.bytes": "200"}},
        overrides={"index.interval.bytes": "9"},
        topic_overrides={"a": {"index.interval.bytes": "11"}},
    )
    a, b = r.for_topic("a"), r.for_topic("b")
    assert (a.segment_bytes, a.index_interval_bytes) == (200, 11)
    assert (b.segment_bytes, b.index_interval_bytes) == (100, 9)
    assert a.sources["segment.bytes"] == "cluster metadata"


def test_topic_configs_come_from_the_latest_kraft_snapshot_when_the_log_is_gone():

    from kafkalog_cli.config import cluster_metadata_configs

    logdir = paths.FIXTURES / "kraft-snapshot"
    configs = cluster_metadata_configs(logdir)
    assert configs["__consumer_offsets"]["cleanup.policy"] == "compact"
    assert configs["_confluent-ksql-default__command_topic"]["retention.ms"] == "-1"


def test_command_line_configs_are_kafka_names_with_valid_values():
    import pytest

    from kafkalog_cli.config import parse_key_values, parse_topic_key_values
    from kafkalog_cli.errors import ExitCode, UsageError

    assert parse_key_values(["retention.ms=1000", "min.insync.replicas=2"], "--config") == {
        "retention.ms": "1000",
        "min.insync.replicas": "2",
    }  # a Kafka config kafkalog ignores
    assert parse_topic_key_values(["t:cleanup.policy=compact,delete"]) == {
        "t": {"cleanup.policy": "compact,delete"}
    }
    cases = {
        "retenton.ms=1000": "--config: 'retenton.ms' is not a Kafka topic config (did you mean retention.ms?)",
        "retention.ms=abc": "invalid value 'abc' for config retention.ms",
        "cleanup.policy=bogus": "invalid value 'bogus' for config cleanup.policy (one of compact, delete)",
        "message.timestamp.type=create": "invalid value 'create' for config message.timestamp.type",
        "retention.ms": "--config expects KEY=VALUE, got 'retention.ms'",
    }
    for pair, message in cases.items():
        with pytest.raises(UsageError) as e:
            parse_key_values([pair], "--config")
        assert message in str(e.value) and e.value.exit_code == ExitCode.USAGE
    with pytest.raises(UsageError, match="--topic-config expects TOPIC:KEY=VALUE"):
        parse_topic_key_values(["retention.ms=1"])
