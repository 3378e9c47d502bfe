#!/bin/bash
# Kafka 4.0.0-SNAPSHOT (trunk 1eb76443), step 5: smoke test.
#  1. tiered storage: 05-smoke-3.9.sh with KAFKA_VERSION=4.0.0-SNAPSHOT (default format: metadata.version
#     4.0-IV0, transaction.version 0), as for 3.9.0-rc3.
#  2. transactions version 2 (KIP-890): a second broker whose dir is formatted with transaction.version=2,
#     an unstable feature in this snapshot (README.md, "Kafka 4.0.0-SNAPSHOT": metadata.version 4.0-IV2
#     with unstable.feature.versions.enable=true; this snapshot's format ignores --feature); then
#     - the build's own kafka-producer-perf-test.sh --transactional-id (its Java producer sends EndTxn v4,
#       so the coordinator completes those transactions the pre-TV2 way: marker epoch = data epoch);
#     - kafka-python with EndTxn v5 (kafka-python caps EndTxn at v3; raising the cap and taking the bumped
#       epoch from the response is all a TV2 client does differently in this snapshot, where Produce has no
#       v12 yet): three committed transactions and one aborted, each marker one epoch above its data;
#     then the broker is stopped and its own kafka-dump-log shows the batches, the markers and
#     __transaction_state (--transaction-log-decoder). Every check is on what the dir holds once the
#     broker stopped (counts and epochs), never on how long something took.
# usage: 05-smoke-4.0.sh [KAFKA_PY]   (KAFKA_HOME, SMOKE_DIR, SMOKE_TIMEOUT, KEEP_AS as for 05-smoke-3.9.sh;
#        SMOKE_PART=tiered or tv2 runs one part only)
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
export KAFKA_VERSION=4.0.0-SNAPSHOT
KH=${KAFKA_HOME:-/opt/kafka-4.0.0-SNAPSHOT}
export KAFKA_HOME=$KH
TIMEOUT=${SMOKE_TIMEOUT:-900}
PY=${1:-${KAFKA_PY:-}}
if [ -z "$PY" ]; then
  for p in /opt/kafka-build/venv/bin/python /opt/kafka-build-4.0/venv/bin/python; do
    "$p" -c 'import kafka' 2>/dev/null && { PY=$p; break; }
  done
fi
[ -n "$PY" ] || { echo "no python with kafka-python (pass one, or set KAFKA_PY)"; exit 1; }
echo "Kafka $(sed -n 's/^version=//p' "$KH/BUILD-INFO") ($(sed -n 's/^branch=//p' "$KH/BUILD-INFO") $(sed -n 's/^commit=//p' "$KH/BUILD-INFO" | cut -c1-8)) at $KH"
rc1=0
if [ "${SMOKE_PART:-all}" != tv2 ]; then
  echo "=== part 1: tiered storage"
  bash "$H/05-smoke-3.9.sh" "$PY"; rc1=$?
  echo "=== part 1: rc=$rc1"
fi
[ "${SMOKE_PART:-all}" = tiered ] && exit $rc1

echo "=== part 2: transactions version 2"
W=${SMOKE_DIR:-/tmp/kafka-smoke-$KAFKA_VERSION}-tv2
rm -rf "$W"; mkdir -p "$W/dump-log"
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
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
# transactions version 2 is unstable in this snapshot: format refuses metadata.version 4.0-IV2 (the first
# with transaction.version 2, its default there) without the first line, which it reads from this file;
# the broker needs it to run at that level, and the second line to offer EndTxn v5 (marked unstable)
unstable.feature.versions.enable=true
unstable.api.versions.enable=true
EOF
CID=$("$KH/bin/kafka-storage.sh" random-uuid)
LOG_DIR=$W/logs "$KH/bin/kafka-storage.sh" format -t "$CID" -c "$W/server.properties" --release-version 4.0-IV2 \
  2>&1 | tee "$W/format.txt" || exit 1
