#!/bin/bash
# Kafka 3.9.0-rc3 (and 4.0.0-SNAPSHOT through 05-smoke-4.0.sh), step 5: smoke test with tiered storage
# (Kafka's own LocalTieredStorage).
# Formats a fresh KRaft log dir, starts a one-node broker+controller on 127.0.0.1 (two free ports),
# creates tiered topics (remote.storage.enable=true, local.retention.ms=1000, segment.bytes=1 MiB),
# produces enough to roll several segments, waits until segments are uploaded under the remote dir
# and deleted locally, consumes every record from offset 0 (through the remote tier), commits a
# group offset, asks kafka-get-offsets for earliest / earliest-local (-4) / latest-tiered (-5),
# stops the broker by its PID (SIGTERM), then runs the broker's own kafka-dump-log on every .log
# it wrote (decoders for __cluster_metadata, __remote_log_metadata, __consumer_offsets) and on the
# uploaded segments.
# Nothing waits on a count that load can change: the waits are for conditions (every closed segment
# uploaded, the oldest deleted locally) with generous deadlines, and what is checked afterwards is
# deterministic (each record served exactly, the remote tier ending right below the local one).
# usage: 05-smoke-3.9.sh [KAFKA_PY]
#   KAFKA_VERSION  3.9.0-rc3 (default) or 4.0.0-SNAPSHOT; KAFKA_HOME: the install (default /opt/kafka-$KAFKA_VERSION)
#   SMOKE_TIMEOUT  seconds each wait may take (default 900: the machine may be shared and busy)
#   SMOKE_DIR   work dir (default /tmp/kafka-smoke-$KAFKA_VERSION); kept after the run:
#               data/ (the log dir), remote/ (LocalTieredStorage), server.properties, logs/, dump-log/
#   KEEP_AS     if set, the stopped run is copied there (e.g. /opt/kafka-3.9.0-rc3-tiered-example)
#   RLMM_PARTITIONS  partitions of __remote_log_metadata (default 50, Kafka's default)
set -uo pipefail
export KAFKA_VERSION=${KAFKA_VERSION:-3.9.0-rc3}
case $KAFKA_VERSION in
  3.9.0-rc3)      B=/opt/kafka-build-3.9 ;;
  4.0.0-SNAPSHOT) B=/opt/kafka-build-4.0 ;;
  *) echo "05-smoke-3.9.sh: KAFKA_VERSION 3.9.0-rc3 or 4.0.0-SNAPSHOT" >&2; exit 2 ;;
esac
KH=${KAFKA_HOME:-/opt/kafka-$KAFKA_VERSION}
TIMEOUT=${SMOKE_TIMEOUT:-900}
PY=${1:-${KAFKA_PY:-}}
if [ -z "$PY" ]; then
  for p in /opt/kafka-build/venv/bin/python "$B/venv/bin/python"; do
    "$p" -c 'import kafka' 2>/dev/null && { PY=$p; break; }
  done
