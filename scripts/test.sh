#!/usr/bin/env bash
# Runs every test: vet and lint, Go unit and integration tests (against the
# embedded ClickHouse engine, or FLAMEHOUSE_CLICKHOUSE_URL), short fuzz runs,
# benchmarks once, the frontend's typecheck, lint and Jest, the plugin's
# release zip, the browser specs in a real Grafana installed from that zip
# (scripts/e2e.sh: GRAFANA_URL, GRAFANA_HOME, GRAFANA_TARBALL or
# ../shared/grafana; skipped with the reason when there is none, failed when
# FLAMEHOUSE_E2E_REQUIRE=1), and a smoke test of ./scripts/run.sh. Exits
# non-zero on any failure.
#
# Stages, in the order they run: lint, go, fuzz, bench, frontend, package,
# e2e, smoke. Name some to run only those, e.g. `./scripts/test.sh lint go`
# or `./scripts/test.sh e2e` (which builds the release zip itself when the
# package stage did not run).
set -euo pipefail
cd "$(dirname "$0")/.."

STAGES=(lint go fuzz bench frontend package e2e smoke)
if [ "$#" -gt 0 ]; then
  for stage in "$@"; do
    [[ " ${STAGES[*]} " == *" $stage "* ]] || { echo "unknown stage: $stage (stages: ${STAGES[*]})" >&2; exit 2; }
  done
  selected=" $* "
else
  selected=" ${STAGES[*]} "
fi
wanted() { [[ "$selected" == *" $1 "* ]]; }

GOLANGCI_LINT_VERSION=v2.15.0
# Explicit patterns: ./... would also walk node_modules, which holds Go files.
GO_PKGS=(./cmd/... ./internal/... ./pkg/...)
# The Collector exporter is a Go module of its own, out of GO_PKGS' reach.
EXPORTER=collector/flamehouseexporter
step() { printf '\n==> %s\n' "$*"; }

if wanted e2e; then ./scripts/setup.sh --browser; else ./scripts/setup.sh; fi

stage_lint() {
  step "go vet"
  go vet "${GO_PKGS[@]}"
  (cd "$EXPORTER" && go vet ./...)
  step "golangci-lint ${GOLANGCI_LINT_VERSION} (both modules, the repository's .golangci.yml)"
  go run "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}" run "${GO_PKGS[@]}"
  (cd "$EXPORTER" && go run "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}" run ./...)
  step "the exporter's generated files are what its metadata.yaml generates (mdatagen, pinned in collector/tools)"
  local tmp
  tmp=$(mktemp -d)
  cp -r "$EXPORTER" "$tmp/"
  go -C collector/tools tool mdatagen "$tmp/flamehouseexporter/metadata.yaml"
  if ! diff -r "$EXPORTER" "$tmp/flamehouseexporter"; then
    rm -rf "$tmp"
    echo "the generated files differ: run 'go generate ./...' in $EXPORTER and commit the result" >&2
    return 1
  fi
  rm -rf "$tmp"
}

stage_go() {
  step "go test: unit and integration tests (embedded ClickHouse unless FLAMEHOUSE_CLICKHOUSE_URL is set), both modules"
  # internal/integration/ebpfagent runs the real eBPF profiler from
  # ../shared/ebpf-profiler: it needs root (CI runs as root), BTF and tracefs
  # (mounted by the test when missing). Elsewhere it skips and says why; under
  # FLAMEHOUSE_E2E_REQUIRE=1 (.ci/run) it fails instead.
  if [ "$(id -u)" != 0 ]; then echo "(not root: the eBPF profiler test skips, or fails under FLAMEHOUSE_E2E_REQUIRE=1)"; fi
  # The race detector needs cgo, hence a C compiler; without one the tests
  # still run, purego loads libchdb without cgo.
  local race=()
  if command -v gcc >/dev/null 2>&1; then race=(-race); else echo "(no gcc: running without the race detector)"; fi
  go test -count=1 "${race[@]}" "${GO_PKGS[@]}"
  (cd "$EXPORTER" && go test -count=1 "${race[@]}" ./...)
}

