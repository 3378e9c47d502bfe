"""retain and compact never delete on a guess (issue 11): a deciding config that cannot be read
refuses the deletion (exit 7, one stderr line per partition), damaged __cluster_metadata is
warned about once per log dir, --topic-config names a real topic, and both commands share the
broker's high-watermark rule."""

from __future__ import annotations

import hashlib
import pickle
import shutil
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.ops import compact, retain
from kafkalog_cli.ops.high_watermark import high_watermark_at_load
from kafkalog_cli.ops.runner import ConfigSources, Operation, run_log_dir
from kafkalog_cli.storage import names
from kafkalog_cli.storage.logdir import partition_dirs_for
from tests.helpers.compaction import records_of, restore
from tests.helpers.paths import BROKER as FIXTURES
from tests.helpers.paths import EXAMPLES
from tests.helpers.retention import (
    DAY,
    NEW,
    NOW,
    OLD,
    copy_case,
    make_log_dir,
    params,
    partition_files,
    server_properties,
)
from tests.helpers.run_lines import log_dir_report, of_kind

KEYED_OVERWRITES_NOW = "1795248446186"


def sha256_tree(d: Path) -> dict[str, str]:
    return {
        str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def invoke(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args])


# ------------------------------------------------------------------ retain/size, as the issue tried it
def test_retain_size_without_broker_config_refuses_and_changes_nothing(tmp_path):
    d = copy_case("size", tmp_path)
    before = sha256_tree(d)
    r = invoke("retain", "--now", params("size")["now_ms"], d)
    assert r.exit_code == 7, r.output
    assert r.stderr.splitlines() == [
        "kafkalog: ret-size-0: cleanup.policy, retention.ms are unknown (no --server-properties, and "
        "__cluster_metadata has no broker config for it); state them with --server-properties FILE, "
        "--config NAME=..., --topic-config ret-size:NAME=... or --assume-kafka-defaults"
    ]
    assert sha256_tree(d) == before
    assert not (tmp_path / ".kafkalog-quarantine").exists()


def test_retain_size_with_server_properties_matches_the_broker(tmp_path):
    d = copy_case("size", tmp_path)
    r = invoke(
        "retain",
        "--now",
        params("size")["now_ms"],
        "--server-properties",
        server_properties("size"),
        "--format",
        "json",
        d,
    )
    assert r.exit_code == 0 and r.stderr == "", r.output
    after = FIXTURES / "retain-size" / "after"
    skip = "leader-epoch-checkpoint"  # the broker's restart added an epoch at the log end offset
    assert {k: v for k, v in partition_files(d).items() if not k.endswith(skip)} == {
        k: v for k, v in partition_files(after).items() if not k.endswith(skip)
    }
    summary = of_kind(r.stdout, "partition")[1]
    # the values that decided it, each with its source
    assert summary["configs"]["retention.bytes"]["origin"] == "cluster metadata"
    assert summary["configs"]["cleanup.policy"]["known"]


def test_the_text_plan_shows_the_deciding_configs_under_a_deletion(tmp_path):
    d = copy_case("size", tmp_path)
    r = invoke(
        "retain",
        "--dry-run",
        "--now",
        params("size")["now_ms"],
        "--server-properties",
        server_properties("size"),
        d,
    )
    lines = r.stdout.splitlines()
    i = next(
        i for i, x in enumerate(lines) if x.startswith("ret-size-0: would delete 3 segment(s)")
    )
    assert (
        lines[i + 1]
        == "  configs: cleanup.policy=delete from Kafka default; retention.bytes=40000 from cluster metadata"
    )


def test_assume_kafka_defaults_takes_the_seven_days(tmp_path):
    d = copy_case("size", tmp_path)
    r = invoke(
        "retain",
        "--dry-run",
        "--now",
        params("size")["now_ms"],
        "--assume-kafka-defaults",
        "--format",
        "json",
        d,
    )
    assert r.exit_code == 1 and r.stderr == ""  # segments would go
    summary = of_kind(r.stdout, "partition")[1]
    assert (
        summary["rolled"]
        and summary["configs"]["retention.ms"]["origin"] == "Kafka default (assumed)"
    )


