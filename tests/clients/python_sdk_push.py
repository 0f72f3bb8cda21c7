#!/usr/bin/env python3
"""Push to a real client: the official MCP Python SDK subscribes to an agent's inbox resource
and receives `notifications/resources/updated` when mail for that agent commits.

Usage: python_sdk_push.py http://127.0.0.1:PORT/mcp

Flow: initialize (the SDK opens the session's GET stream) -> ensure_project, register two
agents -> resources/subscribe to the recipient's inbox -> send_message from another client
(a second, stateless connection, as another agent would) -> the subscribed session is told,
naming the inbox URI -> resources/read shows the message -> unsubscribe.
Exits 0 when every check passed, 1 otherwise. Works with the SDK's 1.x and 2.x lines.
"""

from __future__ import annotations

import json
import sys
import uuid
import warnings
from typing import Any

from checks import CheckFailed, check, dump, logger, run_with_url, tool

log = logger("python-sdk-push")
# SDK 2.x warns that resources/subscribe is gone from the 2026-07-28 revision (Client.listen
# replaces it); mailroom negotiates 2025-11-25, where subscribe is the way.
warnings.filterwarnings("ignore", message=".*removed as of 2026-07-28.*")


def transport():
    import mcp.client.streamable_http as sh

    for name in ("streamable_http_client", "streamablehttp_client"):
        factory = getattr(sh, name, None)
        if factory is not None:
            return factory
    raise CheckFailed("no streamable HTTP client in this SDK")


async def amain(url: str, timeout: float) -> int:
    import anyio
    from mcp.client.session import ClientSession

    updates: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        data = dump(getattr(message, "root", message))
        if isinstance(data, dict) and data.get("method") == "notifications/resources/updated":
            updates.append(str((data.get("params") or {}).get("uri")))
            arrived.set()

    project = f"/tmp/py-push-{uuid.uuid4().hex[:10]}"
    factory = transport()
    with anyio.fail_after(timeout):
        async with factory(url) as streams:
            async with ClientSession(streams[0], streams[1], message_handler=on_message) as session:
                init = dump(await session.initialize())
                subscribe = (init.get("capabilities") or {}).get("resources", {}).get("subscribe")
                check(subscribe is True, f"initialize: resources.subscribe is {subscribe!r}")
                log(f"initialized: protocol {init.get('protocolVersion')}, resources.subscribe true")
                slug = (await tool(session, "ensure_project", {"human_key": project}))["slug"]
                for name in ("BlueLake", "GreenCastle"):
                    await tool(session, "register_agent", {"project_key": project, "name": name,
                                                           "program": "py-push", "model": "test"})
                await tool(session, "set_contact_policy", {"project_key": project,
                                                           "agent_name": "GreenCastle", "policy": "open"})
                uri = f"resource://inbox/GreenCastle?project={slug}"
                await session.subscribe_resource(uri)
                log(f"ok   subscribed to {uri}")

                # Another client sends: the notification reaches this session's stream.
                async with factory(url) as other_streams:
                    async with ClientSession(other_streams[0], other_streams[1]) as other:
                        await other.initialize()
                        await tool(other, "send_message", {
                            "project_key": project, "sender_name": "BlueLake",
                            "to": ["GreenCastle"], "subject": "pushed", "body_md": "hello"})
                with anyio.fail_after(20):
                    await arrived.wait()
                check(updates == [uri], f"expected one update for {uri}, got {updates}")
                log("ok   notifications/resources/updated arrived, naming the inbox")

                read = dump(await session.read_resource(uri))
                inbox = json.loads(read["contents"][0]["text"])
                subjects = [m.get("subject") for m in inbox.get("messages", [])]
                check(subjects == ["pushed"], f"inbox after the notification: {subjects}")
                log("ok   the inbox resource holds the message it announced")
                await session.unsubscribe_resource(uri)
                log("ok   unsubscribed")
    log("PASS")
    return 0


def main() -> int:
    return run_with_url(amain, __doc__, log)


if __name__ == "__main__":
    sys.exit(main())
