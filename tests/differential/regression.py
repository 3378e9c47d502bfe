"""Regression cases from a deletions.py campaign work dir, small enough to commit, for tests that
run without a broker (tests/ops/test_deletions_broker.py):

    python -m tests.differential.regression WORK DEST

WORK holds base-<seed>/ and the campaign dirs (retain-N, delete-records-N, compact-N) that
`python -m tests.differential retain|delete-records|compact --work WORK` left. DEST gets:
- before/: of the base log dir, t-bytes-0, t-time-0 and r-compact-0 with what kafkalog reads
  beside them (meta.properties, bootstrap.checkpoint, __cluster_metadata-0, __remote_log_metadata-0,
  the root checkpoints); server.properties: the broker run's;
- <kind>-<round>/: the broker's files after that round, of the partition the case names: FILES.txt
  lists them, those not byte for byte as in before/ are there (with the root checkpoints); for the
  tiered roll, uploaded/: the segment the broker uploaded;
- PARAMS.json: each case's command line (configs, offsets, clock) and what it compares.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.differential.tiered import remote_dir

PARTITIONS = ("t-bytes-0", "t-time-0", "r-compact-0")
BESIDE = (
    "meta.properties",
    "bootstrap.checkpoint",
    "log-start-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
ROOT_CHECKPOINTS = (
    "log-start-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
# (campaign dir, partition, what the case is)
CASES = (
    ("retain", 0, "t-bytes-0", "tiered: local.retention.bytes deletes uploaded segments only"),
    (
        "retain",
        1,
        "t-bytes-0",
        "tiered: local.retention.ms rolls the active segment (3.7+), which stays "
        "until the broker uploads it",
    ),
    (
        "delete-records",
        0,
        "t-time-0",
        "tiered: DeleteRecords to an offset only the remote tier holds",
    ),
    ("delete-records", 1, "t-bytes-0", "tiered: DeleteRecords below the local log start offset"),
    (
        "compact",
        0,
        "r-compact-0",
        "the cleaner's first round, tombstones stamped with its delete horizon",
    ),
)


def _copy_partition(src: Path, dst: Path, unless_as_in: Path | None = None) -> None:
    """`src`'s files into `dst`; with `unless_as_in`, only those that differ from its, and FILES.txt."""
    dst.mkdir(parents=True)
    names = sorted(f.name for f in src.iterdir() if f.is_file() and f.name != ".lock")
    for n in names:
        same = (
            unless_as_in is not None
            and (unless_as_in / n).is_file()
            and (unless_as_in / n).read_bytes() == (src / n).read_bytes()
        )
        if not same:
            shutil.copyfile(src / n, dst / n)
    if unless_as_in is not None:
        (dst / "FILES.txt").write_text("".join(n + "\n" for n in names))


def save(work: Path, dest: Path) -> dict:
    base = next(work.glob("base-*/data"))
    dest.mkdir(parents=True)
    before = dest / "before"
    before.mkdir()
    for name in (*PARTITIONS, "__cluster_metadata-0", "__remote_log_metadata-0"):
        _copy_partition(base / name, before / name)
    for name in BESIDE:
        if (base / name).exists():
            shutil.copyfile(base / name, before / name)
    params = {"source": f"tests/differential deletions.py campaigns, {work}", "cases": {}}
    for kind, round_, part, what in CASES:
        runs = sorted(
            (r for r in work.glob(f"{kind}-*") if (r / "case.json").exists()),
            key=lambda p: int(p.name.rsplit("-", 1)[1]),
        )
        run = next(r for r in runs if _round_of(r) == round_)
        record = json.loads((run / "case.json").read_text())
        out = dest / f"{kind}-{round_}"
        _copy_partition(run / "broker-copy" / "data" / part, out / part, before / part)
        for name in ROOT_CHECKPOINTS:
            f = run / "broker-copy" / "data" / name
            if f.exists():
                shutil.copyfile(f, out / name)
        case = {
            "what": what,
            "partition": part,
            "now_ms": record["now_ms"],
            "configs": record["plan"].get("configs", {}),
            "offsets": record["plan"].get("offsets", {}),
        }
        up = remote_dir(run / "broker-copy" / "remote", part)
        kept = {b for b in record["cases"][part].get("remote", {}).get("kafkalog", [])}
        for b in sorted(set(record["cases"][part].get("remote", {}).get("broker", [])) - kept):
            (out / "uploaded").mkdir(exist_ok=True)
            for f in up.glob(f"{b:020d}-*"):
                if f.suffix in (".log", ".index", ".timeindex"):
                    shutil.copyfile(f, out / "uploaded" / f"{b:020d}{f.suffix}")
            case["uploaded"] = b
        params["cases"][f"{kind}-{round_}"] = case
        if not (dest / "server.properties").exists():
            shutil.copyfile(run / "broker" / "server.properties", dest / "server.properties")
    (dest / "PARAMS.json").write_text(json.dumps(params, indent=2) + "\n")
    return params


def _round_of(run: Path) -> int:
    return json.loads((run / "case.json").read_text())["round"]


if __name__ == "__main__":
    print(json.dumps(save(Path(sys.argv[1]), Path(sys.argv[2])), indent=2))
