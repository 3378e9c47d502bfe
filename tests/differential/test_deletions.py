"""retain, delete-records and compact against a real broker, tiered and plain topics (runs when
KAFKA_HOME is a 3.6+ Kafka with LocalTieredStorage beside it, as tools/kafka-broker lays out
3.9.0-rc3; skipped otherwise, and pytest's header says which Kafka ran). deletions.py: one base
the broker writes, each campaign one broker run on a copy and kafkalog on another, compared byte
for byte, then a broker on kafkalog's result serving every offset from its log start offset, the
remote tier included, as dump-log lists it."""

from __future__ import annotations

import pytest

from tests.differential import broker
from tests.differential.deletions import ROUNDS

pytestmark = pytest.mark.skipif(
    not (broker.available() and broker.tiered_supported()),
    reason="KAFKA_HOME is not a 3.6+ Kafka with LocalTieredStorage (rsm/)",
)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    from tests.differential.deletions import generate_base

    return generate_base(tmp_path_factory.mktemp("deletions"), seed=7)


@pytest.mark.parametrize("kind, round_", [(k, r) for k, n in ROUNDS.items() for r in range(n)])
def test_kafkalog_deletes_what_the_broker_deletes_and_the_broker_serves_the_rest(
    base, tmp_path, kind, round_
):
    from tests.differential.deletions import run_campaign, unexplained

    r = run_campaign(kind, base, tmp_path / kind, round_=round_)
    assert unexplained(r) == {}, r
    assert r["load_check"] == [], r["load_check"]
    # a tiered partition served from below its first local segment: through the remote tier
    assert any(
        s["start"] < s["local_start"] for n, s in r["served"].items() if n.startswith("t-")
    ), r["served"]


def test_roll_and_recover_keep_every_offset_a_tiered_partition_serves(base, tmp_path):
    from tests.differential.deletions import commands_keep_the_log

    r = commands_keep_the_log(base, tmp_path)
    unclean = r.pop("recover-unclean")  # the broker's recovery of every segment against recover's
    assert unclean["rc"] == 0 and unclean["differences"] == {} and unclean["broker_errors"] == [], (
        unclean
    )
    assert {"t-bytes-0", "t-time-0"} <= set(unclean["broker_recovered"]), unclean
    for cmd, res in r.items():
        assert res["rc"] == 0 and res["load_check"] == [], (cmd, res)
        assert res["served"]["t-time-0"]["start"] == 0 < res["served"]["t-time-0"]["local_start"], (
            cmd,
            res,
        )
