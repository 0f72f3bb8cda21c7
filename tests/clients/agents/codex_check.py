"""How Codex reads mailroom's entry, for tests/clients/agents.sh (run in the test's home).

  codex_check.py list NAME URL AUTH [USER_SERVER]
      `codex mcp list --json` loads the whole configuration (an entry Codex cannot read makes
      every codex command fail) and shows NAME enabled, at URL, sending AUTH: "Bearer <token>"
      as a header, or "env:VAR" for a token Codex reads from VAR when it starts. USER_SERVER,
      the user's own entry, is still listed.
  codex_check.py connect NAME [USER_SERVER]
      Codex's app server (`codex app-server`, JSON-RPC over stdio) connects to NAME and lists
      its tools when asked for each server's status (`mcpServerStatus/list`); no account needed.
      `codex mcp list` connects to nothing, so this is the check that the server accepts what
      Codex sends.

Exits 0 when all of it holds; otherwise prints what is wrong and Codex's answer.
"""

import json
import subprocess
import sys


def list_servers(name, url, auth, user_server=None):
    done = subprocess.run(["codex", "mcp", "list", "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        return [f"`codex mcp list --json` exited with {done.returncode}: {done.stderr}"], ""
    text = done.stdout
    servers = {s["name"]: s for s in json.loads(text)}
    problems = []
    if user_server and user_server not in servers:
        problems.append(f"the user's server {user_server} is gone")
    entry = servers.get(name)
    if entry is None:
        return problems + [f"no {name}"], text
    transport = entry["transport"]
    if not entry.get("enabled"):
        problems.append(f"{name} is not enabled: {entry.get('disabled_reason')}")
    if transport.get("type") != "streamable_http" or transport.get("url") != url:
        problems.append(f"{name} is not Streamable HTTP at {url}: {transport}")
    if auth.startswith("env:"):
        sent = transport.get("bearer_token_env_var")
        if sent != auth[4:]:
            problems.append(f"{name} takes its token from {sent!r}, not {auth[4:]!r}")
    elif (transport.get("http_headers") or {}).get("Authorization") != auth:
        problems.append(f"{name} does not send the Authorization header setup meant: {transport}")
    return problems, text.replace(auth, "<authorization>")


def connect(name, user_server=None):
    codex = subprocess.Popen(["codex", "app-server"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        def send(message):
            codex.stdin.write(json.dumps(message) + "\n")
            codex.stdin.flush()

        def reply(request_id):
            for line in codex.stdout:
                message = json.loads(line)
                if message.get("id") == request_id:
                    return message
            raise SystemExit(f"codex app-server exited before answering request {request_id}")

        send({"id": 1, "method": "initialize",
              "params": {"clientInfo": {"name": "mailroom-agents-test", "version": "0"}}})
        reply(1)
        send({"method": "initialized"})
        send({"id": 2, "method": "mcpServerStatus/list",
              "params": {"detail": "toolsAndAuthOnly"}})
        answer = reply(2)
    finally:
        codex.stdin.close()
        try:
            codex.wait(timeout=10)
        except subprocess.TimeoutExpired:
            codex.kill()
    servers = {s["name"]: s for s in answer.get("result", {}).get("data", [])}
    entry = servers.get(name, {})
    problems = []
    if user_server and user_server not in servers:
        problems.append(f"the user's server {user_server} is gone")
    connected = (not entry.get("toolsError")
                 and (entry.get("serverInfo") or {}).get("name") == name
                 and "send_message" in (entry.get("tools") or {}))
    if not connected:
        problems.append(f"{name} did not connect: {entry.get('toolsError') or entry}")
    return problems, json.dumps(answer, indent=1)[:4000]


def main(argv):
    if len(argv) >= 5 and argv[1] == "list":
        problems, answer = list_servers(*argv[2:6])
    elif len(argv) >= 3 and argv[1] == "connect":
        problems, answer = connect(*argv[2:4])
    else:
        sys.exit(__doc__)
    for problem in problems:
        print(f"[codex_check] {problem}")
    if problems:
        print(answer)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
