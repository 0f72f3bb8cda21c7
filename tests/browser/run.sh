#!/usr/bin/env bash
# Browser tests of the web UI: start a mailroom server on a free port with a fresh data dir,
# then drive it with Debian's Chromium through Selenium (tests/browser/ui_test.py, then
# cors_test.py: a page of another origin calling the server). Screenshots
# of every page land in target/screenshots/.
#
# Usage: tests/browser/run.sh [path/to/mailroom]     (default: target/debug/mailroom)
#
# Builds nothing. Needs .venv/bin/python with `selenium`, /usr/bin/chromium and
# /usr/bin/chromedriver (scripts/test-prerequisites installs all three).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${1:-target/debug/mailroom}"
[[ "$BIN" = /* ]] || BIN="$ROOT/$BIN"
PYTHON="${MAILROOM_CLIENT_PYTHON:-$ROOT/.venv/bin/python}"
SHOTS="$ROOT/target/screenshots"

die() { printf '[browser] ERROR: %s\n' "$*" >&2; exit 1; }
[[ -x "$BIN" ]] || die "mailroom binary not found: $BIN (cargo build -p mailroom)"
[[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] \
  || die "chromium and chromium-driver are needed (apt-get install chromium chromium-driver)"
"$PYTHON" -c 'import selenium' 2>/dev/null || die "selenium missing in $PYTHON (pip install selenium)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-browser.XXXXXX")"
free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT="$(free_port)"
# The origin whose pages may call the server from a browser (tests/browser/cors_test.py).
PAGE_PORT="$(free_port)"
HTTP_CORS_ORIGINS="http://localhost:$PAGE_PORT" \
  "$BIN" serve --data-dir "$WORK/data" --port "$PORT" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
cleanup() {
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
"$ROOT/scripts/wait-for-http" "http://127.0.0.1:$PORT/health" \
  || { cat "$WORK/server.log" >&2; die "the server did not start"; }

"$PYTHON" "$ROOT/tests/browser/ui_test.py" "http://127.0.0.1:$PORT" "$SHOTS" \
  || { tail -n 50 "$WORK/server.log" >&2; die "browser tests failed"; }
"$PYTHON" "$ROOT/tests/browser/cors_test.py" "http://127.0.0.1:$PORT" "$PAGE_PORT" "$SHOTS" \
  || { tail -n 50 "$WORK/server.log" >&2; die "the CORS browser test failed"; }