fi
[ -n "$PY" ] || { echo "no python with kafka-python (pass one, or set KAFKA_PY)"; exit 1; }
W=${SMOKE_DIR:-/tmp/kafka-smoke-$KAFKA_VERSION}
rm -rf "$W"; mkdir -p "$W/remote" "$W/dump-log"
read -r PORT CPORT < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
cat > "$W/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$W/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
# tiered storage: Kafka's own LocalTieredStorage (storage module test sources), jars outside libs/
remote.log.storage.system.enable=true
remote.log.storage.manager.class.name=org.apache.kafka.server.log.remote.storage.LocalTieredStorage
remote.log.storage.manager.class.path=$(ls "$KH"/rsm/kafka-storage-*-test.jar):$(ls "$KH"/rsm/kafka-clients-*-test.jar)
rsm.config.dir=$W/remote
remote.log.metadata.manager.listener.name=PLAINTEXT
rlmm.config.remote.log.metadata.topic.replication.factor=1
rlmm.config.remote.log.metadata.topic.num.partitions=${RLMM_PARTITIONS:-50}
remote.log.manager.task.interval.ms=1000
log.retention.check.interval.ms=1000
EOF
t0=$(date +%s)
CID=$("$KH/bin/kafka-storage.sh" random-uuid)
echo "cluster id: $CID"
LOG_DIR=$W/logs "$KH/bin/kafka-storage.sh" format -t "$CID" -c "$W/server.properties" || exit 1
echo "format took $(( $(date +%s) - t0 ))s"; t1=$(date +%s)
LOG_DIR=$W/logs KAFKA_HEAP_OPTS=-Xmx768m "$KH/bin/kafka-server-start.sh" "$W/server.properties" > "$W/stdout" 2>&1 &
pid=$!
echo "broker pid $pid on 127.0.0.1:$PORT (controller $CPORT)"
up=false
for i in $(seq $((TIMEOUT * 2))); do
  grep -q 'Kafka Server started' "$W/logs/server.log" 2>/dev/null && { up=true; break; }
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
echo "started=$up after $(( $(date +%s) - t1 ))s"
rc=1
if $up; then
  "$PY" - "127.0.0.1:$PORT" "$W" "$TIMEOUT" "$KAFKA_VERSION" <<'PY'
import hashlib, json, os, sys, time
from pathlib import Path
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

bs, work, timeout, version = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
TIERED = {"remote.storage.enable": "true", "local.retention.ms": "1000", "segment.bytes": "1048576",
          "file.delete.delay.ms": "1000", "retention.ms": "-1"}
TOPICS = {  # name: (partitions, producer compression, records per partition)
    "tiered": (1, None, 6000),
    "tiered-lz4": (2, "lz4", 4000),
    "tiered-bytes": (1, None, 6000),    # local retention by size: uploaded segments stay local too
}
BY_BYTES = {**TIERED, "local.retention.ms": "-2", "local.retention.bytes": "2097152"}
a = KafkaAdminClient(bootstrap_servers=bs)
a.create_topics([NewTopic(t, p, 1, topic_configs=BY_BYTES if t == "tiered-bytes" else TIERED)
                 for t, (p, _, _) in TOPICS.items()])
a.close()

def value(topic, p, i):
    # 1000 bytes: an offset prefix and pseudo-random text that compresses only a little
    h = hashlib.sha256(b"%s-%d-%d" % (topic.encode(), p, i)).hexdigest()
    return (b"%s-%d-%08d-" % (topic.encode(), p, i) + (h * 16).encode())[:1000]

for t, (parts, codec, n) in TOPICS.items():
    prod = KafkaProducer(bootstrap_servers=bs, acks="all", compression_type=codec, linger_ms=5,
                         batch_size=64 * 1024)
    for i in range(n):
        for p in range(parts):
            prod.send(t, key=b"k%d" % (i % 97), value=value(t, p, i), partition=p,
                      headers=[("i", b"%d" % i)] if i % 10 == 0 else [])
    prod.flush(); prod.close()
print("produced", {t: parts * n for t, (parts, _, n) in TOPICS.items()}, flush=True)

def local_bases(t, p):
    d = work / "data" / f"{t}-{p}"
    return sorted(int(f.name[:20]) for f in d.iterdir() if f.name.endswith(".log"))

def remote_logs(t, p):
    root = work / "remote" / "kafka-tiered-storage"
    dirs = [d for d in root.iterdir() if d.name.startswith(f"{t}-{p}-")] if root.exists() else []
    return sorted(f.name for d in dirs for f in d.iterdir() if f.name.endswith(".log"))

parts = [(t, p) for t, (n, _, _) in TOPICS.items() for p in range(n)]

def tiered(name, s):
    # local.retention.ms=1000: every closed segment uploaded and deleted locally, one local segment left;
    # local.retention.bytes: every closed segment uploaded, the oldest deleted locally, 2 MiB kept.
    # How many segments a partition rolls depends on how the producer batched (compressed sizes), so
    # no count is waited for: only "every closed segment is remote" (the remote bases start at 0 and
    # there is one per closed segment); that the remote tier ends right below the local log is
    # checked afterwards with kafka-get-offsets --time -5 / -4
    if not s["local"] or s["local"][0] == 0 or not s["remote_bases"] or s["remote_bases"][0] != 0:
        return False
    if name.startswith("tiered-bytes"):
        return s["remote"] == len(s["local"]) - 1 + s["local_deleted"] and s["local_deleted"] > 0
    return len(s["local"]) == 1

