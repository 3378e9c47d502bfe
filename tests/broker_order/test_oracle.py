"""formats.scala_order against the broker's own libraries: ScalaOrderOracle.java builds the maps
Kafka 3.3.1 writes its root checkpoints from with the scala-library and kafka-clients of
KAFKA_HOME/libs on this JVM, for seeded random key sets (names of every length, many with equal
or near hashes), and the orders must be ours. No broker runs: a few seconds.

Runs when KAFKA_HOME is set and a JDK (javac) is on the PATH; skipped otherwise."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from kafkalog_cli.formats.scala_order import (
    CheckpointKind,
    any_ref_map_order,
    broker_order,
    concurrent_hash_map_order,
    hash_map_order,
    topic_partition_hash,
)

KAFKA_HOME = os.environ.get("KAFKA_HOME")
pytestmark = pytest.mark.skipif(
    not (KAFKA_HOME and Path(KAFKA_HOME, "libs").is_dir() and shutil.which("javac")),
    reason="needs KAFKA_HOME (a Kafka distribution: its libs) and a JDK",
)

SOURCE = Path(__file__).with_name("ScalaOrderOracle.java")
ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    "aB",  # "a"/"B", "Aa"/"BB": equal hashes everywhere
    "xy.-_é€\U0001f600",
]  # UTF-16 units beyond ASCII, a surrogate pair


def cases(seed: int, n_cases: int) -> list[tuple[int, list[tuple[str, int]]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n_cases):
        n = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 23, 24, 40, 48, 100, 200, 300])
        alphabet = rng.choice(ALPHABETS)
        topics = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
            for _ in range(rng.randint(1, 8))
        ]
        keys: set[tuple[str, int]] = set()
        if rng.random() < 0.25:
            # up to 32 partitions of one hashCode ("Aa"/"BB" blocks): ConcurrentHashMap bins of 9
            # and more, a table grown by treeifyBin, tree bins, CHAMP collision nodes
            same = ["".join(bits) for bits in itertools.product(["Aa", "BB"], repeat=5)]
            keys.update((t, 0) for t in rng.sample(same, rng.randint(2, min(n + 2, 32))))
        while len(keys) < n:
            keys.add((rng.choice(topics), rng.randint(0, n)))
        order = list(keys)
        rng.shuffle(order)
        existing = rng.randint(0, min(n, 7))
        # the cleaner adds partitions after the file's, sorted (as broker_order assumes)
        out.append((existing, order[:existing] + sorted(order[existing:])))
    return out


def run_oracle(tmp_path: Path, lines: list[str]) -> list[list[tuple[str, int]]]:
    cp = f"{KAFKA_HOME}/libs/*"
    subprocess.run(
        ["javac", "-nowarn", "-d", str(tmp_path), "-cp", cp, str(SOURCE)],
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        ["java", "-cp", f"{cp}{os.pathsep}{tmp_path}", "ScalaOrderOracle"],
        input="".join(lines).encode("utf-8"),
        capture_output=True,
        check=True,
        timeout=300,
    )
    orders = []
    for line in done.stdout.decode("utf-8").splitlines():
        f = line.split("\t")
        orders.append([(f[i], int(f[i + 1])) for i in range(1, len(f) - 1, 2)])
    return orders


def test_our_orders_are_the_scala_librarys(tmp_path):
    all_cases = cases(seed=2024, n_cases=500)
    lines = [f"{e}\t" + "\t".join(f"{t}\t{p}" for t, p in keys) + "\n" for e, keys in all_cases]
    orders = run_oracle(tmp_path, lines)
    assert len(orders) == 4 * len(all_cases)
    h = topic_partition_hash
    for i, (existing, keys) in enumerate(all_cases):
        rp, ls, hw, ck = orders[4 * i : 4 * i + 4]
        assert hash_map_order(keys, known_size=True) == rp, keys
        assert hash_map_order(keys, known_size=False) == ls, keys
        assert any_ref_map_order(concurrent_hash_map_order(keys, h), h) == hw, keys
        assert broker_order(CheckpointKind.CLEANER_OFFSET, keys, existing=keys[:existing]) == ck, (
            existing,
            keys,
        )
        # the writer's entry point, with the insertion order as the file's
        assert broker_order(CheckpointKind.RECOVERY_POINT, keys, existing=keys) == rp
        assert broker_order(CheckpointKind.LOG_START_OFFSET, keys, existing=keys) == ls
