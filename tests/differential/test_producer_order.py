"""A real broker's producer snapshot order where two producer ids share a bucket (producer_order.py)."""

import pytest

from tests.differential import broker
from tests.differential.producer_order import producer_order_case
from tests.helpers.kafka_dist import kafka_dist

pytestmark = pytest.mark.skipif(
    not broker.available(), reason="needs KAFKA_HOME (a Kafka distribution) and KAFKA_PY"
)


def test_recover_writes_the_snapshot_the_broker_writes_with_colliding_producer_ids(tmp_path):
    r = producer_order_case(tmp_path)
    assert r["same_bucket"], r
    low, high = sorted(r["appended"])
    java = kafka_dist(broker.KAFKA_HOME).at_least(3, 5)
    assert r["broker"] == ([high, low] if java else [low, high]), r
    assert r["identical"], r
