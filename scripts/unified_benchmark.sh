#!/usr/bin/env bash
# Unified Benchmark Script for Rust vs Python MCP Agent Mail
# Usage: ./scripts/unified_benchmark.sh --impl rust|python [OPTIONS]
#
# mailroom: the benchmark plan's script as the plan gives it, with its two status greps changed:
# - guarded (`|| true`): under `set -o pipefail` a grep that matches nothing (a phase with no
#   4xx/5xx line, or no 200 line) would stop the script;
# - anchored to hey's "responses" lines: unanchored, `\[200\]` also matches a latency
#   histogram bucket that happens to hold exactly 200 requests, and the phase then dies on
#   the arithmetic ("[200] 307082 + 0: syntax error"), its row missing from the results.
# scripts/seed-000-plan runs it against mailroom and the Python reference.

set -euo pipefail

# ============================================
# Configuration
# ============================================
PORT="${PORT:-8765}"
AGENTS="${AGENTS:-100}"
DURATION="${DURATION:-30}"
IMPL="${IMPL:-rust}"
HOST="http://127.0.0.1:${PORT}"
RESULTS_DIR="benchmark_results"
TIMESTAMP=$(date +%Y%m%d_%H%M%S)
RESULTS_FILE="${RESULTS_DIR}/benchmark_${IMPL}_${TIMESTAMP}.md"

# Endpoint mappings
declare -A HEALTH_ENDPOINTS=(
    ["rust"]="/health"
    ["python"]="/health/liveness"
)
declare -A READY_ENDPOINTS=(
    ["rust"]="/ready"
    ["python"]="/health/readiness"
)

# ============================================
# Parse Arguments
# ============================================
while [[ $# -gt 0 ]]; do
    case $1 in
        --impl) IMPL="$2"; shift 2 ;;
        --port) PORT="$2"; HOST="http://127.0.0.1:${PORT}"; shift 2 ;;
        --agents) AGENTS="$2"; shift 2 ;;
        --duration) DURATION="$2"; shift 2 ;;
        --output) RESULTS_FILE="$2"; shift 2 ;;
        -h|--help)
            echo "Usage: $0 --impl rust|python [--port PORT] [--agents N] [--duration N]"
            exit 0
            ;;
        *) echo "Unknown option: $1"; exit 1 ;;
    esac
done

HEALTH_ENDPOINT="${HEALTH_ENDPOINTS[$IMPL]}"
READY_ENDPOINT="${READY_ENDPOINTS[$IMPL]}"

# ============================================
# Setup
# ============================================
mkdir -p "$RESULTS_DIR"

echo "=============================================="
echo "Unified MCP Agent Mail Benchmark"
echo "=============================================="
echo "Implementation: ${IMPL^^}"
echo "Target: ${HOST}"
echo "Concurrency: ${AGENTS} agents"
echo "Duration: ${DURATION}s per test"
echo ""

# Check dependencies
command -v hey >/dev/null 2>&1 || { echo "Error: 'hey' not installed"; exit 1; }
command -v jq >/dev/null 2>&1 || { echo "Warning: 'jq' not installed"; }

# Wait for server
wait_for_server() {
    echo "Waiting for server..."
    for i in {1..30}; do
        if curl -s "${HOST}${HEALTH_ENDPOINT}" >/dev/null 2>&1; then
            echo "Server ready!"
            return 0
        fi
        sleep 1
    done
    echo "Error: Server not ready"
    exit 1
}

