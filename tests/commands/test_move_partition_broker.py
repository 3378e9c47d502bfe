"""Acceptance with a real Kafka 3.3.1 KRaft broker with two log dirs (a controller node and a
broker node, each its own process, on 127.0.0.1): a compacted partition moved offline by
move-partition is loaded from its new dir, served (every record, then new ones appended there),
the log cleaner cleans it again from the moved cleaner checkpoint, and the broker deletes the
source's -delete dir itself. Skipped without KAFKA_HOME and KAFKA_PY."""

from __future__ import annotations

import time
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.storage.checkpoints import read_offsets
from tests.helpers.kraft_cluster import Cluster, kafka_version, needs_cluster

pytestmark = needs_cluster
KEYS = [f"k{i}" for i in range(10)]


def wait(check, timeout=90, what=""):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(1)


def cleaned_to(log_dir: Path) -> int:
    return read_offsets(log_dir / "cleaner-offset-checkpoint").get(("c", 0), -1)


def test_moved_compacted_partition_is_served_and_cleaned_from_its_new_dir(tmp_path):
    print("Kafka", kafka_version())
    c = Cluster(
        tmp_path / "cluster",
        brokers=1,
        log_dirs_per_broker=2,
        broker_config={
            "log.cleaner.backoff.ms": "500",
            "file.delete.delay.ms": "1000",
            "log.segment.delete.delay.ms": "1000",
        },
    )
    b = c.brokers[1]
    try:
        c.start(c.controller)
        c.start(b)
        c.client(
            1,
            {
                "op": "create",
                "topics": [
                    {
                        "name": "c",
                        "assignment": {"0": [1]},
                        "configs": {
                            "cleanup.policy": "compact",
                            "segment.bytes": "1024",
                            "min.cleanable.dirty.ratio": "0.01",
                        },
                    }
                ],
            },
        )
        c.wait_for(1, "c", 0, lambda s: s["leader"] == 1)
        first = {k: f"{k}-first" for k in KEYS}
        for round_ in range(20):
            c.client(
                1,
                {
                    "op": "produce",
                    "topic": "c",
                    "partition": 0,
                    "keys": KEYS,
                    "values": {k: f"{k}-{round_}" for k in KEYS} if round_ else first,
                },
            )
        src = next(d for d in b.log_dirs if (d / "c-0").is_dir())
        dst = next(d for d in b.log_dirs if d != src)
        wait(lambda: cleaned_to(src) > 0, what="the cleaner never cleaned c-0 before the move")
        c.stop(b)
        before = cleaned_to(src)
        # the move, offline
        r = CliRunner().invoke(
            cli, ["move-partition", str(src), str(dst), "--topic", "c", "--partition", "0"]
        )
        assert r.exit_code == 0, r.output
        assert (
            (dst / "c-0").is_dir() and list(src.glob("c-0.*-delete")) and cleaned_to(dst) == before
        )
        assert ("c", 0) not in read_offsets(src / "cleaner-offset-checkpoint")
        # the broker on the moved partition
        c.start(b)
        assert f"Completed load of Log(dir={dst}/c-0," in b.log()
        c.wait_for(1, "c", 0, lambda s: s["leader"] == 1)
        got = c.client(1, {"op": "consume", "topic": "c", "partition": 0})
        latest = {k: v for _, k, v in got["records"]}
        assert latest == {k: f"{k}-19" for k in KEYS}
        end = got["end"]
        new = c.client(
            1,
            {
                "op": "produce",
                "topic": "c",
                "partition": 0,
                "keys": KEYS * 5,
                "values": {k: f"{k}-after" for k in KEYS},
            },
        )["offsets"]
        assert new[0] == end
        wait(lambda: cleaned_to(dst) > before, what="the cleaner did not clean c-0 in its new dir")
        wait(
            lambda: not list(src.glob("c-0.*-delete")),
            what="the broker did not delete the source's -delete dir",
        )
        got = c.client(1, {"op": "consume", "topic": "c", "partition": 0})
        assert {k: v for _, k, v in got["records"]} == {k: f"{k}-after" for k in KEYS}
        assert "ERROR" not in b.log() or "c-0" not in "".join(
            x for x in b.log().splitlines() if " ERROR " in x
        )
        c.stop(b)
        assert not (src / "c-0").exists() and (dst / "c-0").is_dir()
    finally:
        c.stop_all()


