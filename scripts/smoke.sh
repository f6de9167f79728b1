#!/usr/bin/env bash
# Runs README command one (./scripts/run.sh) on a temporary data directory
# and free ports (every listener), checks that it prints how to connect and that the schema is
# there, waits for the demo traces (a span in otel_traces whose id CPU
# samples carry), then stops it with SIGINT and checks that it exits cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

data=$(mktemp -d)
log=$(mktemp)
# free_port prints a TCP port free on loopback now, so that the smoke test
# runs next to another Flamehouse (8123, 4317, 4318 taken) or a second run.
free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}
port=${SMOKE_PORT:-$(free_port)}
grpc_port=${SMOKE_GRPC_PORT:-$(free_port)}
http_port=${SMOKE_HTTP_PORT:-$(free_port)}
pyroscope_port=${SMOKE_PYROSCOPE_PORT:-$(free_port)}
cleanup() { kill "$pid" 2>/dev/null || true; rm -rf "$data" "$log"; }

./scripts/run.sh -embedded.data-dir "$data" -embedded.listen-address "127.0.0.1:$port" \
  -ingest.grpc-listen-address "127.0.0.1:$grpc_port" -ingest.http-listen-address "127.0.0.1:$http_port" \
  -pyroscope-api.listen-address "127.0.0.1:$pyroscope_port" >"$log" 2>&1 &
pid=$!
trap cleanup EXIT

for _ in $(seq 1 120); do
  grep -q "Stop with Ctrl-C" "$log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "smoke: run.sh exited early" >&2; exit 1; }
  sleep 1
done
started=$(date +%s)
grep -q "ClickHouse HTTP interface: http://127.0.0.1:$port" "$log" || { cat "$log"; echo "smoke: no connection info printed" >&2; exit 1; }

# query SQL: the answer's text over ClickHouse's HTTP interface (the SQL in
# the POST body); it fails on an error answer.
query() {
  node -e 'fetch(process.argv[1], {method: "POST", body: process.argv[2]})
    .then(async r => { const t = await r.text(); if (!r.ok) throw new Error(t); process.stdout.write(t.trim()); })
    .catch(e => { console.error(e.message); process.exit(1); })' "http://127.0.0.1:$port/" "$1"
}

tables=$(query "SELECT count() FROM system.tables WHERE database = 'otel' AND name LIKE 'otel_profile_%'")
echo "smoke: $tables Flamehouse tables and views in database otel"
[ "$tables" -ge 9 ] || { cat "$log"; echo "smoke: schema missing" >&2; exit 1; }

# The demo: flamehouse traces its own work into otel_traces, and its CPU
# samples carry the spans they were taken in. Wait for a span with samples.
linked_spans="SELECT count() FROM otel.otel_traces WHERE SpanId IN (SELECT SpanId FROM otel.otel_profile_samples WHERE SpanId != '')"
while :; do
  linked=$(query "$linked_spans" 2>/dev/null || echo 0)
  waited=$(($(date +%s) - started))
  [ "$linked" -gt 0 ] 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "smoke: flamehouse exited while waiting for the demo traces" >&2; exit 1; }
  [ "$waited" -lt 120 ] || { cat "$log"; echo "smoke: no span with CPU samples in otel_traces ${waited}s after start" >&2; exit 1; }
  sleep 2
done
echo "smoke: demo traces after ${waited}s: $linked spans in otel.otel_traces have CPU samples"

# The Pyroscope-compatible query API (docs/pyroscope-api.md) lists the
# demo's profile types, as Grafana's Pyroscope datasource asks for them.
types=$(node -e 'fetch(process.argv[1], {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"})
  .then(async r => { const t = await r.text(); if (!r.ok) throw new Error(t); process.stdout.write(t); })
  .catch(e => { console.error(e.message); process.exit(1); })' "http://127.0.0.1:$pyroscope_port/querier.v1.QuerierService/ProfileTypes") ||
  { cat "$log"; echo "smoke: the Pyroscope API did not answer" >&2; exit 1; }
echo "$types" | grep -q '"process_cpu:cpu:nanoseconds:cpu:nanoseconds"' ||
  { echo "$types"; echo "smoke: the Pyroscope API lists no CPU profile type" >&2; exit 1; }
echo "smoke: the Pyroscope API on $pyroscope_port lists the demo's profile types"

kill -INT "$pid"
wait "$pid"
grep -q "embedded clickhouse stopped" "$log" || { cat "$log"; echo "smoke: no clean shutdown" >&2; exit 1; }
echo "smoke: clean shutdown"
