"""retain, delete-records and compact against what a Kafka 3.9.0-rc3 broker did on the same log dir
(no broker needed). Fixture: tests/fixtures/broker/deletions-3.9, saved by
tests/differential/regression.py from a deletions.py campaign: `before/` a dir the broker wrote
with tiered topics (LocalTieredStorage; its __remote_log_metadata-0 tells what was uploaded) and a
compacted one; per case the broker's files after it acted (AlterConfigs then its retention checks,
DeleteRecords, its cleaner) and PARAMS.json (configs, offsets, the broker's clock). Both broker runs
and kafkalog were given the
run's server.properties."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.differential.compare import epochs_match
from tests.helpers.paths import BROKER

FIX = BROKER / "deletions-3.9"
PARAMS = json.loads((FIX / "PARAMS.json").read_text())["cases"] if FIX.is_dir() else {}


def _entry(checkpoint: Path, partition: str) -> str | None:
    topic, p = partition.rsplit("-", 1)
    if not checkpoint.exists():
        return None
    return next(
        (
            ln.split()[2]
            for ln in checkpoint.read_text().splitlines()[2:]
            if ln.split()[:2] == [topic, p]
        ),
        None,
    )


def _files(part: Path) -> dict[str, bytes]:
    return {
        f.name: f.read_bytes() for f in sorted(part.iterdir()) if f.name != "partition.metadata"
    }


def _broker_files(name: str, tp: str) -> dict[str, bytes]:
    """The broker's files after case `name`: FILES.txt names them; those kept as they were are in before/."""
    after, before = FIX / name / tp, FIX / "before" / tp
    return {
        n: ((after / n) if (after / n).exists() else (before / n)).read_bytes()
        for n in (after / "FILES.txt").read_text().split()
        if n != "partition.metadata"
    }


def _run(case: dict, d: Path, tmp_path: Path, kind: str):
    part = d / case["partition"]
    common = [
        "--now",
        str(case["now_ms"]),
        "--server-properties",
        str(FIX / "server.properties"),
        "--quarantine",
        str(tmp_path / "q"),
    ]
    if kind == "retain":
        args = [
            "retain",
            *common,
            *[
                a
                for t, c in case["configs"].items()
                for k, v in c.items()
                for a in ("--topic-config", f"{t}:{k}={v}")
                if f"{t}-0" == case["partition"]
            ],
        ]
    elif kind == "delete-records":
        args = ["delete-records", "--before", str(case["offsets"][case["partition"]]), *common[2:]]
    else:
        args = ["compact", *common]
    return CliRunner().invoke(cli, [*args, str(part)])


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_kafkalog_leaves_the_partition_as_the_broker_did(name, tmp_path):
    case = PARAMS[name]
    kind = name.rsplit("-", 1)[0]
    d = tmp_path / "logs"
    shutil.copytree(FIX / "before", d)
    r = _run(case, d, tmp_path, kind)
    assert r.exit_code == 0, r.output
    tp = case["partition"]
    got, want = _files(d / tp), _broker_files(name, tp)
    assert epochs_match(want.pop("leader-epoch-checkpoint"), got.pop("leader-epoch-checkpoint"))
    if "uploaded" in case:
        # the segment both rolled: the broker uploaded it, then deleted it locally; kafkalog keeps
        # it (it cannot upload), byte for byte what the broker uploaded
        base = f"{case['uploaded']:020d}"
        for suffix in (".log", ".index", ".timeindex"):
            assert (
                got.pop(base + suffix) == (FIX / name / "uploaded" / (base + suffix)).read_bytes()
            ), suffix
        got.pop(base + ".snapshot")
    assert sorted(got) == sorted(want)
    assert got == want
    for checkpoint in ("log-start-offset-checkpoint", "cleaner-offset-checkpoint"):
        assert _entry(d / checkpoint, tp) == _entry(FIX / name / checkpoint, tp), checkpoint


def test_without_the_upload_state_retain_refuses_and_deletes_nothing(tmp_path):
    # the common case on a real cluster: __remote_log_metadata's partition is on another broker
    case = PARAMS["retain-0"]
    d = tmp_path / "logs"
    shutil.copytree(FIX / "before", d)
    shutil.rmtree(d / "__remote_log_metadata-0")
    before = _files(d / "t-bytes-0")
    r = _run(case, d, tmp_path, "retain")
    assert r.exit_code == 7, r.output
    assert "upload state" in r.output and "--remote-log-metadata" in r.output
    assert _files(d / "t-bytes-0") == before


@pytest.mark.parametrize("remote_storage, kept", [("true", True), ("false", False)])
def test_recover_keeps_the_snapshot_at_a_tiered_logs_first_local_segment(
    tmp_path, remote_storage, kept
):
    # A 3.9.0-rc3 broker recovering every segment of this dir (no clean shutdown, no recovery point)
    # left t-bytes-0 and t-time-0 as they are but for its leader election (tests/differential
    # tiered-roll-recover, 0 differences): LogLoader takes a remote-enabled log's start offset from
    # the checkpoint, 0 here, so truncateAndReload keeps the snapshot at the first local segment. A
    # plain log starts at that segment, and the snapshot at its base goes.
    d = tmp_path / "logs"
    shutil.copytree(FIX / "before", d)
    (d / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    before = {p: _files(d / p) for p in ("t-bytes-0", "t-time-0")}
    r = CliRunner().invoke(
        cli,
        [
            "recover",
            "--server-properties",
            str(FIX / "server.properties"),
            "--no-quarantine",
            "--topic-config",
            f"t-bytes:remote.storage.enable={remote_storage}",
            "--topic-config",
            f"t-time:remote.storage.enable={remote_storage}",
            str(d),
        ],
    )
    assert r.exit_code == 0, r.output
    for p, first in (("t-bytes-0", 136), ("t-time-0", 589)):
        assert (d / p / f"{first:020d}.snapshot").exists() == kept, r.output
        if kept:
            assert _files(d / p) == before[p]