"$KH/bin/kafka-dump-log.sh" --cluster-metadata-decoder --files "$W/data/bootstrap.checkpoint" > "$W/dump-log/bootstrap.txt" 2>&1
echo "bootstrap.checkpoint: $(grep -o '"name":"[a-z.]*","featureLevel":[0-9]*' "$W/dump-log/bootstrap.txt" | tr '\n' ' ')"
grep -q '"name":"transaction.version","featureLevel":2' "$W/dump-log/bootstrap.txt" || { echo "not formatted with transaction.version 2"; exit 1; }
LOG_DIR=$W/logs KAFKA_HEAP_OPTS=-Xmx512m "$KH/bin/kafka-server-start.sh" "$W/server.properties" > "$W/stdout" 2>&1 &
pid=$!
up=false
for i in $(seq $((TIMEOUT * 2))); do
  grep -q 'Kafka Server started' "$W/logs/server.log" 2>/dev/null && { up=true; break; }
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
echo "started=$up (pid $pid, 127.0.0.1:$PORT)"
rc2=1
if $up; then
  BS=127.0.0.1:$PORT
  "$KH/bin/kafka-features.sh" --bootstrap-server $BS describe 2>&1 | grep -E 'transaction.version|metadata.version' | tee "$W/features.txt"
  for t in txn-perf txn-py; do
    "$KH/bin/kafka-topics.sh" --bootstrap-server $BS --create --topic $t --partitions 1 --replication-factor 1 >/dev/null 2>&1
  done
  # the build's own Java producer: 3000 records in transactions of ~200 ms
  "$KH/bin/kafka-producer-perf-test.sh" --topic txn-perf --num-records 3000 --record-size 100 --throughput -1 \
    --transactional-id smoke-perf --transaction-duration-ms 200 \
    --producer-props bootstrap.servers=$BS > "$W/perf.txt" 2>&1
  echo "kafka-producer-perf-test: rc=$? $(tail -1 "$W/perf.txt")"
  "$PY" - "$BS" "$TIMEOUT" <<'PY' 2>&1 | tee "$W/tv2-client.txt"
import sys, time
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
import kafka.producer.transaction_manager as tm

bs, timeout = sys.argv[1], int(sys.argv[2])
seen = []
_init, _handle = tm.EndTxnHandler.__init__, tm.EndTxnHandler.handle_response

def init(self, manager, committed):
    _init(self, manager, committed)
    self.request = tm.EndTxnRequest(transactional_id=self.transactional_id, producer_id=self.producer_id,
                                    producer_epoch=self.producer_epoch, committed=committed, max_version=5)

def handle(self, response):
    # EndTxn v5: the coordinator bumped the epoch (or rotated the producer id); the next transaction uses it
    pid, epoch = getattr(response, "producer_id", -1), getattr(response, "producer_epoch", -1)
    seen.append((self.producer_id, self.producer_epoch, pid, epoch))
    if response.error_code == 0 and pid >= 0:
        m = self.transaction_manager
        m.set_producer_id_and_epoch(tm.ProducerIdAndEpoch(pid, epoch))
        m._sequence_numbers.clear()
    _handle(self, response)

tm.EndTxnHandler.__init__, tm.EndTxnHandler.handle_response = init, handle
p = KafkaProducer(bootstrap_servers=bs, transactional_id="smoke-tv2", acks="all")
p.init_transactions()
for n, commit in enumerate([True, True, False, True]):
    p.begin_transaction()
    for i in range(10):
        p.send("txn-py", key=b"t%d" % n, value=b"txn %d record %d" % (n, i))
    p.flush()
    p.commit_transaction() if commit else p.abort_transaction()
p.close()
print("EndTxn (producer id, epoch sent -> returned):", seen)
c = KafkaConsumer(bootstrap_servers=bs, isolation_level="read_committed", enable_auto_commit=False,
                  consumer_timeout_ms=10000)
