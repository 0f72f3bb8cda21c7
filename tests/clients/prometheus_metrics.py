#!/usr/bin/env python3
"""Independent-parser test: read a running mailroom server's GET /metrics with the Prometheus
Python client's own text parser (``prometheus_client.parser.text_string_to_metric_families``).

Usage: prometheus_metrics.py http://127.0.0.1:PORT

Flow: scrape -> a tool call that succeeds (health_check), one that fails (fetch_inbox for a
project that does not exist), a request no route matches -> scrape again. Checks: both scrapes
parse; every family mailroom documents is there with its type (a family appears with its
first series: upkeep runs only once an upkeep task has run); the counters moved by exactly what
this script did; every histogram's buckets are cumulative and end in +Inf == _count.
Exits 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from checks import CheckFailed, check, logger

PREFIX = "prometheus-metrics"
# Family (as the parser names it: counters without `_total`) -> type.
FAMILIES = {
    "mailroom_http_requests": "counter",
    "mailroom_http_request_duration_seconds": "histogram",
    "mailroom_tool_calls": "counter",
    "mailroom_tool_duration_seconds": "histogram",
    "mailroom_tool_errors": "counter",
    "mailroom_access_refusals": "counter",
    "mailroom_rate_limit_refusals": "counter",
    "mailroom_upkeep_runs": "counter",
    "mailroom_store_batch_size": "histogram",
    "mailroom_database_bytes": "gauge",
    "mailroom_archive_queue_depth": "gauge",
    "mailroom_archive_lag_seconds": "gauge",
    "mailroom_mcp_sessions": "gauge",
    "mailroom_archive_leader": "gauge",
}
# Families that may have no series yet (then the text has no family at all).
OPTIONAL = {"mailroom_upkeep_runs"}


log = logger(PREFIX)


def request(url: str, body: dict | None = None) -> tuple[int, str, str]:
    """Status, Content-Type and text of a GET (or, with a body, a JSON POST)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"} if body is not None else {}
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("content-type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type", ""), e.read().decode()


class Scrape:
    """One scrape, parsed: families by name and samples by (name, labels)."""

    def __init__(self, base: str) -> None:
        status, content_type, text = request(f"{base}/metrics")
        check(status == 200, f"GET /metrics answered {status}: {text[:200]}")
        check(content_type.startswith("text/plain; version=0.0.4"),
              f"GET /metrics has Content-Type {content_type!r}")
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.samples = {}
        for family in self.families.values():
            for sample in family.samples:
                self.samples[(sample.name, frozenset(sample.labels.items()))] = sample.value

    def value(self, name: str, **labels: str) -> float:
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def total(self, name: str, **labels: str) -> float:
        """The sum over every sample of `name` whose labels include `labels`."""
        wanted = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and wanted <= ls)


def check_histograms(scrape: Scrape) -> int:
    """Checks each histogram's series; returns how many there were."""
    series = 0
    for family in scrape.families.values():
        if family.type != "histogram":
            continue
        groups: dict[frozenset, list] = {}
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                rest = frozenset((k, v) for k, v in sample.labels.items() if k != "le")
                groups.setdefault(rest, []).append((float(sample.labels["le"]), sample.value))
        for labels, buckets in groups.items():
            series += 1
            buckets.sort()
            counts = [count for _, count in buckets]
            check(counts == sorted(counts), f"{family.name}{dict(labels)}: buckets not cumulative")
            check(buckets[-1][0] == float("inf"), f"{family.name}{dict(labels)}: no +Inf bucket")
            count = scrape.value(f"{family.name}_count", **dict(labels))
            check(buckets[-1][1] == count, f"{family.name}{dict(labels)}: +Inf {buckets[-1][1]} != count {count}")
    return series


def tool_call(base: str, name: str, arguments: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}
    status, _, text = request(f"{base}/mcp", body)
    check(status == 200, f"tools/call {name} answered {status}: {text[:200]}")
    return json.loads(text)["result"]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    base = sys.argv[1].rstrip("/")
    try:
        before = Scrape(base)
        ok = tool_call(base, "health_check", {})
        check(not ok.get("isError"), f"health_check failed: {ok}")
        failed = tool_call(base, "fetch_inbox", {"project_key": "/no/such/project", "agent_name": "Nobody"})
        check(failed.get("isError") is True, f"fetch_inbox of nothing did not fail: {failed}")
        status, _, _ = request(f"{base}/no/such/route")
        check(status == 404, f"GET /no/such/route answered {status}")
        after = Scrape(base)
        for name, kind in FAMILIES.items():
            family = after.families.get(name)
            if family is None and name in OPTIONAL:
                continue
            check(family is not None, f"family {name} missing; have {sorted(after.families)}")
            check(family.type == kind, f"family {name} is a {family.type}, not a {kind}")

        def moved(name: str, **labels: str) -> float:
            return after.value(name, **labels) - before.value(name, **labels)

        expected = [
            ("mailroom_tool_calls_total", {"tool": "health_check"}, 1),
            ("mailroom_tool_calls_total", {"tool": "fetch_inbox"}, 1),
            ("mailroom_tool_duration_seconds_count", {"tool": "fetch_inbox"}, 1),
            ("mailroom_http_requests_total", {"route": "/mcp", "status": "2xx"}, 2),
            ("mailroom_http_requests_total", {"route": "unmatched", "status": "4xx"}, 1),
            ("mailroom_http_requests_total", {"route": "/metrics", "status": "2xx"}, 1),
        ]
        for name, labels, delta in expected:
            got = moved(name, **labels)
            check(got == delta, f"{name}{labels} moved by {got}, not {delta}")
        errors = after.total("mailroom_tool_errors_total", tool="fetch_inbox") - before.total(
            "mailroom_tool_errors_total", tool="fetch_inbox")
        check(errors == 1, f"fetch_inbox's errors moved by {errors}, not 1")
        check(moved("mailroom_tool_errors_total", tool="health_check", kind="NOT_FOUND") == 0,
              "health_check counted an error")
        check(after.value("mailroom_database_bytes", file="database") > 0, "database size is 0")
        series = check_histograms(after)
        log(f"PASS: {len(after.families)} families, {len(after.samples)} samples, "
            f"{series} histogram series parsed by prometheus_client")
        return 0
    except CheckFailed as e:
        log(f"FAIL: {e}")
        return 1
    except Exception as e:  # a parse error is the parser refusing the text
        log(f"FAIL: {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
