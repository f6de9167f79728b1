#!/usr/bin/env bash
# Runs every test: vet and lint, Go unit and integration tests (against the
# embedded ClickHouse engine, or FLAMEHOUSE_CLICKHOUSE_URL), benchmarks once,
# the frontend's typecheck, lint, Jest and build, the plugin backend build,
# and a smoke test of ./scripts/run.sh. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

GOLANGCI_LINT_VERSION=v2.15.0
# Explicit patterns: ./... would also walk node_modules, which holds Go files.
GO_PKGS=(./cmd/... ./internal/... ./pkg/...)
step() { printf '\n==> %s\n' "$*"; }

./scripts/setup.sh

step "go vet"
go vet "${GO_PKGS[@]}"

step "golangci-lint ${GOLANGCI_LINT_VERSION}"
go run "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}" run "${GO_PKGS[@]}"

step "go test: unit and integration tests (embedded ClickHouse unless FLAMEHOUSE_CLICKHOUSE_URL is set)"
# The race detector needs cgo, hence a C compiler; without one the tests
# still run, purego loads libchdb without cgo.
race=()
if command -v gcc >/dev/null 2>&1; then race=(-race); else echo "(no gcc: running without the race detector)"; fi
go test -count=1 "${race[@]}" "${GO_PKGS[@]}"

step "go test: short fuzz runs of the parsers (longer: see README)"
for target in "FuzzInspect ./pkg/chembed" "FuzzConvert ./pkg/ingest/convert" "FuzzDecode ./pkg/ingest/otlpwire" "FuzzUnmarshalJSON ./pkg/ingest/receiver" "FuzzParse ./pkg/query/selector"; do
  set -- $target
  go test -run '^$' -fuzz "^$1\$" -fuzztime "${FUZZTIME:-10s}" "$2"
done

step "go test: every benchmark once, so none rots"
go test -count=1 -run '^$' -bench . -benchtime 1x "${GO_PKGS[@]}"

step "frontend: typecheck, lint, format, Jest"
npm run typecheck
npm run lint
npm run format:check
npm run test:ci

step "browser e2e specs: run against GRAFANA_URL, else listed as skipped with the reason"
if [ -z "${GRAFANA_URL:-}" ]; then
  echo "GRAFANA_URL is not set: no Grafana to run the browser tests against (see docs/grafana.md)"
fi
npm run e2e

step "plugin: frontend bundle and backend binary (dist/)"
npm run build
go tool mage -v build:linux
for f in dist/plugin.json dist/module.js dist/gpx_flamehouse_linux_amd64; do
  [ -s "$f" ] || { echo "missing build output: $f" >&2; exit 1; }
done

step "smoke: ./scripts/run.sh starts the engine with the schema"
./scripts/smoke.sh
echo
echo "All tests passed."
