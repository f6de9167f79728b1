#!/usr/bin/env bash
# Sets up and starts Flamehouse's main job on the embedded default: the
# embedded ClickHouse engine (data in ./data/clickhouse) with the profile
# schema applied, serving ClickHouse's HTTP interface on 127.0.0.1:8123.
# It prints how to connect. Extra arguments go to `flamehouse run`, e.g.
#   ./scripts/run.sh -config.file flamehouse.yaml
#   ./scripts/run.sh -embedded.listen-address 127.0.0.1:18123
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "==> go build -o bin/flamehouse ./cmd/flamehouse"
go build -o bin/flamehouse ./cmd/flamehouse
exec bin/flamehouse run "$@"
