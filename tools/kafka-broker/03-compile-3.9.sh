#!/bin/bash
# Kafka 3.9.0-rc3, step 3: compile Kafka's modules with javac / scalac only, in build.gradle's order.
# usage: 03-compile-3.9.sh [module...]   (default: all; `tools` and `rsm` are included, see below)
#   rsm:   Kafka's own LocalTieredStorage (storage test sources) and the few clients test classes it
#          needs, as two small jars kept outside libs/ (loaded through remote.log.storage.manager.class.path)
#   tools: kafka-topics, kafka-get-offsets, kafka-consumer-groups, ... (its two connect files left out)
set -euo pipefail
export KAFKA_VERSION=3.9.0-rc3
. "$(dirname "$0")/00-env.sh"
C=$B/classes
mkdir -p "$OUTJ"
V=3.9.0
d() { echo -n "$DEPS/$1"; }
# one compile classpath for every module: Kafka's jars built so far + the third-party jars
# (build.gradle's per-module lists are subsets of it; scala-compiler is left out)
cpath() {
  local cp="" j
  for j in "$OUTJ"/kafka*-$V.jar "$DEPS"/*.jar; do
    [ -f "$j" ] || continue
    case $j in */scala-compiler-*) continue ;; esac
    cp="$cp:$j"
  done
  echo -n "${cp#:}"
}
vfile() { (cd "$B/gen/clients-res" && jar uf "$1" kafka/kafka-version.properties); }

