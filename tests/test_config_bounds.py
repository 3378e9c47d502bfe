"""config.bounds: tiered storage's local retention within the total, refused as Kafka 3.6+'s
LogConfig refuses it (exit 2, Kafka's message), where a version that may load the dir checks it."""

import shutil

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.config.bounds import retention_problem
from tests.helpers.paths import EXAMPLES

T = "multi-segment"


def values(**kw):
    out = {
        "retention.ms": 604800000,
        "retention.bytes": -1,
        "local.retention.ms": -2,
        "local.retention.bytes": -2,
        "remote.log.copy.disable": False,
    }
    out.update({k.replace("_", "."): v for k, v in kw.items()})
    return out


def test_kafkas_messages():
    assert retention_problem(values(retention_bytes=5000, local_retention_bytes=6000), True) == (
        "Invalid value 6000 for configuration local.retention.bytes: Value must not be more than retention.bytes "
        "property value: 5000"
    )
    assert retention_problem(values(retention_bytes=5000, local_retention_bytes=-1), True) == (
        "Invalid value -1 for configuration local.retention.bytes: Value must not be -1 as retention.bytes value is "
        "set as 5000."
    )
    assert retention_problem(values(retention_ms=1000, local_retention_ms=2000), True) == (
        "Invalid value 2000 for configuration local.retention.ms: Value must not be more than retention.ms property "
        "value: 1000"
    )
    assert retention_problem(
        values(local_retention_ms=1000, remote_log_copy_disable=True), True
    ) == (
        "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and `retention.ms` must be set to "
        "the identical value because there will be no more logs copied to the remote storage."
    )


@pytest.mark.parametrize(
    "kw",
    [
        {"retention_bytes": 5000, "local_retention_bytes": 1000},  # within
        {"retention_bytes": 5000},  # -2: the same as retention.bytes
        {"local_retention_bytes": 10**12},  # retention.bytes -1: unlimited, any local value
        {"retention_ms": -1, "local_retention_ms": -1},
        {"remote_log_copy_disable": True, "retention_ms": 1000, "local_retention_ms": 1000},
    ],
)
def test_what_kafka_accepts(kw):
    assert retention_problem(values(**kw), True) is None


def run(tmp_path, *args):
    d = tmp_path / "logdir"
    if not d.exists():
        shutil.copytree(EXAMPLES, d)
    return CliRunner().invoke(
        cli, ["retain", "--dry-run", "--assume-kafka-defaults", "--topic", T, *args, str(d)]
    )


def test_retain_refuses_a_local_retention_above_the_total(tmp_path):
    r = run(
        tmp_path,
        "--topic-config",
        f"{T}:remote.storage.enable=true",
        "--topic-config",
        f"{T}:local.retention.bytes=6000",
        "--topic-config",
        f"{T}:retention.bytes=5000",
    )
    assert r.exit_code == 2
    assert r.stderr.startswith(
        "kafkalog: --topic-config multi-segment: Invalid value 6000 for configuration local.retention.bytes: Value "
        "must not be more than retention.bytes property value: 5000 (topic multi-segment with "
        "remote.storage.enable=true; Kafka 3.6+ refuses it"
    )


def test_the_total_from_config_counts_too(tmp_path):
    r = run(
        tmp_path,
        "--topic-config",
        f"{T}:remote.storage.enable=true",
        "--topic-config",
        f"{T}:local.retention.ms=-1",
        "--config",
        "retention.ms=1000",
    )
    assert r.exit_code == 2
    assert (
        "Invalid value -1 for configuration local.retention.ms: Value must not be -1 as retention.ms value is "
        "set as 1000." in r.stderr
    )


def test_not_refused_where_no_version_checks_it_or_remote_storage_is_off(tmp_path):
    bad = (
        "--topic-config",
        f"{T}:local.retention.bytes=6000",
        "--topic-config",
        f"{T}:retention.bytes=5000",
    )
    # a 3.5 broker has no tiered storage, and so no such check
    assert (
        run(
            tmp_path,
            "--kafka-version",
            "3.5",
            "--topic-config",
            f"{T}:remote.storage.enable=true",
            *bad,
        ).exit_code
        == 1
    )
    assert (
        run(tmp_path, *bad).exit_code == 1
    )  # remote.storage.enable=false: LogConfig skips the checks


def test_copy_disable_rule_from_39(tmp_path):
    args = (
        "--topic-config",
        f"{T}:remote.storage.enable=true",
        "--topic-config",
        f"{T}:remote.log.copy.disable=true",
        "--topic-config",
        f"{T}:local.retention.ms=1000",
        "--config",
        "retention.ms=2000",
    )
    r = run(tmp_path, "--kafka-version", "3.9", *args)
    assert r.exit_code == 2 and "When `remote.log.copy.disable` is set to true" in r.stderr
    r = run(
        tmp_path, "--kafka-version", "3.8", *args
    )  # retain's own refusal of the tiered deletion (exit 7)
    assert r.exit_code == 7 and "When `remote.log.copy.disable`" not in r.stderr


def test_server_properties_a_broker_would_not_start_on(tmp_path):
    sp = tmp_path / "server.properties"
    sp.write_text(
        "log.dirs=/tmp/x\nremote.log.storage.system.enable=true\nlog.local.retention.bytes=10000\n"
        "log.retention.bytes=5000\n"
    )
    r = run(tmp_path, "--server-properties", str(sp))
    assert r.exit_code == 2
    assert r.stderr.startswith(
        "kafkalog: --server-properties: Invalid value 10000 for configuration local.retention.bytes: Value must not "
        "be more than retention.bytes property value: 5000 (with remote.log.storage.system.enable=true a broker does "
        "not start on it"
    )
    sp.write_text(sp.read_text().replace("remote.log.storage.system.enable=true\n", ""))
    assert run(tmp_path, "--server-properties", str(sp)).exit_code == 1
