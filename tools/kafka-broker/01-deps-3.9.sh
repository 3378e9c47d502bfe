#!/bin/bash
# Kafka 3.9.0-rc3, step 1: collect the third-party jars into $DEPS.
#  - copied from the pyspark 4.x venv (never modified)
#  - copied from Debian packages (see README.md for the apt-get line)
#  - built from source from GitHub snapshots ($MIRROR/<owner>+<name>/repo)
# Nothing is stubbed: every class comes from its project's own source or binary release.
# usage: 01-deps-3.9.sh [step...]   (default: every step, in order)
set -euo pipefail
export KAFKA_VERSION=3.9.0-rc3
. "$(dirname "$0")/00-env.sh"
mkdir -p "$DEPS" "$DSRC"
t0=$(date +%s)

SLF4J=$DEPS/slf4j-api-1.7.32.jar
JACKSON=$DEPS/jackson-core-2.21.2.jar:$DEPS/jackson-databind-2.21.2.jar:$DEPS/jackson-annotations-2.21.jar
GUAVA=/usr/share/java/guava.jar:/usr/share/java/error_prone_annotations.jar:/usr/share/java/checker-qual.jar
EXPORTS=""   # google-java-format uses javac's internals
for p in api code file main parser tree util; do EXPORTS="$EXPORTS --add-exports jdk.compiler/com.sun.tools.javac.$p=ALL-UNNAMED"; done

src() { # src NAME REPO REF [PATHS...] -> extracts into $DSRC/NAME
  local n=$1 r=$2 ref=$3; shift 3
  rm -rf "$DSRC/$n"; mkdir -p "$DSRC/$n"
  git -C "$MIRROR/$r" archive "$ref" "$@" | tar x -C "$DSRC/$n"
}
jarit() { # jarit JAR CLASSDIR [RESOURCEDIR]
  (cd "$2" && jar cf "$1" .)
  if [ -n "${3:-}" ] && [ -d "$3" ]; then (cd "$3" && jar uf "$1" .); fi
}

# --- from pyspark (runtime + compile) ---
dep_pyspark() {
  for j in scala-library-$SCALA_VER scala-reflect-$SCALA_VER scala-compiler-$SCALA_VER \
           jackson-core-2.21.2 jackson-databind-2.21.2 jackson-annotations-2.21 \
           jackson-module-scala_2.13-2.21.2 paranamer-2.8.3 \
           zstd-jni-1.5.7-7 lz4-java-1.11.0 snappy-java-1.1.10.8 \
           zookeeper-3.9.5 zookeeper-jute-3.9.5 audience-annotations-0.12.0 \
           metrics-core-4.2.37 commons-cli-1.11.0 commons-io-2.22.0 \
           netty-buffer-4.2.13.Final netty-codec-4.2.13.Final netty-codec-base-4.2.13.Final \
           netty-common-4.2.13.Final netty-handler-4.2.13.Final netty-resolver-4.2.13.Final \
           netty-transport-4.2.13.Final netty-transport-classes-epoll-4.2.13.Final \
           netty-transport-native-unix-common-4.2.13.Final ; do
    cp -f "$PYSPARK_JARS/$j.jar" "$DEPS/"
  done
  # metrics-core-4 (dropwizard; ZooKeeper and core use it): renamed so it cannot be confused with yammer 2.2.0
  mv -f "$DEPS/metrics-core-4.2.37.jar" "$DEPS/dropwizard-metrics-core-4.2.37.jar"
}

# --- from Debian: libjoptsimple-java liblog4j1.2-java libslf4j-java libprotobuf-java
#     libcommons-validator-java (with its dependencies commons-beanutils/digester/logging/collections3) ---
dep_debian() {
  cp -f /usr/share/java/joptsimple-5.0.4.jar "$DEPS/jopt-simple-5.0.4.jar"
  cp -f /usr/share/java/log4j-1.2-1.2.17.jar "$DEPS/log4j-1.2.17.jar"
  cp -f /usr/share/java/slf4j-api-1.7.32.jar "$DEPS/slf4j-api-1.7.32.jar"
  cp -f /usr/share/java/slf4j-log4j12-1.7.32.jar "$DEPS/slf4j-log4j12-1.7.32.jar"
  cp -f /usr/share/java/protobuf-3.21.12.jar "$DEPS/protobuf-java-3.21.12.jar"
  cp -f /usr/share/java/commons-validator-1.7.jar "$DEPS/commons-validator-1.7.jar"
  cp -f /usr/share/java/commons-beanutils-1.9.4.jar "$DEPS/commons-beanutils-1.9.4.jar"
  cp -f /usr/share/java/commons-digester-1.8.1.jar "$DEPS/commons-digester-1.8.1.jar"
  cp -f /usr/share/java/commons-logging-1.2.jar "$DEPS/commons-logging-1.2.jar"
  cp -f /usr/share/java/commons-collections3-3.2.2.jar "$DEPS/commons-collections-3.2.2.jar"
}

