"""`doctor`: will a Kafka broker start on these log dirs, and if not, why and what fixes it.

Each check follows what Kafka 3.3.1 does at start-up, in its order: KafkaRaftServer.initializeLogDirs
(meta.properties of every log dir: present, parseable, one and the same, node.id as configured;
`__cluster_metadata-0` only in the metadata log dir), LogManager's `.lock` and its loadLogs (every
subdirectory must parse as a partition dir; the recovery-point and log-start checkpoints are
read leniently; a partition whose files cannot be read or written, or whose leader-epoch-checkpoint
is damaged, takes its log dir offline; a segment that cannot be recovered stops the broker), then
the first checkpoint writes, which a full disk fails. A log dir taken offline stops the broker when
it is the last one (LogManager: "Shutdown broker because all log dirs ... have failed").

A finding names its severity (error: the broker will not start; warning: it starts, but loses or
drops something, or a log dir goes offline; note: it starts and copes), what the broker does with
it in its own words, and the fix, a kafkalog command where one exists. Reading only: nothing here
changes a file, and a held `.lock` is a finding, not a refusal.
"""
from __future__ import annotations

import enum
import errno
import os
import pwd
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.formats.checkpoints import parse_leader_epoch_checkpoint, parse_properties
from kafkalog_cli.storage import checkpoints as ckpt
from kafkalog_cli.storage import names
from kafkalog_cli.storage.lock import holder_pid
from kafkalog_cli.storage.names import PartitionDirKind, parse_partition_dir_name
from kafkalog_cli.storage.space import FreeSpace

METADATA_DIR = "__cluster_metadata-0"
ROOT_FILES = {names.META_PROPERTIES, names.RECOVERY_POINT_CHECKPOINT, names.LOG_START_OFFSET_CHECKPOINT,
              names.REPLICATION_CHECKPOINT, names.CLEANER_CHECKPOINT, names.LOCK_FILE, names.CLEAN_SHUTDOWN_FILE,
              "bootstrap.checkpoint"}


class Severity(str, enum.Enum):
    ERROR = "error"          # the broker will not start
    WARNING = "warning"      # it starts, but loses or drops something, or takes a log dir offline
    NOTE = "note"            # it starts and copes


@dataclass
class Finding:
    severity: Severity
    check: str               # meta.properties, lock, access, space, checkpoint, segment, directory, file
    path: str
    problem: str
    broker: str              # what the broker does with it, in its words
    fix: str
    offline: bool = False    # the broker takes this log dir offline (an error when it is the last)
    log_dir: str | None = None

    def to_json(self) -> dict:
        return {"severity": self.severity.value, "check": self.check, "path": self.path, "problem": self.problem,
                "broker": self.broker, "fix": self.fix}


