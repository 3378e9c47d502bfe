"""Tiered storage against a real broker (runs when KAFKA_HOME is a 3.6+ broker with Kafka's
LocalTieredStorage beside it, as tools/kafka-broker/build-all-3.9.sh lays out 3.9.0-rc3; skipped
otherwise). One generated tiered dir (tiered.py) per module:
- a broker on a copy serves every partition from its log start offset, the uploaded part from the
  remote tier, exactly as kafkalog dump-log lists the uploaded segments and then the local ones;
- the broker's own kafka-dump-log and kafkalog dump-log --kafka-version <the broker's> print the
  same for every .log the broker wrote, the uploaded segments, __remote_log_metadata and
  __cluster_metadata included (3.9's __consumer_offsets text: tests/render/test_dump_log_39.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.differential import broker

pytestmark = pytest.mark.skipif(
    not (broker.available() and broker.tiered_supported()),
    reason="KAFKA_HOME is not a 3.6+ Kafka with LocalTieredStorage (rsm/)",
)

PARTITIONS = ["t-time-0", "t-bytes-0", "t-plain-0"]


@pytest.fixture(scope="module")
def tiered(tmp_path_factory):
    from tests.differential.tiered import generate_tiered

    return generate_tiered(tmp_path_factory.mktemp("tiered"), seed=7)


def test_the_generated_dir_is_tiered_as_the_broker_tiers(tiered):
    from tests.differential.tiered import local_bases, remote_bases

    t_time, t_bytes = local_bases(tiered.data / "t-time-0"), local_bases(tiered.data / "t-bytes-0")
    assert len(t_time) == 1 and t_time[0] > 0 and remote_bases(tiered.remote, "t-time-0")
    # local.retention.bytes: the oldest deleted locally, the closed local segments all uploaded
    assert t_bytes[0] > 0 and set(t_bytes[:-1]) <= set(remote_bases(tiered.remote, "t-bytes-0"))
    assert (
        remote_bases(tiered.remote, "t-plain-0") == []
        and local_bases(tiered.data / "t-plain-0")[0] == 0
    )
    # 3.8+ (KAFKA-16146): the log start offset checkpoint lists every remote-enabled partition
    lso = (tiered.data / "log-start-offset-checkpoint").read_text().split("\n")[2:]
    assert {"t-time 0 0", "t-bytes 0 0"} <= set(lso)


def test_a_broker_serves_from_the_log_start_through_the_remote_tier_as_dump_log_lists_it(
    tiered, tmp_path
):
    from tests.differential.tiered import serves_from_log_start

    r = serves_from_log_start(tiered, tmp_path, PARTITIONS)
    assert r["errors"] == [] and r["recovered"] == [], r
    for name, p in r["partitions"].items():
        assert p["start"] == 0 and p["same"] and p["served"] == p["end"] > 0, (name, p)


def _text_version() -> str:
    """dump-log --kafka-version for the broker's own kafka-dump-log (kafka_dist: its major.minor,
    3.9 for the 4.0.0-SNAPSHOT trunk build)."""
    dist = broker.kafka_dist(broker.KAFKA_HOME)
    assert dist is not None, "a Kafka distribution (pytestmark)"
    return dist.dump_log_text_version


@pytest.mark.parametrize(
    "group", ["topics", "remote-segments", "remote-log-metadata", "cluster-metadata"]
)
def test_kafka_dump_log_and_kafkalog_print_the_same(tiered, tmp_path, group):
    import shutil

    from tests.differential.loadcheck import kafkalog
    from tests.differential.tiered import remote_dir

    data = tiered.data
    if group == "topics":
        files, flags = sorted(f for p in PARTITIONS for f in (data / p).glob("*.log")), []
    elif group == "remote-log-metadata":
        files, flags = (
            sorted(data.glob("__remote_log_metadata-*/*.log")),
            ["--remote-log-metadata-decoder"],
        )
    elif group == "cluster-metadata":
        files, flags = (
            sorted(data.glob("__cluster_metadata-0/*.log")),
            ["--cluster-metadata-decoder"],
        )
    else:  # uploaded segments, as copies named <base>.log (both tools take the base from the name)
        files, flags = [], []
        for p in PARTITIONS:
            d = remote_dir(tiered.remote, p)
            for f in sorted(d.glob("*.log")) if d else []:
                dst = tmp_path / p / f.name[:-4] / f"{f.name[:20]}.log"
                dst.parent.mkdir(parents=True)
                shutil.copyfile(f, dst)
                files.append(dst)
    assert files
    args = ["--print-data-log", *flags, "--files", ",".join(map(str, files))]
    theirs = subprocess.run(
        [f"{broker.KAFKA_HOME}/bin/kafka-dump-log.sh", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m"},
        timeout=600,
    )
    ours = kafkalog("dump-log", "--kafka-version", _text_version(), *args)
    assert theirs.returncode == 0 and ours.rc == 0, (theirs.stderr[-1000:], ours.stderr[-1000:])
    assert theirs.stdout.count("Dumping ") == len(files)
    if ours.stdout != theirs.stdout:
        a, b = theirs.stdout.splitlines() + [""], ours.stdout.splitlines() + [""]
        i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)) - 1)
        pytest.fail(
            f"{group}: first differing line #{i}:\n kafka-dump-log: {a[i][:400]}\n kafkalog:       {b[i][:400]}"
        )