# fuzz TARGET PACKAGE runs one target for FUZZTIME. Go 1.26's fuzz
# coordinator can end a run with a bare "context deadline exceeded" when a
# worker is still busy as -fuzztime expires (go.dev/issue/75804, fixed in Go
# 1.27): no input failed and none is written. That case alone runs again;
# a failing input (written under testdata/fuzz) or any other error fails.
fuzz() {
  local out attempt mod=. pkg=$2
  case $2 in # the Collector exporter is a module of its own
    ./$EXPORTER/*) mod=$EXPORTER pkg=./${2#./"$EXPORTER"/} ;;
  esac
  for attempt in 1 2 3; do
    # -fuzzminimizetime 0: no minimising. From a fresh checkout (empty fuzz
    # cache) the fuzzer minimises every new interesting input, the default
    # 60 s each (FuzzDecode executed 32 inputs in 10 s); even 1 s each left
    # FuzzRequest 198-9,000 executions. Without it every target executes
    # 35,000-330,000 inputs in 10 s on two cores; a failing input is still
    # written, unminimised.
    if out=$(go -C "$mod" test -run '^$' -fuzz "^$1\$" -fuzztime "${FUZZTIME:-10s}" -fuzzminimizetime "${FUZZMINIMIZETIME:-0}" "$pkg" 2>&1); then
      printf '%s: %s\n' "$1" "$(grep -o 'execs: [0-9]*.*' <<<"$out" | tail -n 1)"
      printf '%s\n' "$out" | tail -n 1
      return 0
    fi
    printf '%s\n' "$out"
    if ! grep -qx '    context deadline exceeded' <<<"$out" ||
      [ -n "$(git status --porcelain --untracked-files=all -- "$2/testdata/fuzz" 2>/dev/null)" ]; then
      return 1
    fi
    echo "fuzz: $1 stopped on Go's fuzz-deadline race (go.dev/issue/75804), no failing input (attempt $attempt of 3)"
  done
  return 1
}

# The fuzz targets, as the README's table lists them.
FUZZ_TARGETS=(
  "FuzzInspect ./pkg/chembed/sqlguard"
  "FuzzConvert ./pkg/ingest/convert"
  "FuzzDecode ./pkg/ingest/otlpwire"
  "FuzzUnmarshalJSON ./pkg/ingest/receiver"
  "FuzzParse ./pkg/query/selector"
  "FuzzExtract ./pkg/symbols"
  "FuzzRequest ./$EXPORTER/internal/pdatawire"
)

stage_fuzz() {
  step "go test: short fuzz runs of the parsers (longer: see README)"
  local target
  for target in "${FUZZ_TARGETS[@]}"; do
    # shellcheck disable=SC2086 # a target and its package
    fuzz $target
  done
}

stage_bench() {
  step "go test: every benchmark once, so none rots"
  # BenchmarkPeer (internal/integration/peer) loads 24 h of sparse data, 600 s
  # of dense data, 60 s of W-cluster node reports and an hour of one host's
  # reports by default (go tool mage bench), then records the real eBPF
  # profiler on this host for an hour (the live phase); one hour, 10 s, 5 s,
  # 10 minutes and 2 minutes of recording keep this step quick. The live
  # phase needs root and the agent from ../shared/ebpf-profiler (a failure
  # under FLAMEHOUSE_E2E_REQUIRE=1 when it cannot run, skipped elsewhere).
  # It runs Grafana Pyroscope from ../shared/pyroscope (a failure under
  # FLAMEHOUSE_E2E_REQUIRE=1 when it is missing).
  FLAMEHOUSE_PEER_HOURS="${FLAMEHOUSE_PEER_HOURS:-1}" FLAMEHOUSE_PEER_DENSE_SECONDS="${FLAMEHOUSE_PEER_DENSE_SECONDS:-10}" \
    FLAMEHOUSE_PEER_CLUSTER_SECONDS="${FLAMEHOUSE_PEER_CLUSTER_SECONDS:-5}" FLAMEHOUSE_PEER_AGENT_MINUTES="${FLAMEHOUSE_PEER_AGENT_MINUTES:-10}" \
    FLAMEHOUSE_PEER_LIVE_MINUTES="${FLAMEHOUSE_PEER_LIVE_MINUTES:-2}" \
    go test -count=1 -run '^$' -bench . -benchtime 1x "${GO_PKGS[@]}"
  (cd "$EXPORTER" && go test -count=1 -run '^$' -bench . -benchtime 1x ./...)
}

stage_frontend() {
  step "frontend: typecheck, lint, format, Jest"
  npm run typecheck
  npm run lint
  npm run format:check
  npm run test:ci
}

stage_package() {
  step "plugin: the release zip (frontend and six backends in dist/, go tool mage package)"
  local started=$SECONDS f
  go tool mage package
  for f in dist/plugin.json dist/module.js dist/gpx_flamehouse_linux_amd64; do
    [ -s "$f" ] || { echo "missing build output: $f" >&2; exit 1; }
  done
  echo "release zip built in $((SECONDS - started)) s"
}

stage_e2e() {
  step "browser specs in a real Grafana with the plugin installed from the zip (scripts/e2e.sh)"
  local started=$SECONDS zip=
  # The zip the package stage built; without that stage e2e.sh builds one.
  if wanted package; then zip=$(ls -t release/flamehouse-profiles-datasource-*.zip | head -n 1); fi
  FLAMEHOUSE_PLUGIN_ZIP=$zip ./scripts/e2e.sh
  echo "browser step took $((SECONDS - started)) s"
}

stage_smoke() {
  step "smoke: ./scripts/run.sh starts the engine with the schema"
  ./scripts/smoke.sh
}

for stage in "${STAGES[@]}"; do
  if wanted "$stage"; then "stage_$stage"; fi
done
echo
echo "All tests passed:${selected% }."
