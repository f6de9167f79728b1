#!/usr/bin/env bash
# Runs the browser specs (tests/*.spec.ts, @grafana/plugin-e2e + Playwright)
# headless in Debian's Chromium against a real Grafana that has the plugin
# installed from its release zip, the project's provisioning and examples,
# and the README's main job (`flamehouse run`: embedded ClickHouse, ingest,
# self-profiling and self-tracing demo data) behind it.
#
# Where the Grafana comes from, first match wins:
#   GRAFANA_URL       a running Grafana, set up by you (docs/grafana.md,
#                     "End-to-end tests"): the specs run against it as it is;
#   GRAFANA_HOME      an unpacked Grafana (with bin/grafana), or
#   GRAFANA_TARBALL   a Grafana linux tarball (.tar.gz or .tar.xz);
#   ../shared/grafana/grafana-*-linux-amd64.tar.xz next to the checkout.
# With none of these the specs are skipped, each saying why. With
# FLAMEHOUSE_E2E_REQUIRE=1 (CI sets it) a skipped spec fails the run.
#
# As root it also runs the OpenTelemetry eBPF profiler from
# ../shared/ebpf-profiler (or FLAMEHOUSE_EBPF_PROFILER, its .xz) against the
# same ingest, for tests/ebpf.spec.ts, and stops it at the end; where it
# cannot run, those specs skip with the reason.
#
# Other settings: FLAMEHOUSE_PLUGIN_ZIP (a built release zip; default: build
# one with `go tool mage package`), CHROMIUM_PATH (default /usr/bin/chromium),
# FLAMEHOUSE_E2E_ARTIFACTS (screenshots, logs and traces; default
# test-results/e2e). Ports are picked free; everything started is stopped.
# FLAMEHOUSE_E2E_SERVE=1 sets everything up, prints the environment to run
# specs against it (GRAFANA_URL=... npx playwright test ...) and waits for
# Ctrl-C instead of running them: for writing specs, or trying by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
artifacts=${FLAMEHOUSE_E2E_ARTIFACTS:-$root/test-results/e2e}
mkdir -p "$artifacts"
export FLAMEHOUSE_E2E_ARTIFACTS=$artifacts

log() { printf 'e2e: %s\n' "$*"; }
die() { printf 'e2e: %s\n' "$*" >&2; exit 1; }
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND once a second.
wait_for() {
  local what=$1 limit=$2 start=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - start < limit)) || return 1
    sleep 1
  done
  log "$what after $((SECONDS - start)) s"
}

# Runs the specs with what the environment gives and prints the counts.
run_specs() {
  local json=$artifacts/results.json status=0
  PLAYWRIGHT_JSON_OUTPUT_NAME=$json npx playwright test --reporter=list,json "$@" || status=$?
  node scripts/e2e-summary.mjs "$json" || status=1
  return $status
}

# A Grafana that is already running: only the specs.
if [ -n "${GRAFANA_URL:-}" ]; then
  log "running the specs against GRAFANA_URL=$GRAFANA_URL as it is set up"
  run_specs "$@"
  exit
fi

grafana_home=${GRAFANA_HOME:-}
tarball=${GRAFANA_TARBALL:-}
if [ -z "$grafana_home" ] && [ -z "$tarball" ]; then
  tarball=$(ls "$root"/../shared/grafana/grafana-*-linux-amd64.tar.* 2>/dev/null | head -n 1 || true)
fi
chromium=${CHROMIUM_PATH:-/usr/bin/chromium}
reason=
if [ -z "$grafana_home" ] && [ -z "$tarball" ]; then
  reason="no Grafana: set GRAFANA_URL, GRAFANA_HOME or GRAFANA_TARBALL (docs/grafana.md)"
elif [ ! -x "$chromium" ]; then
  reason="no Chromium at $chromium: apt-get install chromium, or set CHROMIUM_PATH"
fi
if [ -n "$reason" ]; then
  log "$reason"
  export FLAMEHOUSE_E2E_SKIP_REASON=$reason
  run_specs "$@"
  exit