@dataclass
class Diagnosis:
    log_dirs: list[str]
    findings: list[Finding] = field(default_factory=list)

    @property
    def starts(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def verdict(self) -> str:
        if not self.starts:
            return "a broker will not start on these log dirs"
        if any(f.severity is Severity.WARNING for f in self.findings):
            return "a broker starts, with warnings"
        return "a broker starts on these log dirs"

    def to_json(self) -> dict:
        return {"log_dirs": self.log_dirs, "starts": self.starts, "verdict": self.verdict,
                "findings": [f.to_json() for f in self.findings]}


@dataclass(frozen=True)
class BrokerConfig:
    """What server.properties says about the log dirs (all None without one)."""

    node_id: int | None = None
    kraft: bool | None = None
    log_dirs: tuple[str, ...] = ()
    metadata_log_dir: str | None = None

    @classmethod
    def read(cls, path: Path | None) -> "BrokerConfig":
        if path is None:
            return cls()
        props = parse_properties(Path(path).read_bytes(), path=str(path))
        node = props.get("node.id", props.get("broker.id"))
        dirs = props.get("log.dirs", props.get("log.dir", ""))
        return cls(int(node) if node and node.strip().lstrip("-").isdigit() else None,
                   bool(props.get("process.roles", "").strip()),
                   tuple(d.strip() for d in dirs.split(",") if d.strip()), props.get("metadata.log.dir"))


def diagnose(log_dirs: list[Path], config: BrokerConfig = BrokerConfig(), user: str | None = None) -> Diagnosis:
    log_dirs = [Path(d) for d in log_dirs]
    diag = Diagnosis([str(d) for d in log_dirs])
    out = diag.findings
    metas = {d: _meta(d) for d in log_dirs}
    kraft = config.kraft if config.kraft is not None else (
        any(m.get("version") == "1" for m in metas.values() if isinstance(m, dict))
        or any((d / METADATA_DIR).is_dir() for d in log_dirs))
    metadata_dir = Path(config.metadata_log_dir) if config.metadata_log_dir else log_dirs[0]
    out += check_meta_properties(metas, config, kraft, metadata_dir)
    for d in log_dirs:
        if not d.is_dir():
            continue
        since_3_7 = isinstance(metas[d], dict) and "directory.id" in metas[d]     # 3.7+ writes a directory.id
        for check in (check_lock, lambda d: check_access(d, user), lambda d: check_directories(d, since_3_7),
                      check_checkpoints, check_segments, check_space):
            for f in check(d):
                f.log_dir = str(d)
                out.append(f)
    out += check_assignments(log_dirs, metadata_dir, config.node_id if config.node_id is not None else _node_id(metas))
    # a log dir taken offline stops the broker when no log dir is left
    offline = {f.log_dir for f in out if f.offline}
    if offline and {str(d) for d in log_dirs} <= offline:
        for f in out:
            if f.offline and f.severity is Severity.WARNING:
                f.severity = Severity.ERROR
                f.broker += ("; with no log dir left: \"Shutdown broker because all log dirs in "
                             f"{', '.join(map(str, log_dirs))} have failed\"")
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTE: 2}
    out.sort(key=lambda f: order[f.severity])
    return diag


# ------------------------------------------------------------------ meta.properties
def _meta(d: Path) -> dict | str | None:
    """The log dir's meta.properties as Properties.load reads it, None when missing, or the
    reason it cannot be read."""
    try:
        raw = (d / names.META_PROPERTIES).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        return e.strerror or str(e)
    return parse_properties(raw, path=str(d / names.META_PROPERTIES))