# ------------------------------------------------------------------ damaged __cluster_metadata
def damaged_examples(tmp_path: Path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    log = d / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[500] ^= 0xFF  # inside the records of the batch at byte 434: its CRC fails
    log.write_bytes(bytes(data))
    return d


def test_damaged_metadata_warns_once_and_refuses_its_topics(tmp_path):
    d = damaged_examples(tmp_path)
    before = sha256_tree(d)
    props = tmp_path / "server.properties"  # a broker config does not state the topics' own configs
    props.write_text("log.retention.hours=168\n")
    r = invoke("retain", "--now", "1900000000000", "--server-properties", props, d)
    assert r.exit_code == 7, r.output
    err = r.stderr.splitlines()
    warnings = [x for x in err if x.startswith("kafkalog: warning: ")]
    assert (
        len(warnings) == 1
        and "__cluster_metadata-0/00000000000000000000.log: byte 434: Record is corrupt"
        in warnings[0]
    )
    compacted = [x for x in err if x.startswith("kafkalog: compacted-0: ")]
    assert len(compacted) == 1 and "__cluster_metadata is damaged" in compacted[0]
    assert sha256_tree(d) == before
    # stated, the topic is retained again (and the warning still said once)
    r = invoke(
        "retain",
        "--dry-run",
        "--now",
        "1900000000000",
        "--server-properties",
        props,
        "--topic-config",
        "compacted:cleanup.policy=compact",
        d,
    )
    assert not any(x.startswith("kafkalog: compacted-0") for x in r.stderr.splitlines())
    assert sum(x.startswith("kafkalog: warning: ") for x in r.stderr.splitlines()) == 1


def test_the_warning_travels_in_the_outcome_as_spark_sends_it(tmp_path):
    d = damaged_examples(tmp_path)
    ((log_dir, parts),) = partition_dirs_for([d]).items()
    op = Operation("retain", retain.plan, retain.RetainOptions(now_ms=NOW), ConfigSources())
    out = pickle.loads(pickle.dumps(run_log_dir(op, log_dir, parts, dry_run=True)))
    assert out.warning and "__cluster_metadata" in out.warning
    assert any(line.startswith("compacted-0: ") for line in out.refusals)


# ------------------------------------------------------------------ compact
def test_compact_without_metadata_refuses_unless_stated(tmp_path):
    d = restore("keyed-overwrites", "before", tmp_path / "logs")
    before = sha256_tree(d)
    r = invoke(
        "compact",
        "--now",
        KEYED_OVERWRITES_NOW,
        "--topic-config",
        "cmp-none:cleanup.policy=compact",
        "--topic-config",
        "cmp-lz4:cleanup.policy=compact",
        d,
    )
    assert r.exit_code == 7, r.output
    err = r.stderr.splitlines()
    assert [x.split(":")[1].strip() for x in err] == ["cmp-lz4-0", "cmp-none-0"]
    assert (
        "min.cleanable.dirty.ratio, min.compaction.lag.ms, delete.retention.ms are unknown"
        in err[1]
    )
    assert sha256_tree(d) == before
    # --force does not need the dirty ratio
    r = invoke(
        "compact",
        "--dry-run",
        "--force",
        "--now",
        KEYED_OVERWRITES_NOW,
        "--format",
        "json",
        "--topic-config",
        "cmp-none:cleanup.policy=compact",
        "--topic-config",
        "cmp-lz4:cleanup.policy=compact",
        d,
    )
    refused = {
        p["partition"]: [u["name"] for u in p["refused"]]
        for p in log_dir_report(r.stdout)["partitions"]
    }
    assert refused["cmp-none-0"] == ["min.compaction.lag.ms", "delete.retention.ms"]
    # said: the broker ran with Kafka's defaults
    r = invoke(
        "compact",
        "--now",
        KEYED_OVERWRITES_NOW,
        "--assume-kafka-defaults",
        "--format",
        "json",
        "--topic-config",
        "cmp-none:cleanup.policy=compact",
        "--topic-config",
        "cmp-none:segment.bytes=16384",
        "--topic-config",
        "cmp-none:index.interval.bytes=512",
        d,
    )
    assert r.exit_code == 0 and r.stderr == "", r.output
    rep = log_dir_report(r.stdout)
    assert [c["partition"] for c in rep["cleaned"]] == ["cmp-none-0"]
    assert rep["partitions"][0]["configs"]["delete.retention.ms"]["assumed"]
    assert records_of(d / "cmp-none-0") == records_of(
        FIXTURES / "compact-keyed-overwrites" / "after" / "cmp-none-0"
    )


def test_compact_text_plan_shows_the_deciding_configs_and_the_refused(tmp_path):
    d = restore("keyed-overwrites", "before", tmp_path / "logs")
    r = invoke(
        "compact",
        "--dry-run",
        "--now",
        KEYED_OVERWRITES_NOW,
        "--config",
        "delete.retention.ms=86400000",
        "--config",
        "min.compaction.lag.ms=0",
        "--config",
        "min.cleanable.dirty.ratio=0.01",
        "--topic-config",
        "cmp-none:cleanup.policy=compact",
        d,
    )
    assert r.exit_code == 7
    out = r.stdout.splitlines()
    assert out[0].endswith(
        "1 of 1 compacted partition(s) to clean, 1 refused (a deciding config is unknown)"
    )
    i = next(i for i, x in enumerate(out) if x.startswith("  clean cmp-none-0: "))
    assert out[i + 1] == (
        "        configs: cleanup.policy=compact from --topic-config; min.cleanable.dirty.ratio=0.01 "
        "from --config; min.compaction.lag.ms=0 from --config; delete.retention.ms=86400000 from --config"
    )
    assert any(x.startswith("  refuse cmp-lz4-0: cleanup.policy is unknown") for x in out)


# ------------------------------------------------------------------ checked overrides, exit codes
def test_an_unknown_topic_in_topic_config_is_a_usage_error(tmp_path):
    d = copy_case("size", tmp_path)
    before = sha256_tree(d)
    for cmd in ("retain", "compact"):
        r = invoke(cmd, "--now", NOW, "--topic-config", "ret-sise:retention.ms=5", d)
        assert r.exit_code == 2, r.output
        assert (
            "topic 'ret-sise' has no partition in the log dirs given (did you mean ret-size?)"
            in r.stderr
        )
    assert sha256_tree(d) == before


def test_refusal_wins_over_a_locked_log_dir_and_loses_to_corrupt_input(tmp_path, held_lock):
    locked = make_log_dir(tmp_path / "a" / "logs", {"t-0": [[OLD], [NEW]]})
    free = make_log_dir(tmp_path / "b" / "logs", {"t-0": [[OLD], [NEW]]})
    held_lock(locked)
    r = invoke("retain", "--now", NOW, "--dry-run", locked, free)  # a dry run takes no lock
    assert r.exit_code == 7
    r = invoke("retain", "--now", NOW, locked, free)
    assert (
        r.exit_code == 7
        and "skipped" in r.stderr
        and "t-0: cleanup.policy, retention.ms are unknown" in r.stderr
    )
    (free / "t-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")
    bad = make_log_dir(tmp_path / "c" / "logs", {"t-0": [[OLD], [NEW]]})
    (bad / "replication-offset-checkpoint").write_text("0\n1\nt 0 x12\n")
    r = invoke("retain", "--now", NOW, locked, free, bad)
    assert r.exit_code == 3


# ------------------------------------------------------------------ one high-watermark rule
def test_the_broker_loads_a_missing_high_watermark_as_the_log_start_offset():
    assert high_watermark_at_load(None, 5) == 5
    assert high_watermark_at_load(3, 5, 10) == 5
    assert high_watermark_at_load(12, 5, 10) == 10
    assert high_watermark_at_load(7, 5, 10) == 7


def test_retain_and_compact_agree_without_a_replication_offset_checkpoint(tmp_path):
    d = restore("keyed-overwrites", "before", tmp_path / "logs")
    (d / names.REPLICATION_CHECKPOINT).unlink()
    cfg = (
        "cleanup.policy=compact,delete",
        "retention.ms=1",
        "retention.bytes=-1",
        "min.cleanable.dirty.ratio=0.01",
        "min.compaction.lag.ms=0",
        "delete.retention.ms=86400000",
    )
    configs = ConfigSources(config_pairs=cfg).for_log_dirs({d: [d / "cmp-none-0"]})
    opts = compact.CompactOptions(now_ms=int(KEYED_OVERWRITES_NOW), resolver=configs.resolver(d))
    cp = compact.plan(d, [d / "cmp-none-0"], opts)
    (dec,) = cp.decisions
    assert dec.log.high_watermark == dec.log.log_start_offset == 0 and not dec.selected
    assert any(names.REPLICATION_CHECKPOINT in f.message for f in cp.notes.findings)
    rp = retain.plan(
        d,
        [d / "cmp-none-0"],
        retain.RetainOptions(now_ms=int(KEYED_OVERWRITES_NOW) + DAY, resolver=configs.resolver(d)),
    )
    assert rp.partitions["cmp-none-0"]["segments_deleted"] == 0 and rp.empty
