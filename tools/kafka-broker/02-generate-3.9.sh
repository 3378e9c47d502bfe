#!/bin/bash
# Kafka 3.9.0-rc3, step 2: 02-generate.sh for tag 3.9.0-rc3.
KAFKA_VERSION=3.9.0-rc3 exec bash "$(dirname "$0")/02-generate.sh" "$@"
