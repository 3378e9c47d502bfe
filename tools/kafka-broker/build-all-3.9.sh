#!/bin/bash
# Build Kafka 3.9.0-rc3 from source into /opt/kafka-3.9.0-rc3, from scratch, then smoke-test it with
# tiered storage. Prerequisites: README.md ("Kafka 3.9.0-rc3"). The 3.3.1 build (build-all.sh) is separate
# and untouched: its own build root /opt/kafka-build and install /opt/kafka-3.3.1.
set -euo pipefail
H=$(cd "$(dirname "$0")" && pwd)
export KAFKA_VERSION=3.9.0-rc3
. "$H/00-env.sh"
[ "${CLEAN:-1}" = 1 ] && rm -rf "$DEPS" "$DSRC" "$B/classes" "$B/gen" "$OUTJ" "$B/generator.jar" "$KSRC"
T=$(date +%s)
step() { local s=$(date +%s); echo "### $*"; bash "$H/$1" "${@:2}"; echo "### $1: $(( $(date +%s) - s ))s"; }
step 01-deps-3.9.sh
step 02-generate-3.9.sh
step 03-compile-3.9.sh
step 04-layout-3.9.sh
echo "### build $(( $(date +%s) - T ))s"
PY=${KAFKA_PY:-}
if [ -z "$PY" ]; then
  if /opt/kafka-build/venv/bin/python -c 'import kafka' 2>/dev/null; then PY=/opt/kafka-build/venv/bin/python
  else
    [ -x "$B/venv/bin/python" ] || { python3 -m venv "$B/venv"; "$B/venv/bin/pip" install -q 'kafka-python[lz4,snappy]' zstandard; }
    PY=$B/venv/bin/python
  fi
fi
step 05-smoke-3.9.sh "$PY"
echo "### total $(( $(date +%s) - T ))s"