# --- yammer metrics-core 2.2.0 (com.yammer.metrics), dropwizard/metrics tag v2.2.0 ---
dep_yammer() {
  src yammer dropwizard+metrics/repo v2.2.0 metrics-core/src/main
  javac_ $DSRC/yammer/classes "$SLF4J" $(find $DSRC/yammer/metrics-core/src/main/java -name '*.java')
  jarit $DEPS/metrics-core-2.2.0.jar $DSRC/yammer/classes
}

# --- argparse4j 0.7.0, argparse4j/argparse4j tag argparse4j-0.7.0 ---
dep_argparse4j() {
  src argparse4j argparse4j+argparse4j/repo argparse4j-0.7.0
  local A=$(dirname $(find $DSRC/argparse4j -path '*src/main/java' -type d | head -1))
  javac_ $DSRC/argparse4j/classes "" $(find $A/java -name '*.java')
  jarit $DEPS/argparse4j-0.7.0.jar $DSRC/argparse4j/classes $A/resources
}

# --- jose4j 0.9.3 (Kafka 3.9 wants 0.9.4, same API), turalsalamov/jose4j at "prepare release jose4j-0.9.3";
#     -source 8 -target 8 (not --release 8); no patch needed ---
dep_jose4j() {
  local c=$(git -C "$MIRROR/turalsalamov+jose4j/repo" log --format=%H --grep='prepare release jose4j-0.9.3' -1)
  src jose4j turalsalamov+jose4j/repo "$c" src/main
  JAVAC_LEVEL="-source 8 -target 8" javac_ $DSRC/jose4j/classes "$SLF4J" $(find $DSRC/jose4j/src/main/java -name '*.java')
  jarit $DEPS/jose4j-0.9.3.jar $DSRC/jose4j/classes $DSRC/jose4j/src/main/resources
}

# --- jackson-dataformat-csv (FasterXML/jackson-dataformats-text branch 2.19; kafka-consumer-groups uses it) ---
dep_jcsv() {
  src jcsv FasterXML+jackson-dataformats-text/repo HEAD csv/src/main
  local P=$DSRC/jcsv/csv/src/main/java/com/fasterxml/jackson/dataformat/csv
  sed -e 's/@package@/com.fasterxml.jackson.dataformat.csv/' -e 's/@projectversion@/2.19.0/' \
      -e 's/@projectgroupid@/com.fasterxml.jackson.dataformat/' -e 's/@projectartifactid@/jackson-dataformat-csv/' \
      $P/PackageVersion.java.in > $P/PackageVersion.java
  javac_ $DSRC/jcsv/classes "$JACKSON" $(find $DSRC/jcsv/csv/src/main/java -name '*.java')
  jarit $DEPS/jackson-dataformat-csv-2.19.0.jar $DSRC/jcsv/classes $DSRC/jcsv/csv/src/main/resources
}

# --- scala-collection-compat 2.10.0 (2.13 sources only), scala/scala-collection-compat tag v2.10.0 ---
dep_sccompat() {
  src sccompat scala+scala-collection-compat/repo v2.10.0
  scalac $DSRC/sccompat/classes "" $(find $DSRC/sccompat/compat/src/main/scala-2.13 -name '*.scala')
  jarit $DEPS/scala-collection-compat_2.13-2.10.0.jar $DSRC/sccompat/classes
}

# --- scala-java8-compat 1.0.2 (2.13+ sources; sbt-generated FunctionConverters omitted, Kafka uses only OptionConverters) ---
dep_j8compat() {
  src j8compat scala+scala-java8-compat/repo v1.0.2
  local S=$DSRC/j8compat/src/main
  scalac $DSRC/j8compat/classes "" $(find $S/scala $S/scala-2.13+ -name '*.scala') $(find $S/java $S/java-2.13+ -name '*.java')
  javac_ $DSRC/j8compat/classes "$DSRC/j8compat/classes:$SCALA_LIB" $(find $S/java $S/java-2.13+ -name '*.java')
  jarit $DEPS/scala-java8-compat_2.13-1.0.2.jar $DSRC/j8compat/classes
}

