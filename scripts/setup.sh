#!/usr/bin/env bash
# Installs what Flamehouse needs on a Debian machine that has Go and Node:
# the npm packages (frontend toolchain and @chdb/lib-linux-x64-gnu, the
# embedded ClickHouse engine) and the Go modules. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: $1 is required ($2)" >&2; exit 1; }
}
need go "Go 1.26 or newer, https://go.dev/dl/"
need node "Node.js 20 or newer"
need npm "npm, comes with Node.js"

# npm ci only when node_modules is missing or older than the lock file.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "==> npm ci (frontend toolchain and the embedded ClickHouse engine, ~170 MB download)"
  npm ci --no-audit --no-fund
fi
if [ ! -f node_modules/@chdb/lib-linux-x64-gnu/libchdb.so ]; then
  echo "error: node_modules/@chdb/lib-linux-x64-gnu/libchdb.so is missing; the embedded engine needs Linux x86-64 with glibc" >&2
  exit 1
fi
go mod download
