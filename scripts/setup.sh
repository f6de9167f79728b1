#!/usr/bin/env bash
# Installs what Flamehouse needs on a Debian machine that has Go and Node:
# the npm packages (frontend toolchain and @chdb/lib-linux-x64-gnu, the
# embedded ClickHouse engine), the Go modules and, as root, the native
# toolchain and debuginfod server the symbol tests use, and xz and Python 3.11
# for the eBPF profiler test. Safe to run repeatedly.
# With --browser (the test command) it also installs Debian's Chromium for
# the browser specs when it is missing and this runs as root.
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
  # A checkout that borrows another's node_modules through a symbolic link
  # (a git worktree) would have npm ci empty the other checkout's.
  if [ -L node_modules ]; then
    echo "error: node_modules is a symbolic link to $(readlink node_modules), and npm ci would empty what it points to;" \
      "remove the link (this checkout then gets its own node_modules) or run npm ci where it points" >&2
    exit 1
  fi
  echo "==> npm ci (frontend toolchain and the embedded ClickHouse engine, ~170 MB download)"
  npm ci --no-audit --no-fund
fi
if [ ! -f node_modules/@chdb/lib-linux-x64-gnu/libchdb.so ]; then
  echo "error: node_modules/@chdb/lib-linux-x64-gnu/libchdb.so is missing; the embedded engine needs Linux x86-64 with glibc" >&2
  exit 1
fi
go mod download

if [ "${1:-}" = --browser ] && [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> apt-get install chromium (Debian's Chromium for the browser specs)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "note: no Chromium at ${CHROMIUM_PATH:-/usr/bin/chromium}; the browser specs need it (sudo apt-get install chromium)"
  fi
fi

# The symbol tests (issue 15) build native programs and check them against
# outside tools: gcc, g++, objcopy and addr2line (binutils), llvm-symbolizer
# (llvm) and Debian's debuginfod server. Installed when missing and this
# runs as root; the tests that need a missing tool skip and say which.
missing=()
for tool in gcc:gcc g++:g++ objcopy:binutils addr2line:binutils llvm-symbolizer:llvm debuginfod:debuginfod; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
# libc6-dbg (7 MB): glibc's debug files under /usr/lib/debug/.build-id, which
# the host symbol source finds by build id (docs/symbols.md, "On host"); the
# self-profile test then names libc frames with DWARF instead of .dynsym.
if command -v dpkg-query >/dev/null 2>&1 && ! dpkg-query -W -f='${Status}' libc6-dbg 2>/dev/null | grep -q 'install ok installed'; then
  missing+=(libc6-dbg)
fi
# The eBPF profiler test (internal/integration/ebpfagent) unpacks the agent
# with xz and profiles a Python workload with Debian's interpreter; the host
# symbol source's test names frames of libpython3.11.so.1.0.
command -v xz >/dev/null 2>&1 || missing+=(xz-utils)
[ -x /usr/bin/python3.11 ] || missing+=(python3.11)
[ -f /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0 ] || missing+=(libpython3.11)
if [ "${#missing[@]}" -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> apt-get install ${missing[*]} (native toolchain, debuginfod, glibc's debug files, xz and Python for the symbol and eBPF profiler tests)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "note: ${missing[*]} missing; the symbol tests that need them skip (sudo apt-get install ${missing[*]})"
  fi
fi