# --- scala-logging 3.9.5 (macros), lightbend-labs/scala-logging tag v3.9.5 ---
dep_slogging() {
  src slogging lightbend-labs+scala-logging/repo v3.9.5
  SCALAC_OPTS="-language:experimental.macros" scalac $DSRC/slogging/classes "$SLF4J" \
    $(find $DSRC/slogging/src/main/scala $DSRC/slogging/src/main/scala-2 -name '*.scala')
  jarit $DEPS/scala-logging_2.13-3.9.5.jar $DSRC/slogging/classes
}

# --- pcollections 4.0.1, hrldcpr/pcollections tag v4.0.1 (module-info.java left out: Java 8 level) ---
dep_pcollections() {
  src pcollections hrldcpr+pcollections/repo v4.0.1 src/main
  rm -f $DSRC/pcollections/src/main/java/module-info.java
  javac_ $DSRC/pcollections/classes "" $(find $DSRC/pcollections/src/main/java -name '*.java')
  jarit $DEPS/pcollections-4.0.1.jar $DSRC/pcollections/classes
}

# --- opentelemetry-proto 1.0.0: the .proto files of open-telemetry/opentelemetry-proto tag v1.0.0 through
#     protoc --java_out (Debian protobuf-compiler, the same 3.21.12 as the runtime jar); upstream has no Java source ---
dep_otelproto() {
  src otelproto open-telemetry+opentelemetry-proto/repo v1.0.0 opentelemetry
  mkdir -p $DSRC/otelproto/java
  (cd $DSRC/otelproto && protoc --java_out=java $(find opentelemetry -name '*.proto'))
  javac_ $DSRC/otelproto/classes "$DEPS/protobuf-java-3.21.12.jar" $(find $DSRC/otelproto/java -name '*.java')
  jarit $DEPS/opentelemetry-proto-1.0.0-alpha.jar $DSRC/otelproto/classes
}

# --- google-java-format 1.11.0 (build time only: caffeine's code generators format their output with it),
#     google/google-java-format tag v1.11.0 ---
dep_gjf() {
  src gjf google+google-java-format/repo v1.11.0 core/src/main/java
  local G=$DSRC/gjf/core/src/main/java/com/google/googlejavaformat/java
  sed 's/%VERSION%/1.11.0/' $G/GoogleJavaFormatVersion.java.template > $G/GoogleJavaFormatVersion.java
  JAVAC_LEVEL="-source 17 -target 17 $EXPORTS" javac_ $DSRC/gjf/classes "$GUAVA" $(find $DSRC/gjf/core/src/main/java -name '*.java')
  jarit $DSRC/google-java-format-1.11.0.jar $DSRC/gjf/classes
}

# --- caffeine 2.9.3, ben-manes/caffeine tag v2.9.3, with its own code generation (Debian's 2.6.2 lacks
#     Caffeine.evictionListener, which RemoteIndexCache uses); -source 8 -target 8 for sun.misc.Unsafe ---
dep_caffeine() {
  src caffeine ben-manes+caffeine/repo v2.9.3 caffeine/src/main caffeine/src/javaPoet
  local CF=$DSRC/caffeine/caffeine/src
  local POETCP=$CF/javaPoet/resources:/usr/share/java/javapoet.jar:/usr/share/java/commons-lang3.jar:$GUAVA:$DSRC/google-java-format-1.11.0.jar
  JAVAC_LEVEL="--release 17" javac_ $DSRC/caffeine/poet "$POETCP" $(find $CF/javaPoet/java -name '*.java')
  mkdir -p $DSRC/caffeine/generated
  for gen in LocalCacheFactoryGenerator NodeFactoryGenerator; do
    $NICE java $EXPORTS -cp "$DSRC/caffeine/poet:$POETCP" com.github.benmanes.caffeine.cache.$gen $DSRC/caffeine/generated
  done
  echo "  caffeine: $(find $DSRC/caffeine/generated -name '*.java' | wc -l) generated files"
  JAVAC_LEVEL="-source 8 -target 8" javac_ $DSRC/caffeine/classes "/usr/share/java/checker-qual.jar:/usr/share/java/error_prone_annotations.jar" \
    $(find $CF/main/java $DSRC/caffeine/generated -name '*.java')
  jarit $DEPS/caffeine-2.9.3.jar $DSRC/caffeine/classes $CF/main/resources
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(pyspark debian yammer argparse4j jose4j jcsv sccompat j8compat slogging pcollections otelproto gjf caffeine)
for s in "${steps[@]}"; do ts=$(date +%s); "dep_$s"; echo "-- $s ($(( $(date +%s) - ts ))s)"; done
ls -la $DEPS
echo "01-deps-3.9 ${steps[*]} done in $(( $(date +%s) - t0 ))s"
