"""The differential cases: seeded recover batches, the roll of a live and of a cleanly shut down
dir, and every command on every corpus broker case followed by a broker loading the result.

Each returns plain dicts (JSON-ready) so the CLI can print them and pytest can assert on them."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

from kafkalog_cli.storage.names import offset_from_name, segment_file
from tests.corpus import corpus_path
from tests.differential.broker import run_broker
from tests.differential.compare import ORDER_ONLY, compare_log_dirs
from tests.differential.damage import damage_log_dir, segments
from tests.differential.loadcheck import broker_loads, kafkalog, now_ms, partition_dirs

CORPUS = corpus_path() / "broker"


# recover's exits after a run that changed what it plans: 0, or 1 when it names bit rot it leaves
# as the broker keeps it (kafkalog-recover(1)); its files are compared with the broker's all the same
RECOVERED = (0, 1)


def copy_dir(src: Path, dst: Path) -> Path:
    subprocess.run(["cp", "-a", "--sparse=always", str(src), str(dst)], check=True)
    for f in (dst / ".lock",):
        f.unlink(missing_ok=True)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    return dst


# ------------------------------------------------------------------ recover
def recover_batch(
    seed: int,
    base: Path,
    work: Path,
    load_check: bool = True,
    repair: bool = False,
    remote: Path | None = None,
    kinds: list[str] | None = None,
) -> dict:
    """One broker start for many cases: every partition of a copy of `base` damaged on its own
    (seeded), the broker recovers one copy, `kafkalog recover` another; compared file by file.
    By default recover does what the broker does: every difference counts. With `repair`
    (`recover --repair`), a case it repairs beyond Kafka is "beyond_kafka" instead. With `remote`
    (tiered.py: `base` is a tiered dir's data, `remote` its remote tier), every broker runs on a
    copy of both with tiered storage on; __remote_log_metadata is not damaged (the remote log
    manager's own topic), and the load check serves the tiered partitions through the remote tier.
    `kinds`: the damage kinds drawn from (damage.DAMAGES; all by default)."""
    rng = random.Random(seed)
    work.mkdir(parents=True)
    damaged = copy_dir(base, work / "damaged")
    if not (base / ".kafka_cleanshutdown").exists():
        rng.random()  # same draws, but a live dir stays without its marker
    desc = damage_log_dir(
        rng,
        damaged,
        [
            p
            for p in partition_dirs(damaged)
            if remote is None or not p.name.startswith("__remote_log_metadata-")
        ],
        kinds,
    )
    if not (base / ".kafka_cleanshutdown").exists():
        desc["clean_shutdown"] = False
        (damaged / ".kafka_cleanshutdown").unlink(missing_ok=True)
    ours = copy_dir(damaged, work / "kafkalog")
    r = kafkalog(
        "recover",
        *(["--repair"] if repair else []),
        "--quarantine",
        work / "q",
        "--now",
        now_ms(),
        ours,
    )
    theirs, run, refused = _broker_recovers(damaged, work, remote)
    appended = _appended_after_load(theirs, run)
    diffs = (
        compare_log_dirs(theirs, ours, skip=set(refused) | set(appended))
        if r.rc in RECOVERED
        else {}
    )
    out = {
        "seed": seed,
        "base": str(base),
        "clean_shutdown": desc["clean_shutdown"],
        "kafkalog_rc": r.rc,
        "kafkalog_stderr": r.stderr[-2000:],
        "broker_errors": run.errors[:5],
        "cases": {},
        "other": {},
    }
    for line in diffs.pop("", []):  # a root checkpoint's line goes with its partition's case
        if line.startswith(ORDER_ONLY):
            out["checkpoint_order_only"] = out.get("checkpoint_order_only", []) + [line]
            continue
        tp = line.split(":", 1)[0]
        diffs.setdefault(tp if tp in desc["partitions"] else "", []).append(line)
    for name, what in desc["partitions"].items():
        out["cases"][name] = {"damage": what, "differences": diffs.pop(name, [])}
        if name in refused:
            out["cases"][name]["broker_refused"] = refused[name]
        if name in appended:
            out["cases"][name]["broker_appended"] = appended[name]
        repairs = [
            ln.strip()
            for ln in r.stdout.splitlines()
            if f"! {name}:" in ln and "recovering it" in ln
        ]
        diffs_here = out["cases"][name]["differences"]
        if (
            any(".log.swap" in w and ".index.swap" not in w for w in what)
            and diffs_here
            and all("index" in d for d in diffs_here)
        ):
            repairs.append(SWAP_WITHOUT_INDEX)
        if repair and repairs and diffs_here:
            # kafkalog checks what the broker does not (storage/index_checks.py:
            # index_rebuild_reason; recover.py: load_failure)
            out["cases"][name]["beyond_kafka"] = repairs
    out["other"] = diffs  # undamaged partitions that differ, root checkpoints
    if load_check and r.rc == 0:
        # kafkalog, like the broker, trusts .kafka_cleanshutdown and the recovery point: damage
        # below them stays (compared above), and a consumer would meet it. The broker is given
        # what a user who suspects damage runs: --all
        target = copy_dir(damaged, work / "kafkalog-all")
        ra = kafkalog("recover", "--all", "--quarantine", work / "q-all", "--now", now_ms(), target)
        if ra.rc != 0:
            out["load_check"] = [f"recover --all: rc {ra.rc}: {ra.stderr[-500:]}"]
            return out
        if remote is not None:
            from tests.differential.deletions import load_check_tiered
            from tests.differential.tiered import TieredDir

            (target / ".kafka_cleanshutdown").touch()
            problems, served = load_check_tiered(
                TieredDir(target, remote),
                work / "load",
                [
                    p.name
                    for p in partition_dirs(target)
                    if not p.name.startswith("__remote_log_metadata-")
                ],
            )
            out["load_check"] = problems
            out["load_checked_records"] = sum(v["served"] for v in served.values())
            return out
        lc = broker_loads(target, work / "load")
        out["load_check"] = lc.problems
        out["load_checked_records"] = lc.records
    return out


SWAP_WITHOUT_INDEX = (
    "a .log.swap without its .index.swap: Kafka 3.3.1's LogLoader opens the .swap "
    "segment, readNextOffset creates an empty 10 MiB .index.swap, renamed with the rest: "
    "the segment keeps a zero-filled index (and an empty time index). kafkalog recovers it"
)


def _appended_after_load(theirs: Path, run) -> dict[str, str]:
    """Partitions the broker appended to once loaded (not compared: that is not recovery)."""
    from tests.differential.generate import leo

    out = {}
    for name, loaded in run.loaded_log_end_offsets.items():
        if (theirs / name).is_dir() and name != "__cluster_metadata-0":
            final = leo(theirs, name)
            if final > loaded:
                out[name] = (
                    f"the broker appended offsets [{loaded}, {final}) after loading it (a transaction "
                    f"coordinator completing a prepared transaction): not compared"
                )
    return out


def _broker_recovers(damaged: Path, work: Path, remote: Path | None = None):
    """The broker's recovery of a copy of `damaged` (and of `remote`, its remote tier, if any). A
    partition whose damage stops the broker (a fatal error while loading logs) is left out of its
    copy, and the broker started again: its case is reported as refused by the broker, with the error."""
    from tests.differential.broker import BrokerDidNotStart, tiered_config

    refused: dict[str, str] = {}
    for attempt in range(6):
        theirs = work / f"broker-{attempt}"
        copy_dir(damaged, theirs)
        config = None
        if remote is not None:
            from tests.differential.tiered import METADATA_PARTITIONS

            shutil.copytree(remote, work / f"broker-{attempt}-remote", symlinks=True)
            config = tiered_config(work / f"broker-{attempt}-remote", METADATA_PARTITIONS)
        for name in refused:
            shutil.rmtree(theirs / name)
        try:
            run, _ = run_broker(theirs, work / f"broker-run-{attempt}", config=config)
            return theirs, run, refused
        except BrokerDidNotStart as e:
            part = e.partition(theirs)
            if part is None or part in refused:
                raise
            refused[part] = e.reason[e.reason.find(" ERROR ") + 1 :][:400]
    raise RuntimeError(f"the broker refused more than {len(refused)} partitions of {damaged}")


# ------------------------------------------------------------------ roll
ROLL_SKIPPED = {"g-compact-0": "the cleaner rewrote it in the same session (timing, not the roll)"}


def _entries(f: Path):
    from kafkalog_cli.formats.indexes import parse_offset_index, parse_time_index

    base = offset_from_name(f.name)
    raw = f.read_bytes()
    if f.name.endswith(".timeindex"):
        return [(e.timestamp, e.offset) for e in parse_time_index(raw, base)]
    if f.name.endswith(".index"):
        return [(e.offset, e.position) for e in parse_offset_index(raw, base)]
    return None


def describe_file_difference(a: Path, b: Path) -> str:
    """The broker's file `a` against kafkalog's `b`: sizes, and for indexes the entries that differ."""
    if not a.exists() or not b.exists():
        return f"{a.name}: only {'kafkalog' if b.exists() else 'the broker'} has it"
    ea, eb = _entries(a), _entries(b)
    out = f"{a.name}: broker {a.stat().st_size} bytes, kafkalog {b.stat().st_size} bytes"
    if ea is not None and eb is not None:
        i = next((i for i, (x, y) in enumerate(zip(ea, eb)) if x != y), min(len(ea), len(eb)))
        out += f"; entries from #{i}: broker {ea[i : i + 3]}, kafkalog {eb[i : i + 3]}"
    return out


def _active_base(part: Path) -> int:
    return segments(part)[-1]


def roll_case(
    name: str, before: Path, broker_after: Path, leos: dict[str, int], work: Path
) -> dict:
    """`kafkalog roll` on a copy of `before` vs the broker's roll of the same segments: the closed
    segment's .log/.index/.timeindex/.txnindex and the producer snapshot at the new base."""
    ours = copy_dir(before, work / f"roll-{name}")
    r = kafkalog(
        "roll",
        "--now",
        now_ms(),
        "--quarantine",
        work / f"q-roll-{name}",
        *(ours / tp for tp in sorted(leos)),
    )
    out = {
        "case": f"roll-{name}",
        "kafkalog_rc": r.rc,
        "kafkalog_stderr": r.stderr[-1000:],
        "partitions": {},
    }
    for tp, leo in sorted(leos.items()):
        if tp in ROLL_SKIPPED:
            out["partitions"][tp] = {"skipped": ROLL_SKIPPED[tp]}
            continue
        base = _active_base(before / tp)
        diffs = []
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            a, b = (
                segment_file(broker_after / tp, base, suffix),
                segment_file(ours / tp, base, suffix),
            )
            if a.exists() != b.exists() or (a.exists() and a.read_bytes() != b.read_bytes()):
                diffs.append(describe_file_difference(a, b))
        a, b = (
            segment_file(broker_after / tp, leo, ".snapshot"),
            segment_file(ours / tp, leo, ".snapshot"),
        )
        if a.exists() != b.exists() or (a.exists() and a.read_bytes() != b.read_bytes()):
            diffs.append(f"{a.name} differs (broker {a.exists()}, kafkalog {b.exists()})")
        out["partitions"][tp] = {"closed_segment": base, "new_base": leo, "differences": diffs}
    return out


# ------------------------------------------------------------------ every command, then a broker
def corpus_cases() -> list[Path]:
    return sorted(p.parent for p in CORPUS.glob("*/*/before") if p.parent.name != "_base")


def restore_corpus_copy(case: Path, dst: Path) -> Path:
    """before/ of a corpus case as the broker had it: preallocated index lengths and file mtimes."""
    d = copy_dir(case / "before", dst)
    pre = case / "PREALLOCATED.txt"
    if pre.exists():
        for line in pre.read_text().splitlines():
            if line and not line.startswith("#"):
                length, rel = line.split()
                os.truncate(d / Path(rel).relative_to("before"), int(length))
    manifest = case / "before.MANIFEST.txt"
    if manifest.exists():
        for line in manifest.read_text().splitlines():
            f = line.split()
            if len(f) == 4 and f[0] != "d":
                p = d / f[3]
                if p.exists():
                    s, ns = f[1].split(".")
                    t = int(s) * 10**9 + int(ns)
                    os.utime(p, ns=(t, t))
    return d


def command_args(case: Path, command: str) -> list[str]:
    """What a user states for the case: the clock the broker acted at (PARAMS.json) or now
    (delete-records takes no clock: its offsets are stated)."""
    if command == "delete-records":
        return []
    import json

    params = case / "PARAMS.json"
    now = now_ms()
    if params.exists():
        ps = json.loads(params.read_text()).get("partitions", {})
        nows = [p["now_ms"] for p in ps.values() if "now_ms" in p]
        if nows:
            now = max(nows)
    args = ["--now", str(now)]
    if command in ("retain", "compact"):
        args.append("--assume-kafka-defaults")
    return args


COMMANDS = ("recover", "roll", "retain", "compact", "delete-records")


def midway_offsets(d: Path, out: Path) -> Path | None:
    """delete-records' --offset-json for the log dir `d`: every user partition's log start raised
    halfway to its high watermark (as `kafkalog get-offsets` reads them); None when none can."""
    import json

    ends = {}
    for time in ("earliest", "latest"):
        r = kafkalog("get-offsets", "--time", time, "--format", "json", d)
        for line in r.stdout.splitlines():
            o = json.loads(line)
            if o.get("offset") is not None and not o["topic"].startswith("__"):
                ends.setdefault((o["topic"], o["partition"]), {})[time] = o["offset"]
    parts = [
        {"topic": t, "partition": p, "offset": (e["earliest"] + e["latest"]) // 2}
        for (t, p), e in sorted(ends.items())
        if e.get("latest", 0) > e.get("earliest", 0) + 1
    ]
    if not parts:
        return None
    out.write_text(json.dumps({"version": 1, "partitions": parts}))
    return out


def step_ok(res: dict) -> bool:
    """A step of the chain left a result the broker must load: done (0), deletion refused on a
    guess (7), not run (None: nothing to do), or delete-records refusing compacted partitions
    only (POLICY_VIOLATION, as the broker would) and doing the others."""
    lines = res["stderr"].strip().splitlines()
    return res["rc"] in (None, 0, 7) or (
        res["rc"] == 2 and bool(lines) and all("POLICY_VIOLATION" in ln for ln in lines)
    )


def command_chain(case: Path, work: Path, commands=COMMANDS) -> dict:
    """Each command on its own copy of the case's before/ (recovered first when it has no clean
    shutdown marker, as a user must), then a broker on the result."""
    work.mkdir(parents=True)
    src = restore_corpus_copy(case, work / "before")
    out = {"case": str(case.relative_to(CORPUS)), "commands": {}}
    for cmd in commands:
        d = copy_dir(src, work / cmd)
        steps = [cmd]
        if cmd != "recover" and not (d / ".kafka_cleanshutdown").exists():
            steps = ["recover", cmd]
        res = {}
        for step in steps:
            extra = []
            if step == "delete-records":
                offsets = midway_offsets(d, work / "offsets.json")
                if offsets is None:
                    res[step] = {"rc": None, "stderr": "no partition to delete records of"}
                    continue
                extra = ["--offset-json", offsets]
            r = kafkalog(
                step, *command_args(case, step), *extra, "--quarantine", work / f"q-{cmd}-{step}", d
            )
            res[step] = {"rc": r.rc, "stderr": r.stderr[-600:]}
        ok = all(step_ok(v) for v in res.values()) and any(
            v["rc"] is not None for v in res.values()
        )
        if ok:
            lc = broker_loads(d, work / f"load-{cmd}")
            res["load_check"] = lc.problems
            res["records"] = lc.records
        out["commands"][cmd] = res
    return out
