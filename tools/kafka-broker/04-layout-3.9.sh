#!/bin/bash
# Kafka 3.9.0-rc3, step 4: lay out /opt/kafka-3.9.0-rc3 like a release: bin/ (Kafka's own scripts),
# config/, libs/ (Kafka's jars + the runtime third-party jars), and rsm/: the two small test jars
# holding Kafka's LocalTieredStorage, kept outside libs/ (remote.log.storage.manager.class.path).
set -euo pipefail
export KAFKA_VERSION=3.9.0-rc3
. "$(dirname "$0")/00-env.sh"
rm -rf "$KH"; mkdir -p "$KH/libs" "$KH/rsm"
cp -r "$KSRC/bin" "$KSRC/config" "$KH/"
chmod +x "$KH"/bin/*.sh
cp "$KSRC/LICENSE" "$KSRC/NOTICE" "$KH/"
cp "$OUTJ"/kafka*.jar "$KH/libs/"
cp "$OUTJ"/rsm-kafka-storage-3.9.0-test.jar "$KH/rsm/kafka-storage-3.9.0-test.jar"
cp "$OUTJ"/rsm-kafka-clients-3.9.0-test.jar "$KH/rsm/kafka-clients-3.9.0-test.jar"
# every third-party jar collected by 01-deps-3.9.sh is a runtime jar but the Scala compiler
for j in "$DEPS"/*.jar; do
  case $(basename "$j") in scala-compiler-*) continue ;; esac
  cp "$j" "$KH/libs/"
done
# what was built: the git tag (its gradle.properties says 3.9.0) and commit (tests/helpers/kafka_dist.py reads it)
printf 'tag=%s\ncommit=%s\nbuilt-by=tools/kafka-broker/build-all-3.9.sh (from source)\n' "$KAFKA_VERSION" \
  "$(git -C "$KAFKA_GIT" rev-parse "$KAFKA_VERSION^{commit}")" > "$KH/BUILD-INFO"
# provenance of every jar
(cd "$KH" && sha256sum libs/*.jar rsm/*.jar) > "$KH/libs.sha256"
echo "laid out $KH: $(ls "$KH/libs" | wc -l) jars in libs/, $(ls "$KH/rsm" | wc -l) in rsm/"