deadline = time.monotonic() + timeout
while time.monotonic() < deadline:
    state = {}
    for t, p in parts:
        loc, rem = local_bases(t, p), remote_logs(t, p)
        state[f"{t}-{p}"] = {"local": loc, "remote": len(rem),
                             "local_deleted": sum(1 for r in rem if loc and int(r[:20]) < loc[0]),
                             "remote_bases": sorted({int(r[:20]) for r in rem})}
    if all(tiered(n, s) for n, s in state.items()):
        break
    time.sleep(2)
print("tiering", json.dumps({n: {k: v for k, v in s.items() if k != "remote_bases"} for n, s in state.items()}),
      f"after {time.monotonic() - deadline + timeout:.0f}s", flush=True)
with open(work / "first_local.json", "w") as f:   # for the latest-tiered check after this script
    json.dump({n: [s["local"][0], s["local"][-1]] if s["local"] else [] for n, s in state.items()}, f)
ok = all(tiered(n, s) for n, s in state.items())

# consume from offset 0: the uploaded part is served from the remote tier
c = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False, consumer_timeout_ms=30000,
                  group_id="smoke-" + version, fetch_max_bytes=4 * 1024 * 1024)
tps = [TopicPartition(t, p) for t, p in parts]
c.assign(tps)
begin, end = c.beginning_offsets(tps), c.end_offsets(tps)
for tp in tps:
    c.seek(tp, 0)
got = {tp: [] for tp in tps}
want = sum(end.values())
t0 = time.monotonic()
while sum(len(v) for v in got.values()) < want and time.monotonic() - t0 < timeout:
    for tp, msgs in c.poll(timeout_ms=2000).items():
        got[tp] += [(m.offset, m.value) for m in msgs]
c.commit({tp: OffsetAndMetadata(end[tp], "") for tp in tps})
c.close()
result = {}
for tp in tps:
    t, p = tp.topic, tp.partition
    n = TOPICS[t][2]
    vals = [v for _, v in got[tp]]
    result[f"{t}-{p}"] = {"log_start": begin[tp], "end": end[tp], "consumed": len(vals),
                          "first_local": state[f"{t}-{p}"]["local"][0],
                          "exact": vals == [value(t, p, i) for i in range(n)]}
print("consumed", json.dumps(result), flush=True)
ok = ok and all(r["exact"] and r["log_start"] == 0 and r["first_local"] > 0 for r in result.values())
print("SMOKE OK" if ok else "SMOKE FAILED", flush=True)
sys.exit(0 if ok else 1)
PY
  rc=$?
  if [ -x "$KH/bin/kafka-get-offsets.sh" ]; then
    for tm in -2 -4 -5 -1; do   # earliest, earliest-local, latest-tiered, latest
      "$KH/bin/kafka-get-offsets.sh" --bootstrap-server 127.0.0.1:$PORT --topic 'tiered.*' --time $tm > "$W/get-offsets$tm.txt" 2>&1
      echo "kafka-get-offsets --time $tm: $(tr '\n' ' ' < "$W/get-offsets$tm.txt")"
    done
    # deterministic once every closed segment is uploaded: the remote tier ends right below the active
    # segment (latest-tiered = its base - 1) and, where local.retention.ms deleted every closed segment,
    # earliest-local is the active segment's base
    python3 - "$W" <<'PY' || rc=1
import json, re, sys
from pathlib import Path
w = Path(sys.argv[1])
first = json.loads((w / "first_local.json").read_text())
def offsets(tm):
    out = {}
    for m in re.finditer(r"^(\S+):(\d+):(-?\d+)$", (w / f"get-offsets{tm}.txt").read_text(), re.M):
        out[f"{m[1]}-{m[2]}"] = int(m[3])
    return out