def test_what_the_broker_does_with_a_killed_move(tmp_path):
    """The two states a kill can leave that the man page describes: a whole future dir beside the
    live source (the broker finishes the move itself: its alter-log-dirs thread), and two live
    copies (killed between the two renames: the broker refuses to start, "Duplicate log
    directories"; running the command again finishes)."""
    from kafkalog_cli.ops import move_partition as ops
    from kafkalog_cli.storage.fsops import FsOps, InjectedFault
    from kafkalog_cli.storage.names import TopicPartition
    from kafkalog_cli.storage.quarantine_writer import Quarantine

    print("Kafka", kafka_version())
    c = Cluster(
        tmp_path / "cluster",
        brokers=1,
        log_dirs_per_broker=2,
        broker_config={"file.delete.delay.ms": "1000", "log.segment.delete.delay.ms": "1000"},
    )
    b = c.brokers[1]
    try:
        c.start(c.controller)
        c.start(b)
        c.client(
            1,
            {
                "op": "create",
                "topics": [
                    {"name": "c", "assignment": {"0": [1]}, "configs": {"segment.bytes": "1024"}}
                ],
            },
        )
        c.wait_for(1, "c", 0, lambda s: s["leader"] == 1)
        c.client(1, {"op": "produce", "topic": "c", "partition": 0, "keys": KEYS * 5})
        c.stop(b)
        src = next(d for d in b.log_dirs if (d / "c-0").is_dir())
        dst = next(d for d in b.log_dirs if d != src)

        def staged_in(n, description):
            if description.startswith("rename") and description.endswith("-future"):
                raise InjectedFault(description)

        fsops = FsOps(dst, Quarantine(None, "move-partition"), on_step=staged_in)
        try:
            ops.apply(ops.plan(src, dst, TopicPartition("c", 0)), fsops)
        except InjectedFault:
            pass
        assert (src / "c-0").is_dir() and len(list(dst.glob("c-0.*-future"))) == 1
        c.start(b)
        wait(
            lambda: (
                "The current replica is successfully replaced with the future replica for c-0"
                in b.log()
            ),
            what="the broker did not finish the move",
        )
        wait(lambda: not list(src.glob("c-0*")), what="the broker did not delete the source")
        got = c.client(1, {"op": "consume", "topic": "c", "partition": 0})
        assert [k for _, k, _ in got["records"]] == KEYS * 5
        c.stop(b)
        assert (dst / "c-0").is_dir()
        # the broker's own move leaves the partition's high watermark entry in the source's
        # replication-offset-checkpoint; running the command again removes it
        assert ("c", 0) in read_offsets(src / "replication-offset-checkpoint")
        r = CliRunner().invoke(
            cli, ["move-partition", str(src), str(dst), "--topic", "c", "--partition", "0"]
        )
        assert r.exit_code == 0 and "c-0 was in" in r.output and "already" in r.output, r.output
        assert ("c", 0) not in read_offsets(src / "replication-offset-checkpoint")
        # two live copies: refused by the broker, finished by running the command again
        import shutil

        shutil.copytree(dst / "c-0", src / "c-0", copy_function=shutil.copy2)
        try:
            c.start(b)
        except (
            RuntimeError
        ):  # its message holds the log's tail, cut: the broker's own log has the line
            assert "Duplicate log directories for c-0" in b.log()
        else:
            raise AssertionError("the broker started on two live copies")
        r = CliRunner().invoke(
            cli, ["move-partition", str(src), str(dst), "--topic", "c", "--partition", "0"]
        )
        assert r.exit_code == 0 and "finish: both copies live" in r.output, r.output
        c.start(b)
        got = c.client(1, {"op": "consume", "topic": "c", "partition": 0})
        assert [k for _, k, _ in got["records"]] == KEYS * 5
        c.stop(b)
    finally:
        c.stop_all()