# ============================================
# Benchmark Functions
# ============================================
run_benchmark() {
    local name="$1"
    local endpoint="$2"
    local method="${3:-GET}"
    local body="${4:-}"
    local content_type="${5:-application/json}"

    echo ""
    echo "=== ${name} ==="

    local args=("-c" "$AGENTS" "-z" "${DURATION}s" "-t" "30")

    if [[ "$method" == "POST" ]]; then
        args+=("-m" "POST" "-H" "Content-Type: ${content_type}")
        if [[ -n "$body" ]]; then
            args+=("-d" "$body")
        fi
    fi

    args+=("${HOST}${endpoint}")

    local output
    output=$(hey "${args[@]}" 2>&1)

    # Parse results
    local rps p99 status_200 status_errors success_rate
    rps=$(echo "$output" | grep "Requests/sec:" | awk '{print $2}' | cut -d'.' -f1)
    p99=$(echo "$output" | grep "99% in" | awk '{print $3}')
    status_200=$(echo "$output" | { grep -E '\[200\].*responses' || true; } | awk '{print $2}')
    status_errors=$(echo "$output" | { grep -E '\[[45][0-9]{2}\].*responses' || true; } | awk '{sum += $2} END {print sum+0}')

    local total=$((${status_200:-0} + ${status_errors:-0}))
    if [[ $total -gt 0 ]]; then
        success_rate=$(echo "scale=1; ${status_200:-0} * 100 / $total" | bc)
    else
        success_rate="0"
    fi

    # Convert P99 to ms
    local p99_ms
    if [[ -n "$p99" ]]; then
        p99_ms=$(echo "$p99 * 1000 / 1" | bc)
    else
        p99_ms="N/A"
    fi

    echo "  Throughput: ${rps} req/s"
    echo "  P99 Latency: ${p99_ms}ms"
    echo "  Success Rate: ${success_rate}%"
    echo "  Total Requests: ${total}"

    # Write to results file
    echo "| ${name} | ${rps} | ${p99_ms}ms | ${success_rate}% | ${total} |" >> "$RESULTS_FILE"
}

# ============================================
# Initialize Results File
# ============================================
cat > "$RESULTS_FILE" << EOF
# Benchmark Results: ${IMPL^^} Implementation

**Date:** $(date)
**Target:** ${HOST}
**Duration:** ${DURATION}s per test
**Concurrency:** ${AGENTS} agents
**Implementation:** ${IMPL}

## Results

| Test | Throughput (req/s) | P99 Latency | Success Rate | Total Requests |
|------|-------------------|-------------|--------------|----------------|
EOF

# ============================================
# Run Benchmarks
# ============================================
wait_for_server

echo ""
echo "=== Phase 1: HTTP Layer ==="
run_benchmark "Health (no I/O)" "$HEALTH_ENDPOINT"
run_benchmark "Ready (DB check)" "$READY_ENDPOINT"

echo ""
echo "=== Phase 2: MCP Protocol ==="
MCP_BODY='{"jsonrpc":"2.0","method":"tools/list","params":{},"id":1}'
run_benchmark "MCP tools/list" "/mcp" "POST" "$MCP_BODY" "application/json"

# Setup for message tests
echo ""
echo "=== Phase 3: Setup Test Data ==="
curl -s -X POST "${HOST}/api/project/ensure" \
  -H "Content-Type: application/json" \
  -d '{"human_key": "benchmark-project"}' >/dev/null

curl -s -X POST "${HOST}/api/agent/register" \
  -H "Content-Type: application/json" \
  -d '{"project_slug":"benchmark-project","name":"sender","program":"bench","model":"test"}' >/dev/null 2>&1 || true

curl -s -X POST "${HOST}/api/agent/register" \
  -H "Content-Type: application/json" \
  -d '{"project_slug":"benchmark-project","name":"receiver","program":"bench","model":"test"}' >/dev/null 2>&1 || true

echo "Test data ready"

echo ""
echo "=== Phase 4: Message Operations ==="
MSG_BODY='{"project_slug":"benchmark-project","sender_name":"sender","recipient_names":["receiver"],"subject":"Bench","body_md":"Test"}'
run_benchmark "Message Send" "/api/message/send" "POST" "$MSG_BODY"

INBOX_BODY='{"project_slug":"benchmark-project","agent_name":"receiver"}'
run_benchmark "Inbox Fetch" "/api/inbox" "POST" "$INBOX_BODY"

# ============================================
# Add Summary
# ============================================
cat >> "$RESULTS_FILE" << EOF

## Environment

- Implementation: ${IMPL^^}
- Health Endpoint: ${HEALTH_ENDPOINT}
- Ready Endpoint: ${READY_ENDPOINT}
- Server: ${HOST}

## Analysis Notes

Add observations about performance characteristics here.

EOF

echo ""
echo "=============================================="
echo "Benchmark Complete!"
echo "=============================================="
echo "Results saved to: ${RESULTS_FILE}"
