#!/usr/bin/env python3
"""A webhook receiver for mailroom's tests (crates/mailroom/tests/webhooks.rs): a real HTTP
server in its own process that checks each request by the Standard Webhooks rules (the
webhook-id, webhook-timestamp and webhook-signature headers, HMAC-SHA256 over
"{id}.{timestamp}.{body}" with the key of a whsec_ secret) and records it, one JSON line per
request, in a log: the webhook-id, the path, the body, whether the signature held and whether
that webhook-id was seen before. Standard library only.

    receiver.py --port PORT --secret whsec_... --log FILE [--mode ok|fail|hang|hang-first|gone|busy]
                [--exit-after N]

Prints "listening PORT" once it accepts connections. --mode fail answers 500 after checking
and recording, gone 410, busy 503 with Retry-After: 3600; hang records, then never answers;
hang-first does so for its first request only and answers the others as ok does; ok answers 204 (401 for a bad signature).
--exit-after N ends the process, unanswered, once it has recorded its Nth request (a
receiver that dies mid-delivery).
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 300


def verify(secret, headers, body):
    """Whether the request is signed with `secret` and timely, by the specification."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    webhook_id = headers.get("webhook-id", "")
    timestamp = headers.get("webhook-timestamp", "")
    if not webhook_id or not timestamp.isdigit():
        return False
    if abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        return False
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    offered = headers.get("webhook-signature", "").split()
    return any(
        version == "v1" and hmac.compare_digest(signature, expected)
        for version, _, signature in (entry.partition(",") for entry in offered)
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--mode", choices=["ok", "fail", "hang", "hang-first", "gone", "busy"],
                        default="ok")
    parser.add_argument("--exit-after", type=int, default=0)
    options = parser.parse_args()
    seen = set()
    requests = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            valid = verify(options.secret, self.headers, body)
            webhook_id = self.headers.get("webhook-id", "")
            with lock:
                duplicate = webhook_id in seen
                seen.add(webhook_id)
                record = {"webhook_id": webhook_id, "path": self.path, "valid": valid,
                          "duplicate": duplicate, "body": json.loads(body or b"null")}
                with open(options.log, "a", encoding="utf-8") as log:
                    log.write(json.dumps(record) + "\n")
                requests[0] += 1
                first = requests[0] == 1
                if requests[0] == options.exit_after:
                    os._exit(0)
            if options.mode == "hang" or (options.mode == "hang-first" and first):
                time.sleep(3600)
            status = {"fail": 500, "gone": 410, "busy": 503}.get(options.mode, 204)
            self.send_response(401 if not valid else status)
            if options.mode == "busy":
                self.send_header("retry-after", "3600")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
