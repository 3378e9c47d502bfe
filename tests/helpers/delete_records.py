"""delete-records runs on synthetic log dirs of three segments of three records each (built by
tests/helpers/retention.py)."""

from __future__ import annotations

from kafkalog_cli.config import ConfigResolver
from kafkalog_cli.ops import delete_records as dr
from kafkalog_cli.ops.plan import apply
from kafkalog_cli.storage.fsops import FsOps
from kafkalog_cli.storage.logdir import partition_dirs_for
from kafkalog_cli.storage.quarantine_writer import Quarantine
from tests.helpers.retention import NEW, make_log_dir

SEGMENTS = [[NEW] * 3, [NEW] * 3, [NEW] * 3]


def logdir(tmp_path, hw=None, log_start=None, partitions=("t-0",)):
    return make_log_dir(
        tmp_path / "logs", {p: SEGMENTS for p in partitions}, hw=hw, log_start=log_start
    )


def plan_for(d, resolver=None, **opts):
    ((log_dir, parts),) = partition_dirs_for([d]).items()
    return dr.plan(
        log_dir, parts, dr.DeleteRecordsOptions(resolver=resolver or ConfigResolver(), **opts)
    )


def run(d, quarantine=None, fault_after=None, **opts):
    return apply(
        plan_for(d, **opts),
        FsOps(d, Quarantine(quarantine, "delete-records"), fault_after=fault_after),
    )