tiered, local = offsets(-5), offsets(-4)
bad = {n: (tiered.get(n), local.get(n), fl) for n, fl in first.items()
       if not fl or tiered.get(n) != fl[1] - 1 or (local.get(n) != fl[1] and not n.startswith("tiered-bytes"))}
print("remote tier ends below the local log:", "yes" if not bad else f"NO {bad}")
sys.exit(1 if bad else 0)
PY
  fi
fi
t2=$(date +%s)
kill -TERM $pid 2>/dev/null
wait $pid
echo "broker exit status $? (stop took $(( $(date +%s) - t2 ))s)"
grep -E 'shut down completed|Kafka Server started' "$W/logs/server.log" | tail -3
echo "ERROR lines in server.log: $(grep -c ' ERROR ' "$W/logs/server.log")"; grep ' ERROR ' "$W/logs/server.log" | head -5
[ -f "$W/data/.kafka_cleanshutdown" ] && echo ".kafka_cleanshutdown: $(cat "$W/data/.kafka_cleanshutdown")"

# the broker's own kafka-dump-log on every .log it wrote, with the decoder each internal topic needs
# (one JVM per kind: --files takes a comma-separated list; each file's dump starts "Dumping <file>")
dumprc=0; nd=0
dump() { # dump NAME DECODER-FLAG FILES...
  local name=$1 dec=$2; shift 2
  [ $# -gt 0 ] || return 0
  local files; files=$(IFS=,; echo "$*")
  "$KH/bin/kafka-dump-log.sh" --print-data-log $dec --files "$files" > "$W/dump-log/$name.txt" 2>&1 \
    || { dumprc=1; echo "kafka-dump-log failed on $name"; }
  [ "$(grep -c '^Dumping ' "$W/dump-log/$name.txt")" = $# ] || { dumprc=1; echo "kafka-dump-log: $name: not every file dumped"; }
  grep -q -E 'Exception|Error' "$W/dump-log/$name.txt" && { dumprc=1; echo "kafka-dump-log: $name: an exception"; }
  nd=$((nd + $#))
}
logs() { find "$W/data" -path "$W/data/$1/*" -name '*.log' | sort; }
dump cluster-metadata --cluster-metadata-decoder $(logs '__cluster_metadata-*')
dump remote-log-metadata --remote-log-metadata-decoder $(logs '__remote_log_metadata-*')
dump consumer-offsets --offsets-decoder $(logs '__consumer_offsets-*')
dump topics "" $(find "$W/data" -name '*.log' ! -path '*/__*' | sort)
# uploaded segments are named <offset>-<segment id>.log: kafka-dump-log takes the base offset from the
# name, so dump copies named <offset>.log (one dir per uploaded segment)
R=$W/dump-log/remote-copies; mkdir -p "$R"; rl=()
for f in $(find "$W/remote" -name '*.log' | sort); do
  b=$(basename "$f"); d="$R/$(basename "$(dirname "$f")")/${b%.log}"; mkdir -p "$d"
  cp "$f" "$d/${b%%-*}.log"; rl+=("$d/${b%%-*}.log")
done
dump remote-segments "" "${rl[@]}"
rm -rf "$R"
echo "kafka-dump-log: $nd files, rc=$dumprc; __remote_log_metadata records: $(grep -c 'payload:' "$W/dump-log/remote-log-metadata.txt")"
grep -h 'payload:' "$W/dump-log/remote-log-metadata.txt" | head -2 | cut -c1-400
if [ $rc = 0 ] && [ $dumprc = 0 ] && [ -n "${KEEP_AS:-}" ]; then
  rm -rf "$KEEP_AS"; cp -a "$W" "$KEEP_AS"
  sed -i "s|$W|$KEEP_AS|g" "$KEEP_AS/server.properties"   # log.dirs, rsm.config.dir point at the copy
  echo "kept the run as $KEEP_AS"
fi
[ $rc = 0 ] && [ $dumprc = 0 ]
