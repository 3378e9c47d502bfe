"""`kafkalog transactions` as an operator sees it: Kafka's tables, JSON Lines, find-hanging's exit
code, --topic/--partition and bad input."""

import json
import shutil

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.formats.records import build_v2_batch
from tests.helpers.paths import EXAMPLES
from tests.helpers.transactions import MIN, NOW, log_dir, txn_state_record


def invoke(*args):
    return CliRunner().invoke(cli, ["transactions", *map(str, args)])


def test_the_tables(tmp_path):
    r = invoke(log_dir(tmp_path), "--now", NOW)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        "Partition\tLogStartOffset\tLastStableOffset\tHighWatermark\tLogEndOffset\tProducers\tOpenTransactions\t",
        "t-0      \t0             \t3               \t3            \t3           \t2        \t0               \t",
        "t-1      \t0             \t0               \t2            \t2           \t2        \t2               \t",
        "",
        "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t",
        "t    \t1        \t12        \t0            \t-1              \t0          \t"
        f"{NOW - 60 * MIN}\t60           \t",
        f"t    \t1        \t13        \t0            \t-1              \t1          \t{NOW - 5 * MIN}\t5            \t",
    ]


def test_producers_table(tmp_path):
    r = invoke(log_dir(tmp_path), "--now", NOW, "--producers", "--topic", "t", "--partition", "0")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[-3].split() == [
        "Topic",
        "Partition",
        "ProducerId",
        "ProducerEpoch",
        "LatestCoordinatorEpoch",
        "LastSequence",
        "LastTimestamp",
        "CurrentTransactionStartOffset",
    ]
    assert lines[-2].split() == [
        "t",
        "0",
        "10",
        "0",
        "3",
        "0",
        str(NOW - 30 * MIN),
        "None",
    ]  # the marker's
    assert lines[-1].split() == ["t", "0", "11", "0", "-1", "0", str(NOW - MIN), "None"]


def test_json_one_object_per_partition(tmp_path):
    d = log_dir(tmp_path)
    r = invoke(d, "--now", NOW, "--format", "json")
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert [(x["kind"], x["partition"], x["last_stable_offset"]) for x in rows] == [
        ("partition", "t-0", 3),
        ("partition", "t-1", 0),
    ]
    assert rows[1]["log_dir"] == str(d)
    assert [t["start_offset"] for t in rows[1]["open_transactions"]] == [0, 1]


def test_find_hanging_exits_1_with_kafkas_table(tmp_path):
    r = invoke(log_dir(tmp_path), "--now", NOW, "--find-hanging", "--max-age", "10m")
    assert r.exit_code == 1
    assert r.stdout.splitlines() == [
        "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t",
        "t    \t1        \t12        \t0            \t-1              \t0          \t"
        f"{NOW - 60 * MIN}\t60           \t",
    ]


def test_find_hanging_with_the_coordinators_log(tmp_path):
    # producer 13 is app's Ongoing transaction on t-1: the coordinator will end it, so it does not hang
    r = invoke(
        log_dir(tmp_path, with_state=True),
        "--now",
        NOW,
        "--find-hanging",
        "--max-age",
        "1m",
        "--format",
        "json",
        "--topic",
        "t",
    )
    assert r.exit_code == 1
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert [(x["producer_id"], x["transactional_id"], x["reason"]) for x in rows] == [
        (12, None, "no transactional id has this producer id in __transaction_state")
    ]


def test_nothing_hanging_is_exit_0_and_a_bare_header(tmp_path):
    r = invoke(log_dir(tmp_path), "--now", NOW, "--find-hanging")  # max-age 15m by default
    assert r.exit_code == 1
    r = invoke(log_dir(tmp_path / "b"), "--now", NOW, "--find-hanging", "--max-age", "2h")
    assert r.exit_code == 0
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("Topic\t")


def test_the_example_log_dir_has_nothing_open(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    r = invoke(d, "--find-hanging", "--max-age", "0s", "--format", "json")
    assert (r.exit_code, r.stdout) == (0, "")


def test_bad_input(tmp_path):
    (tmp_path / "empty").mkdir()
    r = invoke(tmp_path / "empty")
    assert r.exit_code == 4 and r.stderr.count("\n") == 1
    r = invoke(tmp_path / "logs", "--max-age", "soon")
    assert r.exit_code == 2 and "is not a duration" in r.stderr
    d = log_dir(tmp_path, with_state=True)
    state = d / "__transaction_state-0" / "00000000000000000000.log"
    state.write_bytes(build_v2_batch([txn_state_record("x", 1, 99, [])], 0))  # no such state
    r = invoke(d, "--find-hanging")
    assert r.exit_code == 3
    assert r.stderr == (
        f"kafkalog: {state}: byte 0: java.lang.IllegalStateException: Unknown transaction state "
        f"id 99 from the transaction status message\n"
    )


# issue 26, point 10: producers that describe shows and transactions does not are accounted for
def test_expired_producers_are_named_with_the_clock_and_the_expiration(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    # reproduced first: 0 producers beside describe's 1, and not a word why
    r = invoke(d, "--topic", "txn", "--now", "1795420395800")  # two days after its last write
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1].split()[5] == "0"
    (note,) = [x for x in r.stderr.splitlines() if "txn-0" in x]
    assert note.startswith(
        "kafkalog: note: txn-0: 1 producer(s) in the files not shown (producer id 1): expired at "
        "the clock used, 2026-11-23T07:53:15.800Z (--now)"
    )
    assert "producer.id.expiration.ms=86400000 from Kafka default" in note
    # at a time within a day of its last write it is shown, and no note
    r = invoke(d, "--topic", "txn", "--now", "1795247595800")
    assert r.stdout.splitlines()[1].split()[5] == "1" and "not shown" not in r.stderr
    # a broker's own expiration, from --server-properties
    props = tmp_path / "server.properties"
    props.write_text("producer.id.expiration.ms=2000000000\n")
    r = invoke(d, "--topic", "txn", "--now", "1795420395800", "--server-properties", props)
    assert r.stdout.splitlines()[1].split()[5] == "1" and "not shown" not in r.stderr
    r = invoke(d, "--topic", "txn", "--now", "1795420395800", "--format", "json")
    assert json.loads(r.stdout)["expired_producer_ids"] == [1]


def test_find_hanging_says_what_to_do_next(tmp_path):
    r = invoke(log_dir(tmp_path), "--now", NOW, "--find-hanging", "--max-age", "10m")
    assert r.exit_code == 1
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("kafkalog: next:")]
    assert (
        "`kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic t --partition 1 --start-offset 0` "
        "(brokers 3.0 and later; before 3.0: `kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic t "
        "--partition 1 --producer-id 12 --producer-epoch 0 --coordinator-epoch -1`)"
    ) in line
    r = invoke(
        log_dir(tmp_path / "j"),
        "--now",
        NOW,
        "--find-hanging",
        "--max-age",
        "10m",
        "--format",
        "json",
    )
    (row,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert row["abort_command"].endswith("abort --topic t --partition 1 --start-offset 0")
