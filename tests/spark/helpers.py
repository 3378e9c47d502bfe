"""Compare DataFrame rows with what `kafkalog dump-log --format json` prints; the archive the
remote-storage tests copy to their S3 server."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import FIXTURES


def segment_files(root: Path) -> list[Path]:
    """Every segment (.log) and KRaft snapshot (.checkpoint) under `root`, goldens left out."""
    out = []
    for p in sorted(root.rglob("*")):
        if "goldens" in p.parts or not p.is_file():
            continue
        if (
            p.name.endswith(".log")
            and p.name[:20].isdigit()
            or p.name.endswith(".checkpoint")
            and p.name[:20].isdigit()
        ):
            out.append(p.resolve())
    return out


def dump_json(path: Path, deep: bool) -> tuple[int, list[dict], str]:
    """(exit code, JSON objects, stderr) of `kafkalog dump-log --format json [--deep-iteration]`."""
    args = ["dump-log", "--format", "json", "--payload-encoding", "hex", str(path)]
    if deep:
        args.insert(3, "--deep-iteration")
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    objs = [
        json.loads(line)
        for line in r.stdout_bytes.decode("utf-8", "surrogatepass").splitlines()
        if line
    ]
    return r.exit_code, objs, r.stderr


def expected_record(obj: dict) -> dict:
    """A JSON record line as a DataFrame row holds it: payloads as bytes, every column present."""
    unhex = lambda v: None if v is None else bytes.fromhex(v)  # noqa: E731
    out = {k: v for k, v in obj.items() if k not in ("kind", "topic", "partition", "file")}
    for k in ("key", "value"):
        out[k] = unhex(out[k])
    out["headers"] = [{"key": h["key"], "value": unhex(h["value"])} for h in out["headers"]]
    for k in ("crc", "is_valid", "control"):
        out.setdefault(k, None)
    return out


WHERE = ("topic", "partition", "segment", "log_dir", "broker_id")  # where a row comes from


def millis(t) -> int:
    """An Arrow/Spark timestamp (a datetime, aware or naive UTC) as epoch milliseconds."""
    from datetime import datetime, timezone

    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    d = t - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (d.days * 86_400 + d.seconds) * 1000 + d.microseconds // 1000


def actual_record(row: dict) -> dict:
    out = {k: v for k, v in row.items() if k not in WHERE}
    if "timestamp" in out:
        out["timestamp"] = millis(out["timestamp"])
    if out.get("control") is not None:
        out["control"] = {k: v for k, v in out["control"].items() if v is not None}
    return out


def expected_batch(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("kind", "file")}


def actual_batch(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in WHERE}


def rows(df) -> list[dict]:
    return df.toArrow().to_pylist()


BASIC = FIXTURES / "corpus" / "broker" / "formats" / "basic" / "before"

KAFKALOG = Path(sys.executable).with_name("kafkalog")

BUCKET = "kafka-backups"


def archive_of(root: Path) -> Path:
    """archive/broker-0 (three partitions, node.id=0) and archive/broker-1 (a copy of one of
    them, broker.id=1): one topic-partition in two log dirs."""
    a = root / "archive"
    for name, broker, parts in (
        ("broker-0", "node.id=0", ("multi-segment-0", "txn-0", "codec-zstd-0")),
        ("broker-1", "broker.id=1", ("multi-segment-0",)),
    ):
        for p in parts:
            shutil.copytree(BASIC / p, a / name / p)
        (a / name / "meta.properties").write_text(f"version=1\n{broker}\ncluster.id=x\n")
    return a