def check_meta_properties(metas: dict, config: BrokerConfig, kraft: bool, metadata_dir: Path) -> list[Finding]:
    out = []
    format_fix = ("kafka-storage.sh format --ignore-formatted -c server.properties -t {cluster} (the cluster.id "
                  "of the other log dirs; on a log dir that held data, restore its meta.properties instead)")
    clusters = {m.get("cluster.id") for m in metas.values() if isinstance(m, dict) and m.get("cluster.id")}
    cluster = next(iter(clusters)) if len(clusters) == 1 else "CLUSTER_ID"
    seen: dict[Path, dict] = {}
    for d, m in metas.items():
        f = str(d / names.META_PROPERTIES)
        if isinstance(m, str):
            out.append(Finding(Severity.ERROR if d == metadata_dir else Severity.WARNING, "meta.properties", f,
                               f"cannot be read: {m}",
                               f"\"Failed to read {f}\": the log dir is offline; the metadata log dir's stops the "
                               "start (\"Cannot start server since `meta.properties` could not be loaded\")",
                               f"chown/chmod it so the broker's user reads it (ls -l {f})", offline=True))
            continue
        if m is None:
            if kraft:
                out.append(Finding(Severity.ERROR, "meta.properties", f, "missing",
                                   f"KafkaException: No `meta.properties` found in {d} (have you run `kafka-storage.sh` "
                                   "to format the directory?)", format_fix.format(cluster=cluster)))
            else:
                out.append(Finding(Severity.NOTE, "meta.properties", f, "missing",
                                   "a ZooKeeper-mode broker writes it at start", "nothing to do"))
            continue
        problems = []
        version = m.get("version")
        if kraft and version != "1":
            problems.append(f"version is {version!r}, a KRaft broker needs 1 (\"Expected version 1, but got "
                            f"version {version}\")")
        for key in (("cluster.id", "node.id") if kraft else ("broker.id",)):     # ZooKeeper's v0: no cluster.id
            if not m.get(key):
                problems.append(f"no {key} (\"Failed to find required property {key}.\")")
        node = m.get("node.id", m.get("broker.id"))
        if node is not None and not node.strip().lstrip("-").isdigit():
            problems.append(f"node.id {node!r} is not a number (\"Failed to parse node.id property\")")
        if problems:
            out.append(Finding(Severity.ERROR, "meta.properties", f, "damaged: " + "; ".join(problems),
                               "RuntimeException at start: the broker exits",
                               f"restore it from a copy, or write version=1, cluster.id={cluster} and the broker's "
                               f"node.id in it (kafka-storage.sh format -t {cluster} writes a new one)"))
            continue
        seen[d] = m
        if config.node_id is not None and node is not None and node.strip() != str(config.node_id):
            out.append(Finding(Severity.ERROR, "meta.properties", f,
                               f"node.id {node} here, {config.node_id} in server.properties",
                               f"InconsistentNodeIdException: Configured node.id `{config.node_id}` doesn't match "
                               f"stored node.id `{node}' in meta.properties",
                               "point log.dirs at this broker's own log dirs, or set node.id in server.properties "
                               f"to {node} if these are its log dirs"))
    common = lambda m: {k: v for k, v in m.items() if k != "directory.id"}    # noqa: E731
    if len({tuple(sorted(common(m).items())) for m in seen.values()}) > 1:
        listing = "; ".join(f"{d}: cluster.id={m.get('cluster.id')} node.id={m.get('node.id', m.get('broker.id'))}"
                            for d, m in seen.items())
        out.append(Finding(Severity.ERROR, "meta.properties", ", ".join(str(d) for d in seen),
                           f"not the same in every log dir ({listing})",
                           "InconsistentBrokerMetadataException: BrokerMetadata is not consistent across log.dirs. "
                           "This could happen if multiple brokers shared a log directory (log.dirs) or partial data "
                           "was manually copied from another broker",
                           "keep only this broker's log dirs in log.dirs (the others belong to another broker or "
                           "cluster)"))
    ids: dict[str, list[Path]] = {}
    for d, m in seen.items():
        if m.get("directory.id"):
            ids.setdefault(m["directory.id"], []).append(d)
    for dir_id, dirs in ids.items():
        if len(dirs) > 1:
            out.append(Finding(Severity.ERROR, "meta.properties", ", ".join(map(str, dirs)),
                               f"directory.id {dir_id} in more than one log dir (a copied log dir)",
                               "a 3.7+ broker refuses to start: every log dir needs its own directory.id",
                               f"give the copy a new one: remove directory.id from {dirs[-1]}/meta.properties and run "
                               "kafka-storage.sh format --ignore-formatted -c server.properties -t "
                               f"{cluster} (3.7+ writes a fresh directory.id)"))
    for d in metas:
        if d != metadata_dir and (d / METADATA_DIR).is_dir():
            out.append(Finding(Severity.ERROR, "directory", str(d / METADATA_DIR),
                               f"the KRaft metadata log in a log dir that is not the metadata log dir ({metadata_dir})",
                               f"KafkaException: Found unexpected metadata location in data directory `{d / METADATA_DIR}`",
                               f"list {d} first in log.dirs (or set metadata.log.dir={d}), or move {METADATA_DIR} "
                               f"out of {d}"))
    return out


# ------------------------------------------------------------------ .lock, access, space
def check_lock(d: Path) -> list[Finding]:
    path = d / names.LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return []
    try:
        pid = holder_pid(fd)
    finally:
        os.close(fd)
    if not pid:
        return []
    return [Finding(Severity.ERROR, "lock", str(path), f"held by process {pid}",
                    f"\"Failed to acquire lock on file .lock in {d}. A Kafka instance in another process or thread "
                    "is using this directory.\": the broker exits",
                    f"if process {pid} is a broker on this log dir, it is running already (ps -p {pid} -o args); "
                    f"else stop it (kill {pid}) before starting the broker")]