javamod() { # javamod NAME JAR SRCDIRS...   (resources: $KSRC/NAME/src/main/resources)
  local n=$1 jar=$2; shift 2
  local t=$(date +%s) cd
  cd=$C/${n//\//-}
  rm -rf "$cd"
  javac_ "$cd" "$(cpath)" $(find "$@" -name '*.java')
  local res=$KSRC/$n/src/main/resources
  if [ -d "$res" ]; then cp -r "$res"/. "$cd"/; fi
  (cd "$cd" && jar cf "$jar" .)
  echo "== $n: $(find "$cd" -name '*.class' | wc -l) classes -> $jar ($(( $(date +%s) - t ))s)"
}

build_clients() {
  javamod clients "$OUTJ/kafka-clients-$V.jar" "$KSRC/clients/src/main/java" "$B/gen/clients"
  vfile "$OUTJ/kafka-clients-$V.jar"
}
build_server-common()   { javamod server-common "$OUTJ/kafka-server-common-$V.jar" "$KSRC/server-common/src/main/java"; vfile "$OUTJ/kafka-server-common-$V.jar"; }
build_storage-api()     { javamod storage/api "$OUTJ/kafka-storage-api-$V.jar" "$KSRC/storage/api/src/main/java"; vfile "$OUTJ/kafka-storage-api-$V.jar"; }
build_transaction-coordinator() {
  javamod transaction-coordinator "$OUTJ/kafka-transaction-coordinator-$V.jar" \
    "$KSRC/transaction-coordinator/src/main/java" "$B/gen/transaction-coordinator"
}
build_storage()         { javamod storage "$OUTJ/kafka-storage-$V.jar" "$KSRC/storage/src/main/java" "$B/gen/storage"; vfile "$OUTJ/kafka-storage-$V.jar"; }
build_raft()            { javamod raft "$OUTJ/kafka-raft-$V.jar" "$KSRC/raft/src/main/java" "$B/gen/raft"; vfile "$OUTJ/kafka-raft-$V.jar"; }
build_metadata()        { javamod metadata "$OUTJ/kafka-metadata-$V.jar" "$KSRC/metadata/src/main/java" "$B/gen/metadata"; }
build_group-coordinator-api() {
  javamod group-coordinator/group-coordinator-api "$OUTJ/kafka-group-coordinator-api-$V.jar" \
    "$KSRC/group-coordinator/group-coordinator-api/src/main/java"
  vfile "$OUTJ/kafka-group-coordinator-api-$V.jar"
}
build_group-coordinator() {
  javamod group-coordinator "$OUTJ/kafka-group-coordinator-$V.jar" \
    "$KSRC/group-coordinator/src/main/java" "$B/gen/group-coordinator"
}
build_server()          { javamod server "$OUTJ/kafka-server-$V.jar" "$KSRC/server/src/main/java"; vfile "$OUTJ/kafka-server-$V.jar"; }
build_tools-api()       { javamod tools/tools-api "$OUTJ/kafka-tools-api-$V.jar" "$KSRC/tools/tools-api/src/main/java"; vfile "$OUTJ/kafka-tools-api-$V.jar"; }

build_core() {
  local t=$(date +%s) cp=$(cpath) J=$OUTJ/kafka_2.13-$V.jar
  rm -rf "$C/core"
  # core's Java sources: src/main/java and one .java under src/main/scala (StreamsResetter)
  local javas="$(find "$KSRC/core/src/main/java" "$KSRC/core/src/main/scala" -name '*.java')"
  # joint compilation: scalac sees the Java sources, then javac compiles them against scalac's output;
  # language flags as in build.gradle's scalaCompileOptions (optimizer/lint flags left out)
  local rc=0
  SCALAC_OPTS="-encoding utf8 -language:postfixOps -language:implicitConversions -language:existentials -Ybackend-parallelism 2" \
  scalac "$C/core" "$cp" $(find "$KSRC/core/src/main/scala" -name '*.scala') $javas > "$C/core.scalac.log" 2>&1 || rc=$?
  { grep -v '^warning' "$C/core.scalac.log" || true; } | tail -40
  [ $rc = 0 ] || { echo "scalac core failed"; return 1; }
  javac_ "$C/core" "$C/core:$cp" $javas
  (cd "$C/core" && jar cf "$J" .)
  echo "== core: $(find "$C/core" -name '*.class' | wc -l) classes -> $J ($(( $(date +%s) - t ))s)"
}

# tools: without connect (ConnectPluginPath and ManifestWorkspace need connect-runtime, which is not built)
build_tools() {
  local t=$(date +%s)
  rm -rf "$C/tools"
  javac_ "$C/tools" "$(cpath)" $(find "$KSRC/tools/src/main/java" -name '*.java' \
      ! -name ConnectPluginPath.java ! -name ManifestWorkspace.java)
  (cd "$C/tools" && jar cf "$OUTJ/kafka-tools-$V.jar" .)
  echo "== tools: $(find "$C/tools" -name '*.class' | wc -l) classes ($(( $(date +%s) - t ))s)"
}

# LocalTieredStorage and what it needs from the storage and clients test sources (the smallest set that
# compiles; junit-jupiter-api from Debian's junit5 is only needed to compile TestUtils, not at runtime
# for the broker's use of LocalTieredStorage)
build_rsm() {
  local t=$(date +%s) S=$KSRC/storage/src/test/java/org/apache/kafka/server/log/remote/storage
  local T=$KSRC/clients/src/test/java/org/apache/kafka
  local JUNIT=/usr/share/java/junit-jupiter-api.jar:/usr/share/java/opentest4j.jar:/usr/share/java/apiguardian-api.jar:/usr/share/java/junit-platform-commons.jar
  rm -rf "$C/rsm-clients-test" "$C/rsm-storage-test"
  javac_ "$C/rsm-clients-test" "$(cpath):$JUNIT" \
    $T/test/TestUtils.java $T/test/NoRetryException.java $T/test/TestCondition.java $T/test/ValuelessCallable.java \
    $T/common/requests/ByteBufferChannel.java
  javac_ "$C/rsm-storage-test" "$(cpath):$C/rsm-clients-test:$JUNIT" \
    $S/LocalTieredStorage.java $S/LocalTieredStorageEvent.java $S/LocalTieredStorageHistory.java \
    $S/LocalTieredStorageListener.java $S/LocalTieredStorageTraverser.java $S/LocalTieredStorageCondition.java \
    $S/LocalTieredStorageSnapshot.java $S/RemoteLogSegmentFileset.java $S/RemoteTopicPartitionDirectory.java \
    $S/Transferer.java
  (cd "$C/rsm-clients-test" && jar cf "$OUTJ/rsm-kafka-clients-$V-test.jar" .)
  (cd "$C/rsm-storage-test" && jar cf "$OUTJ/rsm-kafka-storage-$V-test.jar" .)
  echo "== rsm: $(find "$C/rsm-storage-test" "$C/rsm-clients-test" -name '*.class' | wc -l) classes ($(( $(date +%s) - t ))s)"
}

mods=("$@")
[ ${#mods[@]} -gt 0 ] || mods=(clients server-common storage-api transaction-coordinator storage raft metadata \
                               group-coordinator-api group-coordinator server tools-api core tools rsm)
t0=$(date +%s)
for m in "${mods[@]}"; do "build_$m"; done
echo "03-compile-3.9 ${mods[*]} done in $(( $(date +%s) - t0 ))s"
