#!/usr/bin/env python3
"""Independent-client test of the stdio transport with the official MCP Python SDK.

Usage: python_sdk_stdio.py path/to/mailroom

Five stdio clients (the SDK's ``stdio_client``, each starting its own ``mailroom serve
--stdio``) work at once on one fresh data directory: each registers an agent, then each sends
one message to every other, then each reads its inbox. Checks: every message is delivered
exactly once; all five bridges used one server (the one the first started, in the
background), which is still running after every client has closed; nothing but JSON-RPC
reached the clients' stdout (the SDK fails on anything else). The server is stopped at the
end. Exits 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from checks import CheckFailed, check, logger

PREFIX = "python-sdk-stdio"
CLIENTS = 5
PROJECT = "/tmp/mailroom-stdio-project"


log = logger(PREFIX)


async def call(session: Any, tool: str, args: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, args)
    # Wire names whatever the SDK line (2.x renamed the fields to snake_case).
    raw = result.model_dump(by_alias=True, mode="json")
    text = raw["content"][0]["text"]
    check(not raw.get("isError"), f"{tool}({args}) failed: {text}")
    return json.loads(text)


def server_pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / "server.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


async def main(binary: str) -> int:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    work = Path(tempfile.mkdtemp(prefix="mailroom-stdio-"))
    data_dir = work / "data"
    # Port 0: the background server picks a free port (tests run side by side).
    env = {**os.environ, "HTTP_PORT": "0"}
    params = StdioServerParameters(
        command=binary, args=["serve", "--stdio", "--data-dir", str(data_dir)], env=env
    )
    pid = None
    try:
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for _ in range(CLIENTS):
                read, write = await stack.enter_async_context(stdio_client(params))
                sessions.append(await stack.enter_async_context(ClientSession(read, write)))
            await asyncio.gather(*(s.initialize() for s in sessions))
            log(f"{CLIENTS} stdio clients initialized at once")
            await call(sessions[0], "ensure_project", {"human_key": PROJECT})

            async def register(session: Any) -> str:
                agent = await call(
                    session,
                    "register_agent",
                    {"project_key": PROJECT, "program": "python-sdk", "model": "stdio-test"},
                )
                await call(
                    session,
                    "set_contact_policy",
                    {"project_key": PROJECT, "agent_name": agent["name"], "policy": "open"},
                )
                return agent["name"]

            names = await asyncio.gather(*(register(s) for s in sessions))
            check(len(set(names)) == CLIENTS, f"five distinct agents: {names}")
            log(f"registered {names}")

            async def send_all(index: int) -> None:
                sender = names[index]
                for other in names:
                    if other != sender:
                        await call(
                            sessions[index],
                            "send_message",
                            {
                                "project_key": PROJECT,
                                "sender_name": sender,
                                "to": [other],
                                "subject": f"{sender} to {other}",
                                "body_md": "over stdio",
                            },
                        )

            await asyncio.gather(*(send_all(i) for i in range(CLIENTS)))

            async def inbox(index: int) -> list[str]:
                messages = await call(
                    sessions[index],
                    "fetch_inbox",
                    {"project_key": PROJECT, "agent_name": names[index], "limit": 100},
                )
                return sorted(m["subject"] for m in messages)

            inboxes = await asyncio.gather(*(inbox(i) for i in range(CLIENTS)))
            for name, subjects in zip(names, inboxes):
                expected = sorted(f"{other} to {name}" for other in names if other != name)
                check(subjects == expected, f"{name}'s inbox: {subjects}, expected {expected}")
            log(f"every one of {CLIENTS * (CLIENTS - 1)} messages delivered exactly once")
            pid = server_pid(data_dir)
            check(pid is not None and alive(pid), "a server runs for the data directory")
            record = json.loads((data_dir / "server.json").read_text())
            check(record["pid"] == pid, f"server.json names the lock holder: {record} vs {pid}")
        # Every client (and its bridge) has exited now.
        time.sleep(0.5)
        check(alive(pid), "the background server outlives its stdio clients")
        server_log = (data_dir / "server.log").read_text()
        started = server_log.count("mailroom listening")
        check(started == 1, f"one server was started:\n{server_log}")
        check("Another mailroom server" not in server_log, f"no second one tried:\n{server_log}")
        log("the background server outlived its clients")
        return 0
    except CheckFailed as e:
        log(f"FAIL: {e}")
        return 1
    except Exception:  # noqa: BLE001 - any SDK failure is a test failure
        traceback.print_exc()
        return 1
    finally:
        pid = pid or server_pid(data_dir)
        if pid and alive(pid):
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if not alive(pid):
                    break
                time.sleep(0.1)
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        log_file = data_dir / "server.log"
        if log_file.exists() and os.environ.get("MAILROOM_STDIO_SHOW_LOG"):
            print(log_file.read_text())
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1])))