fi

work=$(mktemp -d)
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do
    kill -INT "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  cp "$work"/*.log "$artifacts"/ 2>/dev/null || true
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT

# ---- Tempo (docs/navigation.md, tests/tempo.spec.ts) --------------------
# A real Grafana Tempo from ../shared/tempo (or TEMPO_XZ, the .xz of its
# binary, with tempo.yaml beside it) on free ports and its own data
# directory, started here so that it is ready (about 15 s) by the time
# flamehouse run starts: flamehouse run sends its self-tracing spans to it
# too (tempo_flags), and the provisioned Tempo datasources point at it.
# Without it the Tempo specs skip with the reason (a failure under
# FLAMEHOUSE_E2E_REQUIRE=1). Stopped with SIGKILL: on SIGTERM Tempo may
# flush for minutes, and its data directory is thrown away anyway.
tempo_xz=${TEMPO_XZ:-$root/../shared/tempo/tempo-linux-amd64.xz}
tempo_flags=()
tempo_url=
if [ -f "$tempo_xz" ] && [ -f "$(dirname "$tempo_xz")/tempo.yaml" ]; then
  tempo_bin=${XDG_CACHE_HOME:-$HOME/.cache}/flamehouse/tempo/tempo-$(sha256sum "$tempo_xz" | cut -c 1-16)
  if [ ! -x "$tempo_bin" ]; then
    log "unpacking $tempo_xz"
    mkdir -p "$(dirname "$tempo_bin")"
    xz -dc "$tempo_xz" >"$tempo_bin.$$" && chmod +x "$tempo_bin.$$" && mv "$tempo_bin.$$" "$tempo_bin"
  fi
  tempo_http=$(free_port) tempo_grpc=$(free_port) tempo_otlp_grpc=$(free_port) tempo_otlp_http=$(free_port)
  mkdir -p "$work/tempo"
  sed -e "s/http_listen_port: 3200\b/http_listen_port: $tempo_http/" \
    -e "s/grpc_listen_port: 9096\b/grpc_listen_port: $tempo_grpc/" \
    -e "s/127.0.0.1:34317/127.0.0.1:$tempo_otlp_grpc/; s/127.0.0.1:34318/127.0.0.1:$tempo_otlp_http/" \
    "$(dirname "$tempo_xz")/tempo.yaml" >"$work/tempo.yaml"
  for port in "$tempo_http" "$tempo_grpc" "$tempo_otlp_grpc" "$tempo_otlp_http"; do
    grep -q "$port" "$work/tempo.yaml" || die "$(dirname "$tempo_xz")/tempo.yaml: could not move its ports (is its layout new?)"
  done
  # node passes SIGINT on as SIGKILL (a background bash would ignore it).
  TEMPO_DATA=$work/tempo node -e 'const c = require("child_process").spawn(process.argv[1], process.argv.slice(2), { stdio: "inherit" });
    process.on("SIGINT", () => c.kill("SIGKILL")); c.on("exit", (code) => process.exit(code ?? 1));' \
    "$tempo_bin" -config.file "$work/tempo.yaml" -config.expand-env=true >"$work/tempo.log" 2>&1 &
  pids+=($!)
  tempo_url=http://127.0.0.1:$tempo_http
  tempo_flags=(-selfprofile.traces-otlp-endpoint "http://127.0.0.1:$tempo_otlp_http")
  export FLAMEHOUSE_E2E_TEMPO=$tempo_url
  log "starting Tempo on $tempo_url (OTLP/HTTP on $tempo_otlp_http)"
else
  export FLAMEHOUSE_E2E_TEMPO_SKIP_REASON="no Tempo: $tempo_xz (and tempo.yaml beside it) is missing; set TEMPO_XZ"
  log "$FLAMEHOUSE_E2E_TEMPO_SKIP_REASON"
fi
# ---- end of Tempo --------------------------------------------------------