tp = TopicPartition("txn-py", 0)
c.assign([tp]); c.seek(tp, 0)
got, t0 = [], time.monotonic()
while len(got) < 30 and time.monotonic() - t0 < timeout:
    for msgs in c.poll(timeout_ms=1000).values():
        got += [m.value for m in msgs]
c.close()
want = [b"txn %d record %d" % (n, i) for n in (0, 1, 3) for i in range(10)]
ok = got == want and all(b == -1 or (e == se + 1) for _, se, b, e in seen) and len(seen) == 4
print("read_committed:", len(got), "records,", "exact" if got == want else "NOT EXACT")
print("TV2 CLIENT OK" if ok else "TV2 CLIENT FAILED")
sys.exit(0 if ok else 1)
PY
  rc2=${PIPESTATUS[0]}
fi
kill -TERM $pid 2>/dev/null
wait $pid
echo "broker exit status $?; ERROR lines in server.log: $(grep -c ' ERROR ' "$W/logs/server.log")"
grep ' ERROR ' "$W/logs/server.log" | head -5
for t in txn-perf txn-py; do
  "$KH/bin/kafka-dump-log.sh" --files "$(ls "$W"/data/$t-0/*.log | paste -sd,)" > "$W/dump-log/$t.txt" 2>&1
done
"$KH/bin/kafka-dump-log.sh" --transaction-log-decoder --print-data-log \
  --files "$(ls "$W"/data/__transaction_state-0/*.log | paste -sd,)" > "$W/dump-log/transaction-state.txt" 2>&1
# what the dir holds: per topic, the data batches' and the markers' (producer id, epoch)
python3 - "$W" <<'PY' || rc2=1
import re, sys
from pathlib import Path
w = Path(sys.argv[1])
ok = True
for t in ("txn-perf", "txn-py"):
    data, markers = [], []
    for line in (w / "dump-log" / f"{t}.txt").read_text().splitlines():
        m = re.search(r"count: (\d+).*producerId: (-?\d+) producerEpoch: (-?\d+).*isTransactional: (\w+) isControl: (\w+)", line)
        if m:
            (markers if m[5] == "true" else data).append((int(m[2]), int(m[3]), int(m[1])))
    records = sum(c for _, _, c in data)
    data_epochs = sorted({(p, e) for p, e, _ in data})
    marker_epochs = [(p, e) for p, e, _ in markers]
    print(f"{t}: {records} records in {len(data)} transactional batches, epochs {data_epochs}; "
          f"{len(markers)} markers, epochs {marker_epochs}")
    if t == "txn-perf":   # EndTxn v4: each marker has its data's epoch (one epoch for the whole run)
        ok &= records == 3000 and len(markers) >= 1 and len(data_epochs) == 1 and set(marker_epochs) == set(data_epochs)
    else:                 # EndTxn v5: 4 transactions, epochs E..E+3 on the data, E+1..E+4 on the markers
        e = [x[1] for x in data_epochs]
        ok &= records == 40 and len(markers) == 4 and len(e) == 4 and e == list(range(e[0], e[0] + 4)) \
            and [x[1] for x in marker_epochs] == [x + 1 for x in e]
txn = (w / "dump-log" / "transaction-state.txt").read_text()
states = re.findall(r'"state":"(\w+)"', txn)
print(f"__transaction_state: {len(re.findall('payload:', txn))} records; smoke-tv2's last:",
      [l[l.index('payload:'):][:300] for l in txn.splitlines() if 'smoke-tv2' in l and 'payload:' in l][-1:])
print("TV2 SMOKE OK" if ok else "TV2 SMOKE FAILED")
sys.exit(0 if ok else 1)
PY
[ $rc2 = 0 ] || rc2=1
echo "=== part 2: rc=$rc2"
[ $rc1 = 0 ] && [ $rc2 = 0 ]
