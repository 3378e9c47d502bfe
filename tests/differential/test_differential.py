"""kafkalog against a real Kafka broker (runs only when KAFKA_HOME names one; see broker.py).

A few seeded cases per run; `python -m tests.differential recover --cases 200` runs many more."""

import os

import pytest

from tests.differential import broker

pytestmark = pytest.mark.skipif(
    not broker.available(), reason="KAFKA_HOME does not name a Kafka distribution"
)

SEEDS = [int(s) for s in os.environ.get("KAFKALOG_DIFF_SEEDS", "11,12,13").split(",")]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    from tests.differential.generate import generate

    return generate(tmp_path_factory.mktemp("generated"), seed=SEEDS[0])


@pytest.mark.parametrize("seed", SEEDS)
def test_recover_matches_the_broker_and_the_broker_loads_it(generated, seed, tmp_path):
    from tests.differential.cases import RECOVERED, recover_batch
    from tests.helpers.paths import EXAMPLES

    base = [EXAMPLES, generated.clean, generated.live][seed % 3]
    b = recover_batch(seed, base, tmp_path / "batch")
    assert b["kafkalog_rc"] in RECOVERED, b["kafkalog_stderr"]
    differing = {
        n: c for n, c in b["cases"].items() if c["differences"] and "beyond_kafka" not in c
    }
    assert differing == {} and b["other"] == {}, (differing, b["other"])
    # recover_batch load-checks a run that exits 0; one that names bit rot it leaves as the
    # broker keeps it (exit 1) is compared above, not served (a consumer would meet the rot)
    assert b.get("load_check", []) == [], b["load_check"]
    assert "load_check" in b or b["kafkalog_rc"] == 1, b["kafkalog_rc"]


def test_roll_closes_segments_as_the_broker_does(generated, tmp_path):
    from tests.differential.cases import roll_case
    from tests.differential.generate import TOPICS, leo

    for name, before, after in (
        ("live", generated.live, generated.rolled),
        ("clean", generated.clean, generated.rolled_again),
    ):
        r = roll_case(
            name, before, after, {f"{n}-0": leo(before, f"{n}-0") for n in TOPICS}, tmp_path
        )
        assert r["kafkalog_rc"] == 0, r["kafkalog_stderr"]
        differing = {tp: v for tp, v in r["partitions"].items() if v.get("differences")}
        assert differing == {}, (name, differing)


def _corpus_cases():
    from tests.differential.cases import CORPUS, corpus_cases

    return [str(c.relative_to(CORPUS)) for c in corpus_cases()] if CORPUS.is_dir() else []


@pytest.mark.parametrize("case", _corpus_cases())
def test_every_command_on_a_corpus_case_gives_a_dir_the_broker_loads(case, tmp_path):
    from tests.differential.cases import CORPUS, command_chain, step_ok

    r = command_chain(CORPUS / case, tmp_path / "chain")
    for cmd, res in r["commands"].items():
        steps = [res[s] for s in res if isinstance(res[s], dict)]
        assert all(step_ok(v) for v in steps), (cmd, res)
        if any(v["rc"] is not None for v in steps):
            assert res["load_check"] == [], (cmd, res["load_check"])