# The Grafana: unpacked once into a cache directory, reused by later runs.
if [ -z "$grafana_home" ]; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/flamehouse/grafana
  name=$(basename "$tarball")
  name=${name%.tar.*}
  grafana_home=$cache/$name
  if [ ! -x "$grafana_home/bin/grafana" ]; then
    log "unpacking $tarball"
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/.unpack-XXXXXX")
    tar -xf "$tarball" -C "$tmp"
    inner=$(find "$tmp" -mindepth 2 -maxdepth 3 -path '*/bin/grafana' -type f | head -n 1)
    [ -n "$inner" ] || die "$tarball holds no bin/grafana"
    rm -rf "$grafana_home"
    mv "$(dirname "$(dirname "$inner")")" "$grafana_home"
    rm -rf "$tmp"
  fi
fi
[ -x "$grafana_home/bin/grafana" ] || die "$grafana_home/bin/grafana is missing"

# The plugin, as a user installs it: the release zip.
zip=${FLAMEHOUSE_PLUGIN_ZIP:-}
if [ -z "$zip" ]; then
  log "building the release zip (go tool mage package)"
  go tool mage package
  zip=$(ls -t release/flamehouse-profiles-datasource-*.zip | head -n 1)
fi
[ -f "$zip" ] || die "no plugin zip at $zip"

# ---- Pyroscope API (docs/pyroscope-api.md, tests/pyroscope-api.spec.ts) ---
# flamehouse run serves the Pyroscope-compatible query API on a free port;
# the Pyroscope datasource of provisioning/examples/pyroscope-api.yaml is
# pointed at it (scripts/e2e-provisioning.mjs reads the port).
pyroscope_api_port=$(free_port)
pyroscope_api_flags=(-pyroscope-api.listen-address "127.0.0.1:$pyroscope_api_port")
export FLAMEHOUSE_E2E_PYROSCOPE_API_PORT=$pyroscope_api_port
export FLAMEHOUSE_E2E_PYROSCOPE_API=http://127.0.0.1:$pyroscope_api_port
log "the Pyroscope API will listen on $FLAMEHOUSE_E2E_PYROSCOPE_API"
# ---- end of Pyroscope API -------------------------------------------------

# The README's main job on free ports and a fresh data directory.
ch_port=$(free_port)
grpc_port=$(free_port)
http_port=$(free_port)
go build -o "$work/flamehouse" ./cmd/flamehouse
# Tempo takes the self-tracing spans from the start (tempo_flags).
if [ -n "$tempo_url" ]; then
  wait_for "Tempo is ready" 90 node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$tempo_url/ready" ||
    { cat "$work/tempo.log"; die "Tempo did not start"; }
fi
"$work/flamehouse" run -embedded.data-dir "$work/clickhouse" -embedded.listen-address "127.0.0.1:$ch_port" \
  -ingest.grpc-listen-address "127.0.0.1:$grpc_port" -ingest.http-listen-address "127.0.0.1:$http_port" \
  "${tempo_flags[@]}" \
  "${pyroscope_api_flags[@]}" \
  >"$work/flamehouse.log" 2>&1 &
pids+=($!)
ch="http://127.0.0.1:$ch_port"
started=$SECONDS
sql() { node scripts/e2e-sql.mjs "$ch" "$1"; }
wait_for "flamehouse run is up" 120 grep -q "Stop with Ctrl-C" "$work/flamehouse.log" ||
  { cat "$work/flamehouse.log"; die "flamehouse run did not start"; }

# The OpenTelemetry eBPF profiler (../shared/ebpf-profiler, or the .xz at
# FLAMEHOUSE_EBPF_PROFILER) against the same ingest, for tests/ebpf.spec.ts:
# real agent data, processes without service.name, typed and kernel frames.
# It needs root; started now, it reports while the demo data fills. Without
# it the agent's specs skip with the reason (a failure under REQUIRE=1).
agent_reason=
agent_xz=${FLAMEHOUSE_EBPF_PROFILER:-$root/../shared/ebpf-profiler/ebpf-profiler-linux-amd64.xz}
if [ "$(id -u)" != 0 ]; then
  agent_reason="the eBPF profiler needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN): this run is not root"
