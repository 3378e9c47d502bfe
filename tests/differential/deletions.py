"""retain, delete-records and compact against a real broker (3.6+ with LocalTieredStorage:
broker.tiered_supported()), on tiered and plain topics of one dir the broker wrote.

The base (`generate_base`) is tiered.py's tiered dir (t-time, t-bytes tiered; t-plain plain) with
three more plain topics:
- r-time:    batches 10 minutes apart (generate._batches' 60 ms stretched), so that time retention
             has a boundary minutes away from either clock's edge;
- r-expire:  records an hour old: retention.ms=600000 expires every segment (the broker rolls the
             active one first);
- r-compact: keyed, cleanup.policy=compact, never cleaned (the cleaner is off while it is written).

Each round of a campaign (plan_campaign, ROUNDS) is one broker run on a copy of the base
(`TieredDir.copy`: the log dir and the remote tier) and kafkalog on another copy with the same
broker properties (the run's own server.properties, given with --server-properties) and the same
topic configs (--topic-config where the broker was given them by an AlterConfigs), at the broker's
clock (--now: the middle of the broker's run, every case decided minutes away from it; compact:
the cleaner's own clock, cleaner_clock):
- retain:  the broker applies retention (log.initial.task.delay.ms 2 s, checks every second) after
           AlterConfigs; round 0: r-time retention.ms between two segments, r-expire everything
           expired, t-plain retention.bytes, t-bytes local.retention.bytes (uploaded segments only);
           round 1: t-bytes local.retention.ms (3.7+ rolls the active segment), size retention;
- delete-records: DeleteRecords through kafka-python's admin client, then the broker's retention
           checks delete the segments below the new log start: inside a segment, at a base, into
           remote-only data, below the local log start, to the log end, the high watermark (-1);
           on r-compact both refuse;
- compact: the cleaner (log.cleaner.enable) cleans r-compact.
Then every partition dir and the root checkpoints are compared byte for byte (compare.py, like
with like), the remote tier by its uploaded segments (a difference there counts until `explain`
checks its reason), and a broker started on kafkalog's result serves every partition from
kafkalog's log start offset, the remote tier included, exactly as dump-log lists the uploaded then
the local segments (load_check_tiered). `commands_keep_the_log` does the same load check after
roll and recover --all, and compares the broker's recovery of every segment with recover's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.differential.broker import Broker
from tests.differential.compare import compare_log_dirs
from tests.differential.generate import _batches
from tests.differential.loadcheck import _log_start, kafkalog, partition_dirs
from tests.differential.tiered import (
    RLMM_READY,
    SEGMENT,
    TieredDir,
    generate_tiered,
    local_bases,
    remote_bases,
    serves_from_log_start,
)

PLAIN = {
    "r-time": dict(SEGMENT),
    "r-expire": dict(SEGMENT),
    "r-compact": {
        **SEGMENT,
        "cleanup.policy": "compact",
        "segment.bytes": "4096",
        "min.cleanable.dirty.ratio": "0.01",
    },
}
STRETCH = 10_000  # 60 ms between batches -> 10 minutes
# the broker's retention (and cleaner) as soon as it can, and its deletions done before it stops
ACTING = {
    "log.initial.task.delay.ms": "2000",
    "log.retention.check.interval.ms": "1000",
    "log.cleaner.backoff.ms": "500",
}
USER_TOPICS = ("t-time", "t-bytes", "t-plain", *PLAIN)
SETTLE_S = 10  # retention checks after the last change (every second)


def _extra_jobs(rng) -> list[dict]:
    now = int(time.time() * 1000)
    t0 = now - 26 * 3_600_000
    stretched = _batches(rng, "r-time", 150, t0)
    for b in stretched:
        b["records"] = [[k, v, t0 + (ts - t0) * STRETCH, hs] for k, v, ts, hs in b["records"]]
    return [
        {"topic": "r-time", "producer": {}, "batches": stretched},
        {
            "topic": "r-expire",
            "producer": {},
            "batches": _batches(rng, "r-expire", 120, now - 3_600_000),
        },
        {
            "topic": "r-compact",
            "producer": {},
            "batches": _batches(rng, "r-compact", 300, now - 3_600_000, 15),
        },
    ]


def generate_base(work: Path, seed: int) -> TieredDir:
    return generate_tiered(work, seed, extra_topics=PLAIN, extra_jobs=_extra_jobs)


def _segment_max_timestamps(part: Path) -> list[tuple[int, int]]:
    from kafkalog_cli.storage.partition import Partition

    return [(s.base_offset, s.walk().max_timestamp) for s in Partition.open(part).segments]


def time_boundary(part: Path, now_ms: int) -> tuple[int, int]:
    """retention.ms for `part` that expires about half its closed segments at `now_ms`, the
    boundary midway between two segments' largest timestamps; and how many go."""
    maxes = _segment_max_timestamps(part)
    i = max(0, len(maxes) // 2 - 1)
    mid = (maxes[i][1] + maxes[i + 1][1]) // 2
    return now_ms - mid, i + 1


ROUNDS = {"retain": 2, "delete-records": 2, "compact": 1}  # broker runs per campaign


def plan_campaign(kind: str, base: TieredDir, now_ms: int, round_: int = 0) -> dict:
    """The configs (AlterConfigs / --topic-config) or DeleteRecords offsets of round `round_` of a
    campaign: each topic once per round, each round on fresh copies of the base."""
    from tests.differential.generate import leo

    if kind == "retain" and round_ == 0:
        ms, gone = time_boundary(base.data / "r-time-0", now_ms)
        return {
            "configs": {
                "r-time": {"retention.ms": str(ms)},  # plain, by time, partial
                "r-expire": {"retention.ms": "600000"},  # plain, every segment: a roll
                "t-plain": {"retention.bytes": "40000"},  # plain, by size
                "t-bytes": {"local.retention.bytes": "20000"},
            },  # tiered, local by size
            "expect": {"r-time": f"{gone} segments expired"},
        }
    if kind == "retain":
        return {
            "configs": {
                "t-bytes": {"local.retention.ms": "1000"},  # tiered, local by time: 3.7+ rolls
                "r-time": {"retention.bytes": "50000"},
                "r-expire": {"retention.bytes": "1"},  # all but the active segment
                "t-plain": {"retention.ms": "600000"},
            }
        }
    bases = {
        topic: local_bases(base.data / f"{topic}-0")
        for topic in ("t-plain", "r-time", "t-bytes", "t-time")
    }
    if kind == "delete-records" and round_ == 0:
        rt, tb = bases["r-time"], bases["t-bytes"]
        uploaded = remote_bases(base.remote, "t-time-0")
        return {
            "offsets": {
                "t-plain-0": (bases["t-plain"][1] + bases["t-plain"][2]) // 2,  # inside a segment
                "r-time-0": rt[len(rt) // 2],  # a segment's base
                "t-bytes-0": (tb[1] + tb[2]) // 2 if len(tb) > 2 else tb[0] + 1,  # local, uploaded
                "t-time-0": uploaded[len(uploaded) // 2] + 1 if uploaded else 1,  # remote only
                "r-compact-0": 5,
            }
        }  # refused by both
    if kind == "delete-records":
        return {
            "offsets": {
                "t-plain-0": -1,  # the high watermark
                "r-time-0": 0,  # below the log start: no-op
                "r-expire-0": leo(base.data, "r-expire-0") - 1,  # all but the last record
                "t-bytes-0": max(1, bases["t-bytes"][0] // 2),  # remote only, below local
                "t-time-0": leo(base.data, "t-time-0"),
            }
        }  # everything, remote included
    if kind == "compact":
        return {}
    raise ValueError(kind)


def _topic_config_args(configs: dict[str, dict[str, str]]) -> list[str]:
    return [
        a
        for t, c in configs.items()
        for k, v in c.items()
        for a in ("--topic-config", f"{t}:{k}={v}")
    ]


def broker_acts(kind: str, t: TieredDir, work: Path, plan: dict) -> dict:
    """The broker on `t` (a copy): the campaign's changes, its retention checks (and cleaner), a
    clean stop. Returns its clock (start, end), the run's server.properties and what it answered."""
    cfg = {**t.config(), **ACTING, "log.cleaner.enable": "true" if kind == "compact" else "false"}
    b = Broker(t.data, work / "broker", cfg)
    b.start()
    answered = {}
    t0 = int(time.time() * 1000)
    try:
        b.wait_log(RLMM_READY)
        for topic, c in plan.get("configs", {}).items():
            b.client({"op": "alter", "topic": topic, "configs": c})
        if plan.get("offsets"):
            for tp, off in plan["offsets"].items():
                try:
                    answered[tp] = b.client({"op": "delete_records", "offsets": {tp: off}})[tp]
                except RuntimeError as e:
                    answered[tp] = "refused: " + str(e).strip().splitlines()[-1][:300]
        if kind == "compact":
            _wait_cleaned(t.data, "r-compact-0")
        time.sleep(SETTLE_S)
        b.wait_no_deleted()
    finally:
        run = b.stop()
    t1 = int(time.time() * 1000)
    return {
        "clock": (t0, t1),
        "properties": b.work / "server.properties",
        "answered": answered,
        "errors": run.errors,
        "clean_stop": run.clean_stop,
    }


def _wait_cleaned(data: Path, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    f = data / "cleaner-offset-checkpoint"
    topic, p = name.rsplit("-", 1)
    while time.monotonic() < deadline:
        if f.exists() and any(
            ln.split()[:2] == [topic, p] for ln in f.read_text().splitlines()[2:]
        ):
            return
        time.sleep(0.5)


DELETE_RETENTION_MS = 86_400_000  # r-compact's delete.retention.ms: Kafka's default


def cleaner_clock(part: Path) -> int | None:
    """The clock the broker's cleaner cleaned `part` at: a tombstone batch it wrote holds its delete
    horizon, that clock + delete.retention.ms (Cleaner.cleanInto, KIP-534), in the base timestamp.
    None when no batch has one."""
    from kafkalog_cli.formats.records import iter_batches

    horizons = [
        b.delete_horizon_ms
        for f in sorted(part.glob("*.log"))
        for b in iter_batches(f.read_bytes())
        if b.has_delete_horizon
    ]
    return min(horizons) - DELETE_RETENTION_MS if horizons else None


def kafkalog_acts(kind: str, t: TieredDir, work: Path, plan: dict, acted: dict, now: int) -> dict:
    """kafkalog on `t` (another copy) with the broker run's properties, at `now`."""
    common = ["--server-properties", acted["properties"], "--quarantine", work / f"q-{kind}"]
    out = {}
    if kind == "retain":
        r = kafkalog("retain", "--now", now, *common, *_topic_config_args(plan["configs"]), t.data)
        out["retain"] = r
    elif kind == "delete-records":
        for tp, off in plan["offsets"].items():
            spec = work / f"offsets-{tp}.json"
            topic, p = tp.rsplit("-", 1)
            spec.write_text(
                json.dumps(
                    {
                        "version": 1,
                        "partitions": [{"topic": topic, "partition": int(p), "offset": off}],
                    }
                )
            )
            out[tp] = kafkalog("delete-records", "--offset-json", spec, *common, t.data / tp)
        # the broker's retention checks after DeleteRecords: the segments below the new log start go
        out["retain"] = kafkalog("retain", "--now", now, *common, t.data)
    else:
        out["compact"] = kafkalog("compact", "--now", now, *common, t.data)
    return {
        k: {"rc": r.rc, "stdout": r.stdout[-1500:], "stderr": r.stderr[-1500:]}
        for k, r in out.items()
    }


def run_campaign(
    kind: str, base: TieredDir, work: Path, load_check: bool = True, round_: int = 0
) -> dict:
    work.mkdir(parents=True)
    plan = plan_campaign(kind, base, int(time.time() * 1000), round_)
    theirs = base.copy(work / "broker-copy")
    acted = broker_acts(kind, theirs, work, plan)
    if kind == "compact":
        acted["cleaner_clock"] = cleaner_clock(theirs.data / "r-compact-0")
    ours = base.copy(work / "kafkalog-copy")
    # the broker's clock: the middle of its run, or for compact the cleaner's own clock where its
    # output shows it (the delete horizon it stamped on tombstones is that clock + delete.retention.ms:
    # byte equality needs the same ms). Every other case is decided minutes away from either end.
    now = acted.get("cleaner_clock") or sum(acted["clock"]) // 2
    ran = kafkalog_acts(kind, ours, work, plan, acted, now)
    diffs = compare_log_dirs(theirs.data, ours.data)
    parts = [p.name for p in partition_dirs(ours.data) if p.name.rsplit("-", 1)[0] in USER_TOPICS]
    out = {
        "kind": kind,
        "round": round_,
        "now_ms": now,
        "plan": plan,
        "broker": {k: v for k, v in acted.items() if k != "properties"},
        "kafkalog": ran,
        "cases": {},
        "other": {},
    }
    out["broker"]["clock"] = list(acted["clock"])
    for name in parts:
        case = {"differences": diffs.pop(name, [])}
        if name in ("t-time-0", "t-bytes-0"):
            case["remote"] = {
                "broker": remote_bases(theirs.remote, name),
                "kafkalog": remote_bases(ours.remote, name),
            }
        answered = acted["answered"].get(name)
        if answered is not None:
            case["broker_answered"] = answered
            r = ran.get(name)
            if isinstance(answered, str) and answered.startswith("refused") and r and r["rc"] == 2:
                case["refused_by_both"] = (
                    f"broker: {answered[9:][:160]}; kafkalog: {r['stderr'].strip()[:160]}"
                )
        out["cases"][name] = case
    out["other"] = diffs
    if load_check:
        out["load_check"], out["served"] = load_check_tiered(ours, work / "load", parts)
        for name, case in out["cases"].items():
            if "remote" in case:  # what the broker on kafkalog's result left of the remote tier
                case["remote"]["after_load"] = remote_bases(work / "load" / "copy" / "remote", name)
    explain(out, work)
    (work / "case.json").write_text(json.dumps(out))
    return out


def load_check_tiered(t: TieredDir, work: Path, parts: list[str]) -> tuple[list[str], dict]:
    """A broker on a copy of kafkalog's result `t`: it recovers nothing, logs no ERROR, and serves
    each partition from kafkalog's log start offset (through the remote tier) exactly as dump-log
    lists the uploaded then the local segments. The problems, and what was served."""
    served = serves_from_log_start(t, work, parts)
    problems = [f"broker ERROR: {e[:300]}" for e in served["errors"]] + served["recovered"]
    for name, p in served["partitions"].items():
        start = _log_start(t.data, t.data / name)
        if p["start"] != start:
            problems.append(
                f"{name}: the broker's log start offset {p['start']}, kafkalog's {start}"
            )
        if not p["same"] or p["served"] != p["listed"]:
            problems.append(f"{name}: served {p['served']} records, dump-log lists {p['listed']}")
    return problems, {
        n: {k: p[k] for k in ("start", "end", "served", "local_start")}
        for n, p in served["partitions"].items()
    }


# the commands that change a tiered partition without a broker to compare with: each on its own
# copy, then the load check, which must find every offset from the log start offset still served
KEEPING = {"roll": [], "recover": ["--all"]}


def commands_keep_the_log(base: TieredDir, work: Path) -> dict:
    """roll and recover --all on copies of the base: the broker serves every partition from the log
    start offset it had before (the tiered ones from 0, through the remote tier)."""
    out = {}
    for cmd, flags in KEEPING.items():
        t = base.copy(work / cmd)
        props = Broker(t.data, work / f"props-{cmd}", t.config()).write_config()
        parts = [p.name for p in partition_dirs(t.data) if p.name.rsplit("-", 1)[0] in USER_TOPICS]
        starts = {n: _log_start(t.data, t.data / n) for n in parts}
        r = kafkalog(
            cmd, *flags, "--server-properties", props, "--quarantine", work / f"q-{cmd}", t.data
        )
        problems, served = (
            load_check_tiered(t, work / f"load-{cmd}", parts)
            if r.rc == 0
            else ([f"kafkalog {cmd}: rc {r.rc}: {r.stderr[-400:]}"], {})
        )
        problems += [
            f"{n}: log start offset {s['start']}, before {starts[n]}"
            for n, s in served.items()
            if s["start"] != starts[n]
        ]
        out[cmd] = {"rc": r.rc, "stdout": r.stdout[-800:], "load_check": problems, "served": served}
    out["recover-unclean"] = recover_like_the_broker(base, work / "unclean")
    return out


def _unclean(t: TieredDir) -> TieredDir:
    """`t` as after a crash with nothing flushed: no .kafka_cleanshutdown, no recovery point."""
    (t.data / ".kafka_cleanshutdown").unlink(missing_ok=True)
    (t.data / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    return t


def recover_like_the_broker(base: TieredDir, work: Path) -> dict:
    """The broker's recovery of every segment (an unclean copy of the base) against `kafkalog
    recover` of another: compared byte for byte (compare.py), tiered partitions included."""
    theirs, ours = (
        _unclean(base.copy(work / "broker-copy")),
        _unclean(base.copy(work / "kafkalog-copy")),
    )
    b = Broker(theirs.data, work / "broker", theirs.config())
    b.start()
    try:
        b.wait_log(RLMM_READY)
        b.wait_no_deleted()
    finally:
        run = b.stop()
    r = kafkalog(
        "recover",
        "--server-properties",
        b.work / "server.properties",
        "--quarantine",
        work / "q",
        "--now",
        int(time.time() * 1000),
        ours.data,
    )
    diffs = compare_log_dirs(theirs.data, ours.data) if r.rc == 0 else {}
    recovered = sorted(
        {
            ln.split("partition=")[1].split(",")[0]
            for ln in run.log.splitlines()
            if "Recovering unflushed segment" in ln and "partition=" in ln
        }
    )
    return {
        "rc": r.rc,
        "stdout": r.stdout[-1500:],
        "stderr": r.stderr[-800:],
        "broker_errors": run.errors,
        "broker_recovered": recovered,
        "differences": diffs,
    }


REMOTE_BELOW_LOG_START = (
    "remote tier: the broker's remote log manager deleted the uploaded segments wholly below the new log "
    "start offset (RLMExpirationTask, deleteRemoteLogSegment) and logged it in __remote_log_metadata; "
    "kafkalog never changes the remote tier, and the broker started on kafkalog's result deleted the same "
    "segments itself"
)
ROLLED_THEN_UPLOADED = (
    "remote tier: both rolled the active segment (local retention, 3.7+); the broker then uploaded it and "
    "deleted it locally; kafkalog cannot upload and keeps it, its .log, .index and .timeindex byte for byte "
    "the files the broker uploaded, and the broker started on kafkalog's result uploaded it itself"
)
RLM_RECORDS = (
    "the remote log manager's records of those uploads and deletions (RemoteLogSegmentMetadata "
    "updates) and the recovery point they moved"
)
METADATA_PARTITION = "__remote_log_metadata-0"


def _remote_last_offset(remote: Path, name: str, base: int) -> int:
    from kafkalog_cli.formats.records import iter_batches
    from tests.differential.tiered import remote_dir

    (f,) = remote_dir(remote, name).glob(f"{base:020d}-*.log")
    return max(b.last_offset for b in iter_batches(f.read_bytes()))


def _uploaded_as_kept(work: Path, name: str, case: dict) -> bool:
    """ROLLED_THEN_UPLOADED holds for `case`: what only kafkalog has is one segment's files, the one
    segment only the broker's remote tier has, with the same .log/.index/.timeindex bytes."""
    from tests.differential.tiered import remote_dir

    rem = case["remote"]
    extra = sorted(set(rem["broker"]) - set(rem["kafkalog"]))
    if (
        len(extra) != 1
        or set(rem["kafkalog"]) - set(rem["broker"])
        or extra[0] not in rem.get("after_load", [])
    ):
        return False
    base = f"{extra[0]:020d}"
    if sorted(case["differences"]) != [
        f"only kafkalog has {base}{x}" for x in (".index", ".log", ".snapshot", ".timeindex")
    ]:
        return False
    uploaded = remote_dir(work / "broker-copy" / "remote", name)
    kept = work / "kafkalog-copy" / "data" / name
    for suffix in (".log", ".index", ".timeindex"):
        up = list(uploaded.glob(f"{base}-*{suffix}")) if uploaded else []
        if len(up) != 1 or up[0].read_bytes() != (kept / f"{base}{suffix}").read_bytes():
            return False
    return True


def explain(r: dict, work: Path) -> None:
    """Mark the differences with a verified reason ("explained"); what is left is unexplained."""
    explained_remote = False
    for name, case in r["cases"].items():
        rem = case.get("remote")
        if not rem or rem["broker"] == rem["kafkalog"]:
            continue
        if _uploaded_as_kept(work, name, case):
            case["explained"] = ROLLED_THEN_UPLOADED
            explained_remote = True
            continue
        start = r.get("served", {}).get(name, {}).get("start")
        if (
            case["differences"]
            or start is None
            or not set(rem["broker"]) <= set(rem["kafkalog"])
            or rem.get("after_load") != rem["broker"]
        ):
            continue
        # each uploaded segment only kafkalog kept ends below the log start offset
        if all(
            _remote_last_offset(work / "kafkalog-copy" / "remote", name, b) < start
            for b in rem["kafkalog"]
            if b not in rem["broker"]
        ):
            case["explained"] = REMOTE_BELOW_LOG_START
            explained_remote = True
    if explained_remote:
        other = r["other"]
        if METADATA_PARTITION in other:
            r["other_explained"] = {
                METADATA_PARTITION: [RLM_RECORDS, *other.pop(METADATA_PARTITION)]
            }
        roots = [ln for ln in other.get("", []) if ln.startswith(METADATA_PARTITION + ":")]
        if roots:
            r.setdefault("other_explained", {})[""] = [RLM_RECORDS, *roots]
            other[""] = [ln for ln in other[""] if ln not in roots]
            if not other[""]:
                del other[""]


def unexplained(r: dict) -> dict:
    """Differences without a verified reason: per case (local files or the remote tier) and other."""
    out = {
        n: c["differences"] or c["remote"]
        for n, c in r["cases"].items()
        if "explained" not in c
        and (
            c["differences"]
            or (c.get("remote") and c["remote"]["broker"] != c["remote"]["kafkalog"])
        )
    }
    if r["other"]:
        out["other"] = r["other"]
    return out
