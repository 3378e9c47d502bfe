"""What the schema tests check on a log dir made from confluent-kafka's serializers (made by
tests/fixtures/schemas/make_logdir.py): dump-log --decode-schemas against the inputs; and
make_logdir itself, loaded from the fixture dir."""

import json

from kafkalog_cli.cli import cli

# the reader of orders-value is its latest version (2): version 1's records read with its default
ORDERS_V2_DEFAULT = {"channel": "web"}


def decoded_records(runner, log_dir, *more: str):
    """(exit code, stderr, {topic: [record objects]}) of dump-log --decode-schemas on the log dir."""
    res = runner.invoke(
        cli, ["dump-log", str(log_dir), "--format", "json", "--decode-schemas", *more]
    )
    out: dict = {}
    for line in res.stdout.splitlines():
        obj = json.loads(line)
        if obj["kind"] == "record":
            out.setdefault(obj["topic"], []).append(obj)
    return res.exit_code, res.stderr, out


def assert_decoded_as_given(decoded, inputs) -> None:
    """Every serialized value decodes to what its serializer was given; the one without a
    schema (an id hard-deleted) and the garbage are kept as bytes, named on stderr; exit 1."""
    code, err, topics = decoded
    assert code == 1, err
    for topic in ("customers", "events", "readings"):
        assert [r["value"] for r in topics[topic]] == inputs[topic], topic
        assert all(r["value_schema"]["subject"] == f"{topic}-value" for r in topics[topic])
    orders = topics["orders"]
    want = [None if i is None else {**ORDERS_V2_DEFAULT, **i} for i in inputs["orders"]]
    assert [r["value"] for r in orders[:-1]] == want[:-1]
    assert [r["value_schema"]["version"] for r in orders[:-1]] == [1, 1, 1, 2, 2, 2, 2]
    assert {r["value_schema"].get("reader_version", 2) for r in orders[:-1]} == {2}
    assert [r["key"] for r in orders[:6]] == [f"order-{i}" for i in range(6)]
    assert "guid" in orders[6]["value_schema"]  # the header framing
    garbage, legacy = orders[-1], topics["legacy"][0]
    assert (
        "error" in garbage["value_schema"]
        and garbage["value"] == "\x00" * 4 + chr(3) + "\ufffd" * 3
    )
    gone = "schema id 10 (legacy-value version 1) was deleted for good (a hard delete)"
    assert legacy["value_schema"] == {"id": 10, "error": gone}
    assert (
        f"orders-0/00000000000000000000.log: offset {garbage['offset']}: value kept as bytes: AVRO payload its "
        "schema (id 3) does not read: " in err
    )
    assert f"legacy-0/00000000000000000000.log: offset 0: value kept as bytes: {gone}\n" in err
    assert err.endswith("kafkalog: 2 keys or values were not decoded and are kept as bytes\n")
    events = topics["events"]
    assert [r["value_schema"]["message_indexes"] for r in events] == [[0], [0], [1], [1]]


def make_logdir():
    """tests/fixtures/schemas/make_logdir.py as a module (its plan(), schemas and PRODUCE script)."""
    import importlib.util

    from tests.helpers.paths import SCHEMAS

    spec = importlib.util.spec_from_file_location("make_logdir", SCHEMAS / "make_logdir.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