def _can(st: os.stat_result, uid: int, gids: set[int], need: int) -> bool:
    """`need` (a mask of 4 read, 2 write, 1 execute) granted to uid/gids by st's mode."""
    if uid == 0:
        return True
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid == uid:
        bits = (mode >> 6) & 7
    elif st.st_gid in gids:
        bits = (mode >> 3) & 7
    else:
        bits = mode & 7
    return bits & need == need


def check_access(d: Path, user: str | None) -> list[Finding]:
    """Files and dirs the broker's user (`user`, else the log dir's owner) cannot read and write,
    and a read-only mount."""
    out = []
    try:
        vfs = os.statvfs(d)
    except OSError:
        return out
    if vfs.f_flag & os.ST_RDONLY:
        out.append(Finding(Severity.WARNING, "access", str(d), "on a read-only file system",
                           "\"Failed to create lock file\" / AccessDeniedException: the log dir is offline",
                           f"remount it read-write (mount -o remount,rw $(df --output=target {d} | tail -1))",
                           offline=True))
        return out
    st = d.stat()
    try:
        pw = pwd.getpwnam(user) if user else pwd.getpwuid(st.st_uid)
    except KeyError:
        return out
    uid, gids = pw.pw_uid, set(os.getgrouplist(pw.pw_name, pw.pw_gid))
    bad = []
    for root, dirs, files in os.walk(d):
        depth = len(Path(root).relative_to(d).parts)
        for name in dirs + files:
            p = Path(root, name)
            try:
                pst = p.lstat()
            except OSError:
                continue
            need = 7 if stat.S_ISDIR(pst.st_mode) else 6
            if stat.S_ISREG(pst.st_mode) or stat.S_ISDIR(pst.st_mode):
                if not _can(pst, uid, gids, need):
                    bad.append(p)
        if depth >= 1:
            dirs[:] = []
    if not _can(st, uid, gids, 7):
        bad.insert(0, d)
    if bad:
        shown = ", ".join(str(p) for p in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        group = st.st_gid
        out.append(Finding(Severity.WARNING, "access", shown,
                           f"{len(bad)} file(s) or dir(s) the broker's user {pw.pw_name} cannot read and write "
                           "(owned by another user, or its mode)",
                           "AccessDeniedException while loading: the log dir is offline",
                           f"chown -R {pw.pw_name}:{group} {d} && chmod -R u+rwX {d}", offline=True))
    return out


def check_space(d: Path) -> list[Finding]:
    """What the broker writes as it starts: its checkpoints and leader-epoch-checkpoints (each
    a new file written before the old one goes: a block or two at a time) and the metadata log's
    first appends. A 3.3.1 broker with 0 bytes free exits; with 36864 (nine 4 KiB blocks) it
    started (tests/crash/test_full_disk.py)."""
    try:
        free = FreeSpace.of(d)
    except OSError:
        return []
    need = free.blocks_for(1) * 4
    inodes = 4
    fix = (f"free space without writing first: kafkalog retain {d} --no-quarantine --dry-run (then without "
           f"--dry-run), or kafkalog delete-records {d} --topic T --before OFFSET --no-quarantine; "
           f"kafkalog quarantine prune removes old quarantine folders on this disk")
    if free.bytes < need:
        return [Finding(Severity.ERROR, "space", str(d), f"{free.bytes} bytes free, the broker needs {need} or more as "
                        "it starts (checkpoints written anew, the metadata log's appends)",
                        "\"Error while writing to checkpoint file ...: No space left on device\": \"Exiting Kafka due "
                        "to fatal exception\"", fix)]
    if 0 <= free.inodes < inodes:
        return [Finding(Severity.ERROR, "space", str(d), f"{free.inodes} inodes free, the broker creates about {inodes}",
                        "\"No space left on device\" creating a checkpoint's temporary file: the broker exits",
                        fix)]
    if free.full:
        return [Finding(Severity.WARNING, "space", str(d), f"only {free.bytes} bytes free",
                        "it starts, and fails its first appends or segment rolls (the log dir goes offline)", fix)]
    return []


# ------------------------------------------------------------------ what loadLogs reads
def check_directories(d: Path, since_3_7: bool = False) -> list[Finding]:
    """Every subdirectory must parse as a partition dir (LogManager.loadLogs). `-stray` is 3.7+'s:
    a broker before it (the one that wrote a meta.properties without directory.id) exits on it."""
    out = []
    for e in sorted(os.scandir(d), key=lambda e: e.name):
        if e.is_dir(follow_symlinks=True):
            parsed = parse_partition_dir_name(e.name)
            if parsed is None:
                out.append(Finding(Severity.ERROR, "directory", e.path, "not a partition dir",
                                   f"KafkaException: Found directory {e.path}, '{e.name}' is not in the form of "
                                   "topic-partition or topic-partition.uniqueId-delete (or -future): the broker exits",
                                   f"move it out of the log dir (mv {e.path} {d.parent}/), or give log.dirs a "
                                   "subdirectory of this mount"))
            elif parsed.kind is PartitionDirKind.NOT_UTF8:
                out.append(Finding(Severity.NOTE, "directory", e.path, "a partition dir whose name is not UTF-8",
                                   "it loads it under a topic name with U+FFFD, which no topic has ([a-zA-Z0-9._-]): "
                                   "its records are served to nobody", "rename it to the topic's name, or move it out "
                                   "of the log dir"))
            elif parsed.kind is PartitionDirKind.DELETE:
                out.append(Finding(Severity.NOTE, "directory", e.path, "a partition being deleted",
                                   "deleted after file.delete.delay.ms (\"Deleted log for partition\")", "nothing to do"))
            elif parsed.kind is PartitionDirKind.FUTURE and (d / str(parsed.topic_partition)).is_dir():
                current = d / str(parsed.topic_partition)
                out.append(Finding(Severity.WARNING, "directory", e.path,
                                   f"a future replica in the same log dir as the current one ({current})",
                                   f"it promotes the future replica by renaming it over {current.name}: "
                                   f"\"Error while renaming dir for {current.name}\" (DirectoryNotEmptyException): the "
                                   "log dir is offline",
                                   f"keep the current replica and drop the copy being made: mv {e.path} {d.parent}/",
                                   offline=True))
            elif parsed.kind is PartitionDirKind.FUTURE:
                out.append(Finding(Severity.NOTE, "directory", e.path, "a replica being moved to this log dir",
                                   "loaded as the future replica; the move goes on", "nothing to do"))
            elif parsed.kind is PartitionDirKind.STRAY and since_3_7:
                out.append(Finding(Severity.NOTE, "directory", e.path,
                                   "a stray partition (no longer assigned to this broker, 3.7+)",
                                   "left alone by the broker", f"once sure it is not needed: rm -r {e.path}"))
            elif parsed.kind is PartitionDirKind.STRAY:
                out.append(Finding(Severity.ERROR, "directory", e.path,
                                   "a stray partition dir of a 3.7+ broker, in a log dir of an older one",
                                   f"KafkaException: Found directory {e.path}, '{e.name}' is not in the form of "
                                   "topic-partition or topic-partition.uniqueId-delete (if marked for deletion): "
                                   "a broker before 3.7 exits",
                                   f"move it out of the log dir (mv {e.path} {d.parent}/), or run a 3.7+ broker"))
        elif e.is_file() and e.name == names.CLEAN_SHUTDOWN_ASIDE:
            out.append(Finding(Severity.NOTE, "file", e.path, "the clean-shutdown marker, set aside by a kafkalog run "
                               "that was killed", "ignored: without the marker it recovers the log dir on start",
                               f"nothing to do; the next kafkalog run on the log dir (kafkalog recover {d}) puts it "
                               f"back where every partition loads without recovery as with it, else removes it"))
        elif e.is_file() and e.name not in ROOT_FILES and not e.name.endswith(".tmp"):
            out.append(Finding(Severity.NOTE, "file", e.path, "not a file Kafka keeps in a log dir", "ignored",
                               "nothing to do (or move it away)"))
    return out


def check_checkpoints(d: Path) -> list[Finding]:
    """A damaged checkpoint takes its log dir offline: LogDirFailureChannel hears of the read
    error before LogManager resets the value (\"Error while reading checkpoint file\", then
    \"resetting the recovery checkpoint to 0\", then \"Stopping serving logs in dir\"), as a
    3.3.1 broker showed (tests/commands/test_doctor_cli.py)."""
    out = []
    recover_all = (f"kafkalog recover {d} --all (recovers every segment, as the broker would from 0, and writes the "
                   "file anew)")
    set_aside = "mv {f} {f}.damaged (the broker starts without it: {what} from the log start)"
    after = {names.RECOVERY_POINT_CHECKPOINT: (", resetting the recovery checkpoint to 0", recover_all),
             names.LOG_START_OFFSET_CHECKPOINT: (", resetting to the base offset of the first segment", recover_all),
             names.REPLICATION_CHECKPOINT: ("", set_aside.replace("{what}", "high watermarks")),
             names.CLEANER_CHECKPOINT: ("", set_aside.replace("{what}", "cleaner offsets"))}
    for name, (reset, fix) in after.items():
        f = d / name
        if not f.exists():
            continue
        try:
            ckpt.read_offsets_strict(f)
        except (KafkalogError, ValueError, OSError) as e:
            said = f", \"Error occurred while reading {name} file of directory {d}{reset}\"" if reset else ""
            out.append(Finding(Severity.WARNING, "checkpoint", str(f), f"damaged: {e}",
                               f"\"Error while reading checkpoint file {f}\" (LogDirFailureChannel){said}, then "
                               f"\"Stopping serving logs in dir {d}\": the log dir is offline",
                               fix.format(f=f), offline=True))
    for e in os.scandir(d):
        if not e.is_dir() or parse_partition_dir_name(e.name) is None:
            continue
        f = Path(e.path) / names.LEADER_EPOCH_CHECKPOINT
        try:
            raw = f.read_bytes()
        except OSError:
            continue
        try:
            parse_leader_epoch_checkpoint(raw, path=str(f))
        except (KafkalogError, ValueError) as err:
            out.append(Finding(Severity.WARNING, "checkpoint", str(f), f"damaged: {err}",
                               f"KafkaStorageException: Error while reading checkpoint file {f}: the log dir is offline",
                               f"kafkalog recover {d} (writes the leader epochs of the recovered log) or "
                               f"mv {f} {f}.damaged", offline=True))
    return out


_KAFKA_NAMES = {"OffsetOverflowError": "LogSegmentOffsetOverflowException", "InvalidOffsetError": "InvalidOffsetException",
                "CorruptIndexError": "CorruptIndexException", "CorruptRecordError": "CorruptRecordException",
                "InvalidRecordError": "InvalidRecordException", "CorruptSnapshotError": "CorruptSnapshotException"}


def check_segments(d: Path) -> list[Finding]:
    """recover's plan, partition by partition, as the broker's load would run: what it cannot
    recover stops the broker; what it truncates is lost."""
    from kafkalog_cli.config import ConfigResolver, cluster_metadata_configs
    from kafkalog_cli.ops import recover

    out = []
    opts = recover.RecoverOptions(now_ms=0, resolver=ConfigResolver(cluster_metadata=cluster_metadata_configs(d)))
    for e in sorted(os.scandir(d), key=lambda e: e.name):
        parsed = parse_partition_dir_name(e.name) if e.is_dir() else None
        if parsed is None or parsed.kind not in (PartitionDirKind.LIVE, PartitionDirKind.FUTURE):
            continue
        try:
            p = recover.plan(d, [Path(e.path)], opts)
        except KafkalogError as err:
            if isinstance(err, OSError) or getattr(err, "errno", None) in (errno.EACCES, errno.EPERM):
                continue
            kafka = _KAFKA_NAMES.get(type(err).__name__, "KafkaException")
            out.append(Finding(Severity.ERROR, "segment", err.path or e.path, err.message,
                               f"{kafka} while loading {e.name}: the broker exits",
                               f"kafkalog recover {d} --dry-run shows the damage; kafkalog recover {d} --salvage "
                               "keeps what can be kept (the rest goes to the quarantine)"))
            continue
        except OSError:
            continue            # access: check_access says it
        cuts = [a for a in p.actions if a.kind.value == "truncate" and a.path.suffix == names.LOG_SUFFIX
                and a.bytes_removed]
        gone = [a for a in p.actions if a.kind.value == "delete" and a.path.suffix == names.LOG_SUFFIX
                and "replaced by" not in a.reason]    # a swap's old segment is data kept, not lost
        if cuts or gone:
            lost = sum(a.bytes_removed or 0 for a in cuts)
            out.append(Finding(Severity.WARNING, "segment", e.path,
                               f"a damaged segment: {lost} bytes after the last valid batch"
                               + (f", {len(gone)} later segment(s)" if gone else ""),
                               "\"Found invalid messages in log segment\": it truncates the log there and drops what "
                               "follows, then starts",
                               f"kafkalog recover {d} --salvage keeps the valid batches after the damage (what is "
                               f"cut goes to the quarantine); kafkalog recover {d} --dry-run shows it"))
        for f in p.findings:
            if isinstance(f, recover.IndexFaultFinding):
                what = f.message.removesuffix("; recovering it")
                out.append(Finding(Severity.WARNING, "index", f.path, f"a corrupt offset index: {what}",
                                   "it loads the segment without recovering it (.kafka_cleanshutdown) and serves "
                                   "from the log end the index gives", f"kafkalog recover {d} rebuilds the index"))
    return out


# ------------------------------------------------------------------ assignments
def _node_id(metas: dict) -> int | None:
    for m in metas.values():
        if isinstance(m, dict):
            raw = m.get("node.id", m.get("broker.id"))
            if raw is not None and raw.strip().lstrip("-").isdigit():
                return int(raw)
    return None


def check_assignments(log_dirs: list[Path], metadata_dir: Path, node_id: int | None) -> list[Finding]:
    """Partitions the metadata (the image at the end of __cluster_metadata-0) no longer assigns to
    this broker, by LogManager.isStrayKraftReplica (3.7+): no topic id in partition.metadata, a
    topic id the image does not hold (deleted, or recreated under a new id), or replicas without
    this node. A 3.7+ broker renames such a dir `-stray` on start and leaves it; an older one
    keeps it loaded without serving it. Nothing is checked without a metadata log or a node id."""
    from kafkalog_cli.ops.metadata_image import read_metadata_image

    if node_id is None or not (metadata_dir / METADATA_DIR).is_dir():
        return []
    try:
        image = read_metadata_image(metadata_dir).image
    except KafkalogError:
        return []           # the metadata checks say what is wrong with it
    if not image.topics:
        return []
    by_id = {t.id: t for t in image.topics.values()}
    out = []
    for d in log_dirs:
        if not d.is_dir():
            continue
        for e in sorted(os.scandir(d), key=lambda e: e.name):
            parsed = parse_partition_dir_name(e.name) if e.is_dir() else None
            if parsed is None or parsed.kind is not PartitionDirKind.LIVE or e.name == METADATA_DIR:
                continue
            tp = parsed.topic_partition
            try:
                topic_id = parse_properties((Path(e.path) / "partition.metadata").read_bytes()).get("topic_id")
            except (OSError, KafkalogError, ValueError):
                topic_id = None
            topic = by_id.get(topic_id) if topic_id else None
            part = topic.partitions.get(tp.partition) if topic is not None else None
            if topic_id is None:
                why = "no topic id in partition.metadata"
            elif topic is None:
                why = f"its topic id {topic_id} is not in the metadata (the topic was deleted, or recreated under a new id)"
            elif part is None:
                why = f"partition {tp.partition} is not in the metadata of {topic.name}"
            elif node_id not in part.replicas:
                why = f"its replicas are {part.replicas}, without this broker (node {node_id})"
            else:
                continue
            out.append(Finding(
                Severity.NOTE, "assignment", e.path, f"not assigned to this broker by the metadata: {why}",
                "a 3.7+ broker renames it to a -stray dir on start (\"Found stray log dir\") and keeps it; an older "
                "one leaves it in the log dir",
                f"once sure its data is not needed (compare it with the replicas that hold it: kafkalog "
                f"compare-replicas), move it out of the log dir: mv {e.path} {d.parent}/"))
    return out