elif [ ! -f "$agent_xz" ]; then
  agent_reason="no eBPF profiler at $agent_xz (set FLAMEHOUSE_EBPF_PROFILER to its .xz)"
elif ! xz -dc "$agent_xz" >"$work/ebpf-profiler" || ! chmod +x "$work/ebpf-profiler"; then
  agent_reason="could not unpack the eBPF profiler from $agent_xz"
elif ! { mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; }; then
  agent_reason="no tracefs at /sys/kernel/tracing, which the eBPF profiler attaches to"
else
  "$work/ebpf-profiler" -collection-agent "127.0.0.1:$grpc_port" -disable-tls -reporter-interval 5s >"$work/ebpf-profiler.log" 2>&1 &
  agent_pid=$!
  pids+=($agent_pid)
  log "started the eBPF profiler against the ingest (127.0.0.1:$grpc_port)"
fi

# Data for the exporter-table datasource: the same profiles through a real
# OpenTelemetry Collector with the contrib ClickHouse exporter (otel_profiles)
# and through Flamehouse's ingest.
log "loading the exporter-table fixture through a real Collector"
go run ./internal/e2edata -clickhouse "$ch" -database otel -ingest "http://127.0.0.1:$http_port" \
  >"$artifacts/exporter-fixture.json" 2>"$work/e2edata.log" ||
  { cat "$work/e2edata.log"; die "loading the exporter-table fixture failed"; }
export FLAMEHOUSE_E2E_EXPORTER_FIXTURE=$artifacts/exporter-fixture.json

# The demo data the specs look at: CPU and heap profiles of service
# flamehouse, and spans of its own traces with CPU samples.
linked="SELECT count() > 0 FROM otel.otel_profile_samples WHERE ServiceName = 'flamehouse' AND SpanId != ''
  AND SpanId IN (SELECT SpanId FROM otel.otel_traces WHERE ServiceName = 'flamehouse')"
heap="SELECT count() > 0 FROM otel.otel_profile_samples WHERE ServiceName = 'flamehouse' AND ProfileType LIKE 'memory:inuse_space%'"
has() { [ "$(sql "$1")" = 1 ]; }
wait_for "CPU samples linked to spans in otel_traces" 180 has "$linked" ||
  { cat "$work/flamehouse.log"; die "no span-linked CPU samples within 180 s"; }
wait_for "heap profiles" 60 has "$heap" || die "no heap profile"
log "demo data complete $((SECONDS - started)) s after start"

# The agent's data: samples of processes that send no service.name, with
# kernel frames. An agent that cannot load its eBPF programs exits.
if [ -z "$agent_reason" ]; then
  agent_data="SELECT (SELECT count() FROM otel.otel_profile_samples WHERE ServiceName LIKE 'unknown_service%') > 0
    AND (SELECT count() FROM otel.otel_profile_frames WHERE FrameType = 'kernel') > 0"
  agent_reports() { kill -0 "$agent_pid" && has "$agent_data"; }
  if wait_for "eBPF profiler samples with kernel frames" 90 agent_reports; then
    export FLAMEHOUSE_E2E_AGENT=1
  elif kill -0 "$agent_pid" 2>/dev/null; then
    agent_reason="the eBPF profiler runs but no sample of it was stored within 90 s (log: $artifacts/ebpf-profiler.log)"
  else
    agent_reason="the eBPF profiler exited: $(tail -n 1 "$work/ebpf-profiler.log" 2>/dev/null) (log: $artifacts/ebpf-profiler.log)"
  fi
fi
if [ -n "$agent_reason" ]; then
  log "$agent_reason: the eBPF profiler's specs are skipped"
  export FLAMEHOUSE_E2E_AGENT_SKIP_REASON=$agent_reason
fi

