#!/usr/bin/env python3
"""A scripted session against the Python reference that leaves every kind of record it keeps.

Usage: session.py URL HOST_DATA_DIR SERVER_DATA_DIR

URL is the reference's MCP endpoint; HOST_DATA_DIR is its data directory as this process sees
it and SERVER_DATA_DIR as the server sees it (scripts/python-reference runs it in a chroot),
so an image written here can be attached there. The server must run with
WORKTREES_ENABLED=true (the product tools) and MCP_AGENT_MAIL_WINDOW_ID set (a window
identity). scripts/reference-mailbox runs it and packs what it leaves for the import test.

Records made: projects (one archived), agents (program, model, task, policies, one retired, one
through the window identity), registration tokens, contact links (approved across projects,
pending, blocked), messages with to/cc/bcc, threads, topics, importance, ack_required, an image
attachment, read and ack marks, file reservations (active, released, renewed), products and
their links, a stored summary.
"""

from __future__ import annotations

import asyncio
import json
import struct
import sys
import zlib
from pathlib import Path

from mcp import ClientSession
from mcp.client import streamable_http

ALPHA = "/work/alpha-service"
BETA = "/work/beta-service"
GAMMA = "/work/gamma-retired"


def png(width: int, height: int) -> bytes:
    """A small solid-colour PNG, made without any imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xc0\x30\x30" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


class Session:
    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, /, **arguments):
        name = tool
        result = await self.session.call_tool(tool, arguments)
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error if hasattr(result, "is_error") else result.isError:
            raise RuntimeError(f"{name} failed: {text}")
        structured = getattr(result, "structured_content", None) or getattr(
            result, "structuredContent", None)
        value = structured if structured is not None else json.loads(text or "null")
        if isinstance(value, dict) and set(value) == {"result"}:
            value = value["result"]
        print(f"{name}: ok", file=sys.stderr)
        return value


async def run(url: str, host_dir: Path, server_dir: str) -> None:
    transport = getattr(streamable_http, "streamable_http_client", None) or getattr(
        streamable_http, "streamablehttp_client")
    async with transport(url) as streams:
        async with ClientSession(streams[0], streams[1]) as raw:
            await raw.initialize()
            s = Session(raw)
            for key in (ALPHA, BETA, GAMMA):
                await s.call("ensure_project", human_key=key)
            tokens = {}

            async def register(project: str, name: str, program: str, model: str, task: str):
                agent = await s.call("register_agent", project_key=project, name=name,
                                     program=program, model=model, task_description=task)
                tokens[name] = agent.get("registration_token")
                return agent

            # First, with no name: the server's window identity (MCP_AGENT_MAIL_WINDOW_ID)
            # names the agent (a window already bound to a name would reuse it).
            window_agent = await s.call("register_agent", project_key=ALPHA, program="cursor",
                                        model="gpt-5.2", task_description="Window-bound helper")
            tokens[window_agent["name"]] = window_agent.get("registration_token")
            await register(ALPHA, "BlueLake", "claude-code", "opus-4.5", "Lead the API work")
            await register(ALPHA, "GreenCastle", "codex-cli", "gpt-5.2", "Database layer")
            await register(ALPHA, "RedStone", "gemini-cli", "gemini-3-pro", "Docs and tests")
            await register(BETA, "PurpleBear", "opencode", "sonnet-4.5", "Client library")
            await register(GAMMA, "GoldFox", "claude-code", "haiku-4.5", "Old experiment")

            def tok(name: str) -> dict:
                return {"registration_token": tokens[name]} if tokens.get(name) else {}

            await s.call("set_contact_policy", project_key=ALPHA, agent_name="BlueLake",
                         policy="open", **tok("BlueLake"))
            await s.call("set_contact_policy", project_key=ALPHA, agent_name="GreenCastle",
                         policy="open", **tok("GreenCastle"))
            await s.call("set_contact_policy", project_key=ALPHA, agent_name=window_agent["name"],
                         policy="open", **tok(window_agent["name"]))
            await s.call("set_contact_policy", project_key=ALPHA, agent_name="RedStone",
                         policy="contacts_only", **tok("RedStone"))
            await s.call("request_contact", project_key=ALPHA, from_agent="BlueLake",
                         to_agent="RedStone", reason="Docs for the API", **tok("BlueLake"))
            await s.call("respond_contact", project_key=ALPHA, to_agent="RedStone",
                         from_agent="BlueLake", accept=True, **tok("RedStone"))
            await s.call("set_contact_policy", project_key=BETA, agent_name="PurpleBear",
                         policy="auto", **tok("PurpleBear"))
            # Approved across projects, then one left pending and one blocked.
            await s.call("request_contact", project_key=ALPHA, from_agent="BlueLake",
                         to_agent="PurpleBear", to_project=BETA, reason="Shared client API",
                         **tok("BlueLake"))
            await s.call("respond_contact", project_key=BETA, to_agent="PurpleBear",
                         from_agent="BlueLake", from_project=ALPHA, accept=True,
                         **tok("PurpleBear"))
            await s.call("request_contact", project_key=ALPHA, from_agent="GreenCastle",
                         to_agent="RedStone", reason="Schema review", **tok("GreenCastle"))
            await s.call("request_contact", project_key=ALPHA, from_agent=window_agent["name"],
                         to_agent="RedStone", reason="Help with docs", **tok(window_agent["name"]))
            await s.call("respond_contact", project_key=ALPHA, to_agent="RedStone",
                         from_agent=window_agent["name"], accept=False, **tok("RedStone"))

            image = host_dir / "diagram.png"
            image.write_bytes(png(24, 16))
            first = await s.call(
                "send_message", project_key=ALPHA, sender_name="BlueLake", to=["GreenCastle"],
                cc=["RedStone"], bcc=[window_agent["name"]], subject="Plan for the v2 API",
                body_md="# Plan\n\n- endpoints\n- *migrations*\n\nSee the diagram.",
                importance="high", ack_required=True, topic="api-v2",
                attachment_paths=[f"{server_dir}/diagram.png"], convert_images=True,
                sender_token=tokens.get("BlueLake"))
            first_id = first["deliveries"][0]["payload"]["id"]
            reply = await s.call("reply_message", project_key=ALPHA, message_id=first_id,
                                 sender_name="GreenCastle",
                                 body_md="Agreed. I will take the migrations.",
                                 sender_token=tokens.get("GreenCastle"))
            reply_id = reply.get("id") or reply["deliveries"][0]["payload"]["id"]
            await s.call("send_message", project_key=ALPHA, sender_name="RedStone",
                         to=["BlueLake"], subject="Docs build is green",
                         body_md="All pages render; `cargo doc` passes.", importance="low",
                         thread_id="docs-build", topic="ci", sender_token=tokens.get("RedStone"))
            await s.call("send_message", project_key=ALPHA, sender_name="BlueLake",
                         to=["PurpleBear@work-beta-service"], subject="Client needs the new field",
                         body_md="Please add `expires_at` to the client.", ack_required=True,
                         sender_token=tokens.get("BlueLake"))
            await s.call("send_message", project_key=BETA, sender_name="PurpleBear",
                         to=["PurpleBear"], subject="Note to self", body_md="Release on Friday.",
                         sender_token=tokens.get("PurpleBear"))
            await s.call("mark_message_read", project_key=ALPHA, agent_name="GreenCastle",
                         message_id=first_id, **tok("GreenCastle"))
            await s.call("acknowledge_message", project_key=ALPHA, agent_name="GreenCastle",
                         message_id=first_id, **tok("GreenCastle"))
            await s.call("mark_message_read", project_key=ALPHA, agent_name="BlueLake",
                         message_id=reply_id, **tok("BlueLake"))

            held = await s.call("file_reservation_paths", project_key=ALPHA,
                                agent_name="GreenCastle", paths=["db/migrations/**", "db/schema.sql"],
                                ttl_seconds=7200, exclusive=True, reason="migration work",
                                **tok("GreenCastle"))
            await s.call("file_reservation_paths", project_key=ALPHA, agent_name="RedStone",
                         paths=["docs/**"], ttl_seconds=3600, exclusive=False,
                         reason="docs pass", **tok("RedStone"))
            await s.call("file_reservation_paths", project_key=ALPHA, agent_name="BlueLake",
                         paths=["api/routes.py"], ttl_seconds=600, reason="quick fix",
                         **tok("BlueLake"))
            await s.call("release_file_reservations", project_key=ALPHA, agent_name="BlueLake",
                         paths=["api/routes.py"], **tok("BlueLake"))
            granted = held.get("granted") or []
            await s.call("renew_file_reservations", project_key=ALPHA, agent_name="GreenCastle",
                         extend_seconds=1800,
                         file_reservation_ids=[g["id"] for g in granted][:1],
                         **tok("GreenCastle"))

            product = await s.call("ensure_product", product_key="acme-platform",
                                   name="Acme Platform")
            uid = product["product_uid"]
            await s.call("products_link", product_key=uid, project_key=ALPHA)
            await s.call("products_link", product_key=uid, project_key=BETA)
            await s.call("summarize_recent", project_key=ALPHA, since_hours=24, llm_mode=False)
            await s.call("retire_agent", project_key=ALPHA, agent_name="RedStone",
                         **tok("RedStone"))
            await s.call("archive_project", project_key=GAMMA, **tok("GoldFox"))


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    asyncio.run(run(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
