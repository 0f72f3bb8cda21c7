#!/usr/bin/env bash
# The coding agents' own CLIs judge what `mailroom setup` writes: Claude Code, Codex, Gemini CLI
# and OpenCode (pinned in tests/clients/agents/package.json) each read the settings setup wrote
# into a home directory that already held the user's own servers, settings and comments.
#
# 1. A mailroom server that demands a bearer token (HTTP_BEARER_TOKEN, loopback not exempt), so
#    a client connects only if setup wrote the Authorization header in the form it reads.
# 2. A home with realistic settings for the four clients; each client lists it once first (the
#    user's server is there, mailroom is not; Claude Code settles its own files on a first run),
#    and those files are kept as the originals.
# 3. `setup install --url ...` with the token: `claude mcp list`, `gemini mcp list` and
#    `opencode mcp list` show mailroom connected next to the user's server; Codex, whose
#    `mcp list` does not connect, shows the URL and the header in `mcp list --json`, and its
#    app server (`codex app-server`, `mcpServerStatus/list`) connects and lists mailroom's tools.
#    No client rewrote what setup wrote.
# 4. Installing again changes no byte; `setup uninstall` gives back every original byte for byte
#    and removes what setup created, and `claude mcp list` no longer lists mailroom.
# 5. `--dry-run` in an empty home prints the diffs, token masked, and writes nothing.
# 6. `--token-env MAILROOM_TOKEN` in another home: no file holds the token, and each client,
#    given MAILROOM_TOKEN, connects (each spells the reference its own way).
# 7. stdio: `setup install --client claude-code --transport stdio` in an empty home, and
#    `claude mcp list` starts `mailroom serve --stdio` and connects; the background server that
#    started is stopped afterwards.
#
# Usage: tests/clients/agents.sh path/to/mailroom
#
# Builds nothing. Needs node >= 22 (MAILROOM_CLIENT_NODE, default: node on PATH), python3, and
# `npm ci --prefix tests/clients/agents` (scripts/test-prerequisites does it; OpenCode comes as
# its linux-x64 release package, see package.json). Every client command is time-boxed by
# MAILROOM_CLIENT_TIMEOUT seconds (default: 60). No client needs an account for any of this.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${1:?usage: tests/clients/agents.sh path/to/mailroom}"
[[ "$BIN" == /* ]] || BIN="$(pwd)/$BIN"
NODE="${MAILROOM_CLIENT_NODE:-node}"
TIMEOUT="${MAILROOM_CLIENT_TIMEOUT:-60}"
MODULES="$ROOT/tests/clients/agents/node_modules"
NAME="mcp-agent-mail" # setup's default server name

say() { printf '[agents] %s\n' "$*"; }
die() { printf '[agents] ERROR: %s\n' "$*" >&2; exit 1; }

[[ -x "$BIN" ]] || die "mailroom binary not found or not executable: $BIN"
NODE_PROGRAM="$(command -v "$NODE")" || die "node not found: $NODE"
[[ -d "$MODULES/@anthropic-ai/claude-code" && -d "$MODULES/opencode-linux-x64" ]] \
  || die "tests/clients/agents/node_modules is missing (run: npm ci --prefix tests/clients/agents)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-agents.XXXXXX")"
# The stdio round's data directory is named like the SDK stdio tests' ones, so that
# tests/clients/run.sh's cleanup also stops its server should this script be killed.
STDIO_WORK="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-stdio-agents.XXXXXX")"
STDIO_DATA="$STDIO_WORK/data"
SERVER_LOG="$WORK/server.log"
# shellcheck source=tests/clients/lib.sh
source "$ROOT/tests/clients/lib.sh"

cleanup() {
  stop_server
  stop_stdio_server "$STDIO_DATA"
  rm -rf "$WORK" "$STDIO_WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The clients' commands, first on PATH (setup also finds them there, as it would on a user's
# machine, and reads their versions). codex and gemini are node scripts: the node given goes
# on PATH for them.
CLI_BIN="$WORK/bin"
mkdir -p "$CLI_BIN" "$WORK/out"
ln -s "$MODULES/.bin/claude" "$CLI_BIN/claude"
ln -s "$MODULES/.bin/codex" "$CLI_BIN/codex"
ln -s "$MODULES/.bin/gemini" "$CLI_BIN/gemini"
ln -s "$MODULES/opencode-linux-x64/bin/opencode" "$CLI_BIN/opencode"
CLI_PATH="$CLI_BIN:$(dirname "$NODE_PROGRAM"):$PATH"

PROJECT="$WORK/project"
mkdir -p "$PROJECT"
PROJECT="$(cd "$PROJECT" && pwd -P)"

failures=0
fail() {
  say "FAIL: $*"
  failures=$((failures + 1))
}

# in_home HOME COMMAND...: runs COMMAND from the project directory as if HOME were the user's
# home: no variable moves the clients' settings or state out of it, and the clients send no
# telemetry and look for no updates. HTTP_PORT=0: a server a stdio bridge
# starts listens on a free port.
in_home() {
  local home="$1"
  shift
  (cd "$PROJECT" && env -u CLAUDE_CONFIG_DIR -u CODEX_HOME -u GEMINI_CLI_HOME \
    -u OPENCODE_CONFIG -u GEMINI_CLI_TRUST_WORKSPACE -u HTTP_BEARER_TOKEN \
    -u XDG_DATA_HOME -u XDG_CACHE_HOME -u XDG_STATE_HOME \
    HOME="$home" XDG_CONFIG_HOME="$home/.config" PATH="$CLI_PATH" HTTP_PORT=0 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
    "$@")
}

# client STEP HOME COMMAND...: runs a client's command in HOME, time-boxed, its output (both
# streams, colours removed) in $WORK/out/STEP.txt. A non-zero exit is a failure.
client() {
  local step="$1" home="$2"
  shift 2
  local out="$WORK/out/$step.txt" rc=0
  in_home "$home" timeout "$TIMEOUT" "$@" </dev/null >"$out.raw" 2>&1 || rc=$?
  sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' "$out.raw" >"$out"
  if ((rc != 0)); then
    fail "$step: \`$*\` exited with $rc"
    show "$step"
    return 1
  fi
}

show() {
  echo "----- $1 said -----"
  cat "$WORK/out/$1.txt"
  echo "----- end of $1 -----"
}

# expect STEP REGEX WHAT: STEP's output has a line matching REGEX (extended).
expect() {
  grep -Eq -- "$2" "$WORK/out/$1.txt" && return 0
  fail "$1: $3 (no line matches /$2/)"
  show "$1"
}

# expect_not STEP REGEX WHAT: no line of STEP's output matches REGEX.
expect_not() {
  grep -Eq -- "$2" "$WORK/out/$1.txt" || return 0
  fail "$1: $3 (a line matches /$2/)"
  show "$1"
}

# literal TEXT: an extended regular expression matching TEXT.
literal() { printf '%s\n' "$1" | sed 's/[[\.*^$+?(){|]/\\&/g'; }

# --- The server --------------------------------------------------------------------------------
TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
PORT="$(free_port)"
URL="http://127.0.0.1:$PORT/mcp"
start_server "$BIN" "$PORT" "$WORK/data" HTTP_BEARER_TOKEN="$TOKEN" \
  HTTP_ALLOW_LOCALHOST_UNAUTHENTICATED=false || exit 1

# initialize_status [TOKEN]: the HTTP status of an MCP initialize at $URL.
initialize_status() {
  python3 - "$URL" "${1:-}" <<'PY'
import json, sys, urllib.request, urllib.error
url, token = sys.argv[1], sys.argv[2]
body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {},
    "clientInfo": {"name": "agents.sh", "version": "0"}}}
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if token:
    headers["Authorization"] = f"Bearer {token}"
request = urllib.request.Request(url, json.dumps(body).encode(), headers)
try:
    with urllib.request.urlopen(request, timeout=5) as reply:
        print(reply.status)
except urllib.error.HTTPError as e:
    print(e.code)
PY
}
# Without this the test below could pass with no header at all.
[[ "$(initialize_status)" == 401 && "$(initialize_status "$TOKEN")" == 200 ]] \
  || die "the server should refuse an initialize without the token and accept one with it"

# trust_project HOME: Gemini CLI trusts the project's folder (it disables every server, the
# user's own included, in a folder it does not trust).
trust_project() {
  mkdir -p "$1/.gemini"
  printf '{\n  "%s": "TRUST_FOLDER"\n}\n' "$PROJECT" >"$1/.gemini/trustedFolders.json"
}

# --- A home the user has lived in --------------------------------------------------------------
# write_home HOME: each client's settings with one server of the user's own (a program that is
# not installed here: clients list it, failing to connect) and other settings, with comments
# where the format has them. Gemini and Codex trust the project's folder.
write_home() {
  local home="$1"
  mkdir -p "$home/.claude" "$home/.codex" "$home/.gemini" "$home/.config/opencode"
  cat >"$home/.claude.json" <<EOF
{
  "numStartups": 14,
  "installMethod": "npm-global",
  "autoUpdates": false,
  "hasCompletedOnboarding": true,
  "projects": {
    "$PROJECT": {
      "allowedTools": [],
      "hasTrustDialogAccepted": true
    }
  },
  "mcpServers": {
    "user-docs": {
      "type": "stdio",
      "command": "/opt/user-tools/bin/docs-mcp",
      "args": ["--root", "/srv/docs"],
      "env": {}
    }
  }
}
EOF
  cat >"$home/.claude/settings.json" <<'EOF'
{
  "model": "sonnet",
  "permissions": { "allow": ["Bash(cargo test:*)"] },
  "hooks": {
    "PostToolUse": [
      { "matcher": "Edit|Write", "hooks": [{ "type": "command", "command": "cargo fmt --all" }] }
    ]
  }
}
EOF
  cat >"$home/.codex/config.toml" <<EOF
# My Codex settings.
model = "gpt-5-codex"
approval_policy = "on-request" # ask before running commands

[projects."$PROJECT"]
trust_level = "trusted"

# The search server I use everywhere.
[mcp_servers.user-search]
command = "/opt/user-tools/bin/search-mcp"
args = ["--index", "/srv/index"]
startup_timeout_sec = 20
EOF
  cat >"$home/.gemini/settings.json" <<'EOF'
// Gemini CLI: my settings
{
  "general": { "vimMode": true },
  "ui": { "theme": "GitHub" },
  "security": {
    "auth": { "selectedType": "gemini-api-key" } // the key comes from the environment
  },
  "mcpServers": {
    // notes, over stdio
    "user-notes": {
      "command": "/opt/user-tools/bin/notes-mcp",
      "args": ["--vault", "/srv/notes"],
      "timeout": 30000
    }
  }
}
EOF
  trust_project "$home"
  cat >"$home/.config/opencode/opencode.jsonc" <<'EOF'
{
  "$schema": "https://opencode.ai/config.json",
  // my defaults
  "theme": "opencode",
  "autoupdate": false,
  "mcp": {
    // the database, read-only
    "user-db": {
      "type": "local",
      "command": ["/opt/user-tools/bin/db-mcp", "--readonly"],
      "enabled": true,
    },
  },
}
EOF
}
# The files above, relative to the home.
USER_FILES=(.claude.json .claude/settings.json .codex/config.toml .gemini/settings.json
  .gemini/trustedFolders.json .config/opencode/opencode.jsonc)

# The temporary files `gemini --version` leaves behind (~/.gemini/projects.json.<uuid>.tmp) each
# time setup asks it for its version: Gemini's, not setup's.
GEMINI_LITTER='^\.gemini/projects\.json\..*\.tmp$'

# listing HOME: every path under HOME, relative, but for Gemini's litter.
listing() {
  (cd "$1" && find . -mindepth 1 | sed 's|^\./||' | grep -Ev "$GEMINI_LITTER" | sort) || true
}

# copy_files HOME DEST FILE...: copies each FILE there is from HOME to DEST (same relative path).
copy_files() {
  local home="$1" dest="$2" file
  shift 2
  for file in "$@"; do
    if [[ -e "$home/$file" ]]; then
      mkdir -p "$dest/$(dirname "$file")"
      cp -p "$home/$file" "$dest/$file"
    fi
  done
}

# same_files WHAT HOME KEPT FILE...: each FILE is in HOME exactly as in KEPT, or absent from
# both.
same_files() {
  local what="$1" home="$2" kept="$3" file ok=0
  shift 3
  for file in "$@"; do
    if [[ -e "$kept/$file" ]]; then
      if [[ ! -e "$home/$file" ]]; then
        fail "$what: ~/$file is gone"
        ok=1
      elif ! cmp -s "$kept/$file" "$home/$file"; then
        fail "$what: ~/$file changed:"
        diff -u "$kept/$file" "$home/$file" | sed "s/$TOKEN/<token>/g" || true
        ok=1
      fi
    elif [[ -e "$home/$file" ]]; then
      fail "$what: ~/$file appeared"
      ok=1
    fi
  done
  return "$ok"
}

setup_install() {
  local home="$1"
  shift
  in_home "$home" env HTTP_BEARER_TOKEN="$TOKEN" "$BIN" setup install "$@"
}
INSTALL_FLAGS=(--client claude-code --client codex --client gemini --client opencode
  --url "$URL" --data-dir "$WORK/data")

# What each client shows when it reads mailroom's HTTP entry and connects to it. The variables
# given (NAME=VALUE...) are added to the client's environment.
URL_RE="$(literal "$URL")"
CODEX_CHECK="$ROOT/tests/clients/agents/codex_check.py"

# claude_connects STEP HOME [NAME=VALUE...]
claude_connects() {
  local step="$1" home="$2"
  shift 2
  client "$step" "$home" env "$@" claude mcp list || return 1
  expect "$step" "^$NAME: $URL_RE \\(HTTP\\) - ✔ Connected$" "Claude Code connects to mailroom"
}

# gemini_connects STEP HOME [NAME=VALUE...]
gemini_connects() {
  local step="$1" home="$2"
  shift 2
  client "$step" "$home" env "$@" gemini mcp list || return 1
  expect "$step" "✓ $NAME: $URL_RE \\(http\\) - Connected$" "Gemini CLI connects to mailroom"
}

# opencode_connects STEP HOME [NAME=VALUE...]
opencode_connects() {
  local step="$1" home="$2"
  shift 2
  client "$step" "$home" env "$@" opencode mcp list || return 1
  expect "$step" "✓ $NAME +connected$" "OpenCode connects to mailroom"
  expect "$step" "^│ +$URL_RE$" "OpenCode shows mailroom's URL"
}

# --- Before setup: each client reads the user's settings, and settles them ----------------------
HOME1="$WORK/home"
write_home "$HOME1"
say "before setup: each client lists the user's own server and not mailroom"
if client claude-before "$HOME1" claude mcp list; then
  expect claude-before '^user-docs: ' "Claude Code lists the user's server"
  expect_not claude-before "$NAME" "Claude Code lists no mailroom yet"
fi
if client codex-before "$HOME1" codex mcp list --json; then
  expect codex-before '"name": "user-search"' "Codex lists the user's server"
  expect_not codex-before "$NAME" "Codex lists no mailroom yet"
fi
if client gemini-before "$HOME1" gemini mcp list; then
  expect gemini-before ' user-notes: ' "Gemini CLI lists the user's server"
  expect_not gemini-before "$NAME" "Gemini CLI lists no mailroom yet"
fi
if client opencode-before "$HOME1" opencode mcp list; then
  expect opencode-before ' user-db ' "OpenCode lists the user's server"
  expect_not opencode-before "$NAME" "OpenCode lists no mailroom yet"
fi
((failures == 0)) || die "the clients do not read the test's home as expected; setup was not run"
# Claude Code rewrites its two files on its first run (migrations, its own formatting); a user's
# files have long been through that. These are the originals setup must give back.
copy_files "$HOME1" "$WORK/originals" "${USER_FILES[@]}"
listing "$HOME1" >"$WORK/before-install.txt"

# --- setup install -------------------------------------------------------------------------------
say "setup install ${INSTALL_FLAGS[*]}"
setup_install "$HOME1" "${INSTALL_FLAGS[@]}" >"$WORK/out/install.txt" 2>&1 \
  || { cat "$WORK/out/install.txt"; die "setup install failed"; }
sed "s/$TOKEN/<token>/g" "$WORK/out/install.txt"
listing "$HOME1" >"$WORK/after-install.txt"
# What setup created (files and directories): gone again after uninstall.
mapfile -t CREATED < <(comm -13 "$WORK/before-install.txt" "$WORK/after-install.txt")
say "setup created: ${CREATED[*]}"
# Every file setup may touch.
TRACKED=("${USER_FILES[@]}")
for path in "${CREATED[@]}"; do
  [[ -f "$HOME1/$path" ]] && TRACKED+=("$path")
done
copy_files "$HOME1" "$WORK/installed" "${TRACKED[@]}"

say "after setup: each client reads mailroom from its own settings"
if claude_connects claude "$HOME1"; then
  expect claude '^user-docs: ' "Claude Code still lists the user's server"
fi
if gemini_connects gemini "$HOME1"; then
  expect gemini ' user-notes: ' "Gemini CLI still lists the user's server"
  expect_not gemini '[Ee]rror|[Ii]nvalid|[Ww]arning' "Gemini CLI does not complain of its settings"
fi
if opencode_connects opencode "$HOME1"; then
  expect opencode ' user-db ' "OpenCode still lists the user's server"
fi
client codex "$HOME1" python3 "$CODEX_CHECK" list "$NAME" "$URL" "Bearer $TOKEN" user-search || true
client codex-app-server "$HOME1" python3 "$CODEX_CHECK" connect "$NAME" user-search || true
same_files "the clients left setup's files alone" "$HOME1" "$WORK/installed" "${TRACKED[@]}" || true

# --- Installing again changes nothing ------------------------------------------------------------
say "setup install again: no byte changes"
setup_install "$HOME1" "${INSTALL_FLAGS[@]}" >"$WORK/out/install-again.txt" 2>&1 \
  || { cat "$WORK/out/install-again.txt"; die "the second setup install failed"; }
same_files "setup install, run again" "$HOME1" "$WORK/installed" "${TRACKED[@]}" \
  || sed "s/$TOKEN/<token>/g" "$WORK/out/install-again.txt"

# --- setup uninstall -----------------------------------------------------------------------------
say "setup uninstall: the originals come back byte for byte; what setup created goes"
in_home "$HOME1" "$BIN" setup uninstall >"$WORK/out/uninstall.txt" 2>&1 \
  || { cat "$WORK/out/uninstall.txt"; die "setup uninstall failed"; }
cat "$WORK/out/uninstall.txt"
same_files "setup uninstall" "$HOME1" "$WORK/originals" "${USER_FILES[@]}" || true
for path in "${CREATED[@]}"; do
  [[ -e "$HOME1/$path" ]] && fail "setup uninstall left ~/$path, which setup created"
done
if client claude-after "$HOME1" claude mcp list; then
  expect_not claude-after "$NAME" "Claude Code lists mailroom no more"
  expect claude-after '^user-docs: ' "Claude Code still lists the user's server"
fi

# --- --dry-run in an empty home -----------------------------------------------------------------
say "setup install --dry-run in an empty home: diffs, and nothing written"
HOME2="$WORK/empty-home"
failures_before_dry_run=$failures
mkdir -p "$HOME2"
setup_install "$HOME2" "${INSTALL_FLAGS[@]}" --dry-run >"$WORK/out/dry-run.txt" 2>&1 \
  || { cat "$WORK/out/dry-run.txt"; die "setup install --dry-run failed"; }
for file in .claude.json .codex/config.toml .gemini/settings.json .config/opencode/opencode.json; do
  grep -qxF "+++ $HOME2/$file" "$WORK/out/dry-run.txt" \
    || fail "--dry-run shows no diff for ~/$file"
done
grep -qF "Bearer <token>" "$WORK/out/dry-run.txt" || fail "--dry-run shows no masked token"
grep -qF "$TOKEN" "$WORK/out/dry-run.txt" && fail "--dry-run prints the token"
# Setup runs `gemini --version` and `opencode --version` to choose the entries' shapes; those
# leave Gemini's litter and OpenCode's empty directories. No other file may appear.
written="$(listing "$HOME2" | while read -r path; do
  if [[ -f "$HOME2/$path" ]]; then echo "$path"; fi
done)"
[[ -z "$written" ]] || fail "--dry-run wrote: $written"
if ((failures > failures_before_dry_run)); then
  sed "s/$TOKEN/<token>/g" "$WORK/out/dry-run.txt"
fi

# --- --token-env: the clients read the token from their environment -----------------------------
say "setup install --token-env MAILROOM_TOKEN: no token in any file; each client reads it at start"
HOME4="$WORK/token-env-home"
trust_project "$HOME4"
setup_install "$HOME4" "${INSTALL_FLAGS[@]}" --token-env MAILROOM_TOKEN --no-hooks \
  >"$WORK/out/install-token-env.txt" 2>&1 \
  || { cat "$WORK/out/install-token-env.txt"; die "setup install --token-env failed"; }
holding="$(grep -rlF "$TOKEN" "$HOME4" || true)"
[[ -z "$holding" ]] || fail "--token-env wrote the token into $holding"
claude_connects claude-token-env "$HOME4" MAILROOM_TOKEN="$TOKEN" || true
gemini_connects gemini-token-env "$HOME4" MAILROOM_TOKEN="$TOKEN" || true
opencode_connects opencode-token-env "$HOME4" MAILROOM_TOKEN="$TOKEN" || true
client codex-token-env "$HOME4" env MAILROOM_TOKEN="$TOKEN" \
  python3 "$CODEX_CHECK" list "$NAME" "$URL" env:MAILROOM_TOKEN || true
client codex-app-server-token-env "$HOME4" env MAILROOM_TOKEN="$TOKEN" \
  python3 "$CODEX_CHECK" connect "$NAME" || true

# --- stdio: Claude Code starts mailroom itself ---------------------------------------------------
say "stdio: setup install --client claude-code --transport stdio; claude starts mailroom"
HOME3="$WORK/stdio-home"
mkdir -p "$HOME3"
in_home "$HOME3" "$BIN" setup install --client claude-code --transport stdio \
  --data-dir "$STDIO_DATA" >"$WORK/out/install-stdio.txt" 2>&1 \
  || { cat "$WORK/out/install-stdio.txt"; die "setup install --transport stdio failed"; }
# setup writes the program's real path (symlinks resolved), as the entry must outlive them.
if client claude-stdio "$HOME3" claude mcp list; then
  expect claude-stdio \
    "^$NAME: $(literal "$(realpath "$BIN")") serve --stdio --data-dir $(literal "$STDIO_DATA") - ✔ Connected$" \
    "Claude Code starts mailroom over stdio and connects"
fi
pid="$(stdio_server_pid "$STDIO_DATA")"
if [[ -z "$pid" ]]; then
  fail "no background server runs for the stdio data directory"
else
  stop_stdio_server "$STDIO_DATA"
  if kill -0 "$pid" 2>/dev/null; then
    fail "the stdio round's background server (pid $pid) is still running"
  fi
fi

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  fail "the server is no longer running after the clients ran"
  show_server_log
fi
if ((failures > 0)); then
  say "$failures check(s) failed"
  exit 1
fi
say "every client read what setup wrote"
