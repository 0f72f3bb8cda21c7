# What the client test scripts (tests/clients/run.sh, tests/clients/agents.sh) share, sourced:
# a free port, an HTTP GET's status, starting a `mailroom serve` and waiting until it is live,
# stopping it, and stopping the background server a stdio bridge started for a data directory.
# The sourcing script defines `say MESSAGE...` (its log line) and sets SERVER_LOG (where the
# server's output goes).
# shellcheck shell=bash

STARTUP_TIMEOUT=30
SERVER_PID=""

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  python3 - <<'PY'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

# http_status URL: prints the HTTP status of GET URL and its body on the next line, or "000"
# when unreachable.
http_status() {
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

# start_server BIN PORT DATA_DIR [NAME=VALUE...]: runs `BIN serve` on 127.0.0.1:PORT in the
# background with the variables given added to its environment, sets SERVER_PID, and waits up
# to STARTUP_TIMEOUT s for GET /health/liveness to answer 200. On failure it says why, shows
# the server's log and returns 1.
start_server() {
  local bin="$1" port="$2" data_dir="$3"
  shift 3
  local base="http://127.0.0.1:$port"
  say "server: $bin serve --host 127.0.0.1 --port $port --data-dir $data_dir"
  mkdir -p "$data_dir"
  env "$@" "$bin" serve --host 127.0.0.1 --port "$port" --data-dir "$data_dir" >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  local deadline=$((SECONDS + STARTUP_TIMEOUT)) reply="" rc
  while ((SECONDS < deadline)); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      wait "$SERVER_PID" && rc=0 || rc=$?
      SERVER_PID=""
      say "FAIL: server exited during start-up (exit code $rc)"
      show_server_log
      return 1
    fi
    reply="$(http_status "$base/health/liveness")"
    if [[ "$(head -n1 <<<"$reply")" == "200" ]]; then
      say "server is up at $base (liveness: $(tail -n +2 <<<"$reply" | tr -d '\n'))"
      return 0
    fi
    sleep 0.25
  done
  say "FAIL: server did not answer 200 on GET /health/liveness within ${STARTUP_TIMEOUT} s (last: $(tr '\n' ' ' <<<"$reply"))"
  show_server_log
  return 1
}

# stop_pid PID: SIGTERM, then SIGKILL when PID has not exited within 5 s.
stop_pid() {
  local pid="$1"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  say "process $pid did not stop on SIGTERM within 5 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    stop_pid "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}

show_server_log() {
  echo "----- server log ($SERVER_LOG), last 200 lines -----"
  tail -n 200 "$SERVER_LOG" 2>/dev/null || echo "(no server log)"
  echo "----- end of server log -----"
}

# stdio_server_pid DATA_DIR: the pid of the server a stdio bridge started for DATA_DIR, as its
# server.json names it, printed only while some process holds the data directory's lock (so a
# stale record never names an unrelated process that reused the pid).
stdio_server_pid() {
  python3 - "$1" <<'PY'
import fcntl, json, pathlib, sys
data_dir = pathlib.Path(sys.argv[1])
try:
    pid = int(json.loads((data_dir / "server.json").read_text())["pid"])
    with open(data_dir / "server.lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
except BlockingIOError:
    print(pid)  # the lock is held: that server runs
except (OSError, ValueError, KeyError, TypeError):
    pass  # no record, no lock file, or a damaged record: no server to stop
PY
}

# stop_stdio_server DATA_DIR: stops the background server of DATA_DIR, if one runs.
stop_stdio_server() {
  local pid
  pid="$(stdio_server_pid "$1")"
  if [[ -n "$pid" ]]; then
    stop_pid "$pid"
  fi
}
