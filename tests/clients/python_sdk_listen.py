#!/usr/bin/env python3
"""MCP 2026-07-28 with a real client: the official MCP Python SDK (2.x) connects in its default
`auto` mode, which probes `server/discover` and speaks the stateless revision when the server
offers it, then listens to an agent's inbox with `subscriptions/listen` (`Client.listen`).

Usage: python_sdk_listen.py http://127.0.0.1:PORT/mcp

Flow: connect (server/discover, no initialize) -> the negotiated version is 2026-07-28 and the
server names itself -> tools/list, ensure_project, register two agents (each call carries the
envelope in _meta) -> listen to the recipient's inbox (the acknowledgement names the URI as
honored) -> send_message to another agent and then to the recipient -> the stream tells of the
recipient's inbox -> resources/read shows exactly the recipient's message -> a listen naming an
unknown agent is refused with invalid params naming the field, and the server still answers.
Exits 0 when every check passed, 1 otherwise. Needs the SDK's 2.x line (Client.listen).
"""

from __future__ import annotations

import json
import sys
import uuid

from checks import CheckFailed, check, dump, logger, run_with_url, tool

log = logger("python-sdk-listen")


async def amain(url: str, timeout: float) -> int:
    import anyio
    from mcp import Client
    from mcp.client.subscriptions import ResourceUpdated
    from mcp.shared.exceptions import MCPError

    async with Client(url) as client:
        check(
            client.protocol_version == "2026-07-28",
            f"auto mode negotiated {client.protocol_version!r}, not 2026-07-28",
        )
        discovered = dump(client.session.discover_result)
        check(discovered is not None, "no DiscoverResult: the client fell back to initialize")
        check(
            "2026-07-28" in discovered["supportedVersions"]
            and "2025-11-25" in discovered["supportedVersions"],
            f"supportedVersions: {discovered['supportedVersions']}",
        )
        name = discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]
        check(name == "mcp-agent-mail", f"serverInfo name: {name!r}")
        log("ok   server/discover: 2026-07-28 negotiated, no initialize, server named")

        tools = [t["name"] for t in dump(await client.list_tools())["tools"]]
        check("send_message" in tools and "fetch_inbox" in tools, f"tools/list: {len(tools)} tools")
        log(f"ok   tools/list over the stateless revision: {len(tools)} tools")

        project = f"/tmp/mailroom-listen-{uuid.uuid4().hex[:8]}"
        await tool(client, "ensure_project", {"human_key": project})
        agents = {}
        for role in ("sender", "recipient", "bystander"):
            agents[role] = (await tool(client, "register_agent",
                                       {"project_key": project, "program": "python-sdk",
                                        "model": "listen-test"}))["name"]
            await tool(client, "set_contact_policy", {"project_key": project,
                                                      "agent_name": agents[role], "policy": "open"})
        uri = f"resource://inbox/{agents['recipient']}?project={project}"

        with anyio.fail_after(timeout):
            async with client.listen(resource_subscriptions=[uri]) as subscription:
                honored = dump(subscription.honored)
                check(honored.get("resourceSubscriptions") == [uri],
                      f"acknowledged filter: {honored}")
                check(not honored.get("toolsListChanged"),
                      "a list-changed kind that never fires was acknowledged")
                log("ok   subscriptions/listen acknowledged the inbox URI")
                for to, subject in (("bystander", "not yours"), ("recipient", "pushed")):
                    await tool(client, "send_message", {
                        "project_key": project, "sender_name": agents["sender"],
                        "to": [agents[to]], "subject": subject, "body_md": "hello"})
                async for event in subscription:
                    check(isinstance(event, ResourceUpdated), f"unexpected event {event!r}")
                    check(event.uri == uri, f"notified of {event.uri!r}, subscribed to {uri!r}")
                    break
        log("ok   the listen stream told of the recipient's inbox")

        read = dump(await client.read_resource(uri))
        inbox = json.loads(read["contents"][0]["text"])
        subjects = [m.get("subject") for m in inbox.get("messages", [])]
        check(subjects == ["pushed"], f"inbox after the notification: {subjects}")
        log("ok   the inbox resource holds the message it announced, and only it")

        unknown = f"resource://inbox/NoSuchAgent?project={project}"
        try:
            async with client.listen(resource_subscriptions=[unknown]):
                raise CheckFailed("a listen naming an unknown agent was acknowledged")
        except MCPError as refused:
            check(refused.error.code == -32602, f"error code {refused.error.code}")
            check("resourceSubscriptions[0]" in refused.error.message,
                  f"the error does not name the field: {refused.error.message}")
        log("ok   a listen naming an unknown agent is refused, naming the field")
        again = [t["name"] for t in dump(await client.list_tools())["tools"]]
        check(again == tools, "the server answers differently after the refusal")
        log("ok   the server still answers")
    log("PASS")
    return 0


def main() -> int:
    return run_with_url(amain, __doc__, log)


if __name__ == "__main__":
    sys.exit(main())
