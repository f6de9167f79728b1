#!/usr/bin/env bash
# Runs README command one (./scripts/run.sh) on a temporary data directory
# and port, checks that it prints how to connect and that the schema is
# there, then stops it with SIGINT and checks that it exits cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

data=$(mktemp -d)
log=$(mktemp)
port=${SMOKE_PORT:-18123}
cleanup() { kill "$pid" 2>/dev/null || true; rm -rf "$data" "$log"; }

./scripts/run.sh -embedded.data-dir "$data" -embedded.listen-address "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
trap cleanup EXIT

for _ in $(seq 1 120); do
  grep -q "Stop with Ctrl-C" "$log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "smoke: run.sh exited early" >&2; exit 1; }
  sleep 1
done
grep -q "ClickHouse HTTP interface: http://127.0.0.1:$port" "$log" || { cat "$log"; echo "smoke: no connection info printed" >&2; exit 1; }

query="SELECT%20count()%20FROM%20system.tables%20WHERE%20database%3D'otel'%20AND%20name%20LIKE%20'otel_profile_%25'"
tables=$(node -e 'fetch(process.argv[1]).then(r => r.text()).then(t => process.stdout.write(t.trim())).catch(e => { console.error(e); process.exit(1); })' \
  "http://127.0.0.1:$port/?query=$query")
echo "smoke: $tables Flamehouse tables and views in database otel"
[ "$tables" -ge 9 ] || { cat "$log"; echo "smoke: schema missing" >&2; exit 1; }

kill -INT "$pid"
wait "$pid"
grep -q "embedded clickhouse stopped" "$log" || { cat "$log"; echo "smoke: no clean shutdown" >&2; exit 1; }
echo "smoke: clean shutdown"