# Grafana with the plugin installed from the zip, and the provisioning of
# provisioning/ plus the examples, pointed at this ClickHouse.
gf=$work/grafana
mkdir -p "$gf/plugins" "$gf/provisioning"
"$grafana_home/bin/grafana" cli --homepath "$grafana_home" --pluginsDir "$gf/plugins" --pluginUrl "$zip" \
  plugins install flamehouse-profiles-datasource >"$work/grafana-cli.log" 2>&1 ||
  { cat "$work/grafana-cli.log"; die "grafana cli could not install $zip"; }
log "installed $(basename "$zip") with grafana cli"
node scripts/e2e-provisioning.mjs provisioning "$gf/provisioning" "$ch_port" $tempo_url
export FLAMEHOUSE_E2E_PROVISIONING=$gf/provisioning
export FLAMEHOUSE_E2E_EXAMPLES=1
gf_port=$(free_port)
cat >"$gf/custom.ini" <<INI
app_mode = production
[paths]
data = $gf/data
logs = $gf/logs
plugins = $gf/plugins
provisioning = $gf/provisioning
[server]
http_addr = 127.0.0.1
http_port = $gf_port
[analytics]
reporting_enabled = false
check_for_updates = false
check_for_plugin_updates = false
[plugins]
allow_loading_unsigned_plugins = flamehouse-profiles-datasource
preinstall_disabled = true
public_key_retrieval_disabled = true
[news]
news_feed_enabled = false
[auth]
# Grafana's shortest session rotation: the specs sign in afresh each
# (tests/fixtures.ts), and every run crosses many rotations to prove it.
token_rotation_interval_minutes = 2
[log]
mode = console
INI
"$grafana_home/bin/grafana" server --homepath "$grafana_home" --config "$gf/custom.ini" >"$work/grafana.log" 2>&1 &
pids+=($!)
export GRAFANA_URL=http://127.0.0.1:$gf_port
wait_for "Grafana answers" 120 node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$GRAFANA_URL/api/health" ||
  { cat "$work/grafana.log"; die "Grafana did not start"; }
export FLAMEHOUSE_E2E_GRAFANA_LOG=$work/grafana.log
export FLAMEHOUSE_E2E_CLICKHOUSE=$ch

if [ "${FLAMEHOUSE_E2E_SERVE:-}" = 1 ]; then
  log "serving until Ctrl-C; Grafana $GRAFANA_URL (admin/admin), ClickHouse $ch. Run specs with:"
  printf '  export %s\n' "GRAFANA_URL=$GRAFANA_URL" "FLAMEHOUSE_E2E_PROVISIONING=$FLAMEHOUSE_E2E_PROVISIONING" \
    "FLAMEHOUSE_E2E_EXAMPLES=1" "FLAMEHOUSE_E2E_EXPORTER_FIXTURE=$FLAMEHOUSE_E2E_EXPORTER_FIXTURE" \
    "FLAMEHOUSE_E2E_GRAFANA_LOG=$FLAMEHOUSE_E2E_GRAFANA_LOG" "FLAMEHOUSE_E2E_CLICKHOUSE=$ch" \
    "FLAMEHOUSE_E2E_TEMPO=${FLAMEHOUSE_E2E_TEMPO:-}" "FLAMEHOUSE_E2E_PYROSCOPE_API=$FLAMEHOUSE_E2E_PYROSCOPE_API" \
    "FLAMEHOUSE_E2E_AGENT=${FLAMEHOUSE_E2E_AGENT:-}" "FLAMEHOUSE_E2E_AGENT_SKIP_REASON=${FLAMEHOUSE_E2E_AGENT_SKIP_REASON:-}"
  wait "${pids[@]}"
  exit
fi

log "running the specs against $GRAFANA_URL ($("$grafana_home/bin/grafana" --version 2>/dev/null | head -n 1))"
specs_started=$SECONDS
status=0
run_specs "$@" || status=$?
log "specs took $((SECONDS - specs_started)) s; the whole browser run $((SECONDS - started)) s"
exit $status
