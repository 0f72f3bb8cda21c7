#!/usr/bin/env python3
"""Independent-client test: drive a running mailroom server with the official MCP Python SDK.

Usage: python_sdk_client.py http://127.0.0.1:PORT/mcp
(MAILROOM_CLIENT_BEARER=TOKEN sends a bearer token with every request.)

Works with the SDK's 1.x line (``streamablehttp_client`` / ``streamable_http_client`` yielding
``(read, write, get_session_id)``) and its 2.x line (``streamable_http_client`` yielding
``(read, write)``; pydantic fields renamed to snake_case).  Results are compared through
``model_dump(by_alias=True)`` so the camelCase wire names (``isError``, ``structuredContent``,
``inputSchema``) are used whatever the SDK version.

Flow: initialize -> tools/list -> ensure_project -> register_agent x2 -> set_contact_policy(open)
-> send_message -> fetch_inbox (message arrived, subject/body match) -> send_message from an
unknown sender (isError, "not found") -> resources: list, templates, read the inbox resource,
an unknown URI fails -> ensure_project with format="toon" (TOON envelope).
Exits 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import traceback
import uuid
from importlib import metadata
from typing import Any

from checks import CheckFailed, check, logger

PREFIX = "python-sdk-client"
REQUIRED_TOOLS = ("ensure_project", "register_agent", "send_message", "fetch_inbox", "set_contact_policy")


log = logger(PREFIX)


def sdk_version() -> str:
    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:  # pragma: no cover - only when mcp is vendored oddly
        return "unknown"


def pick_transport():
    """Return (name, factory) for the SDK's streamable-HTTP client transport."""
    import mcp.client.streamable_http as sh

    # 2.x (and late 1.x) name first; 1.x's older, deprecated name second.
    for name in ("streamable_http_client", "streamablehttp_client"):
        factory = getattr(sh, name, None)
        if factory is not None:
            return name, factory
    raise CheckFailed("mcp.client.streamable_http has neither streamable_http_client nor streamablehttp_client")


def open_transport(factory: Any, url: str) -> Any:
    """The transport to `url`; with MAILROOM_CLIENT_BEARER set, every request carries it as a
    bearer token (1.x takes headers, 2.x an HTTP client made with them)."""
    token = os.environ.get("MAILROOM_CLIENT_BEARER")
    if not token:
        return factory(url)
    headers = {"Authorization": f"Bearer {token}"}
    if "headers" in inspect.signature(factory).parameters:
        return factory(url, headers=headers)
    from mcp.shared._httpx_utils import create_mcp_http_client

    return factory(url, http_client=create_mcp_http_client(headers=headers))


def dump(model: Any) -> Any:
    """Pydantic model -> plain JSON data with wire (camelCase) names, for SDK 1.x and 2.x alike."""
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, mode="json")
    return model


def short(value: Any, limit: int = 600) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "...(truncated)"


class Runner:
    def __init__(self, session: Any) -> None:
        self.session = session
        self.schemas: dict[str, dict[str, Any]] = {}
        self.checks = 0

    def ok(self, msg: str) -> None:
        self.checks += 1
        log(f"ok   {msg}")

    def properties(self, tool: str) -> dict[str, Any]:
        schema = self.schemas.get(tool) or {}
        props = schema.get("properties") or {}
        return props if isinstance(props, dict) else {}

    def with_token(self, tool: str, args: dict[str, Any], param: str, token: str | None) -> dict[str, Any]:
        """Add an auth token argument only if the server's schema for `tool` declares it."""
        if token and param in self.properties(tool):
            return {**args, param: token}
        return args

    async def call(self, tool: str, args: dict[str, Any], *, expect_error: bool = False) -> tuple[Any, dict]:
        """Call a tool; return (parsed JSON of the text content, raw result dict)."""
        result = await self.session.call_tool(tool, args)
        raw = dump(result)
        check(isinstance(raw, dict), f"{tool}: result is not an object: {short(raw)}")
        is_error = bool(raw.get("isError"))
        content = raw.get("content")
        check(isinstance(content, list) and content, f"{tool}: result has no content list: {short(raw)}")
        texts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        check(texts and isinstance(texts[0], str), f"{tool}: result has no text content item: {short(raw)}")
        text = texts[0]
        if expect_error:
            check(is_error, f"{tool}: expected isError=true, got a success result: {short(raw)}")
            return text, raw
        check(not is_error, f"{tool}({short(args, 300)}) returned isError=true: {short(text)}")
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CheckFailed(f"{tool}: text content is not JSON ({exc}): {short(text)}") from exc
        structured = raw.get("structuredContent")
        check(structured is not None, f"{tool}: result has no structuredContent: {short(raw)}")
        if isinstance(parsed, list):
            check(
                structured == {"result": parsed},
                f"{tool}: list result: structuredContent should be {{'result': <text JSON>}}; "
                f"text={short(parsed, 300)} structuredContent={short(structured, 300)}",
            )
        else:
            check(
                structured == parsed,
                f"{tool}: structuredContent differs from the text content's JSON; "
                f"text={short(parsed, 300)} structuredContent={short(structured, 300)}",
            )
        return parsed, raw

    async def run(self, init: Any) -> None:
        init_d = dump(init)
        log(f"initialized: protocolVersion={init_d.get('protocolVersion')} serverInfo={init_d.get('serverInfo')}")
        check(
            init_d.get("protocolVersion") in ("2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05"),
            f"initialize: unexpected protocolVersion {init_d.get('protocolVersion')!r}",
        )
        check(isinstance(init_d.get("capabilities"), dict) and "tools" in init_d["capabilities"],
              f"initialize: server capabilities lack 'tools': {short(init_d.get('capabilities'))}")
        self.ok("initialize (tools capability advertised)")

        listed = dump(await self.session.list_tools())
        tools = listed.get("tools") or []
        self.schemas = {t["name"]: (t.get("inputSchema") or {}) for t in tools}
        missing = [t for t in REQUIRED_TOOLS if t not in self.schemas]
        check(not missing, f"tools/list: missing tools {missing}; server listed {sorted(self.schemas)}")
        for t in REQUIRED_TOOLS:
            check(self.schemas[t].get("type") == "object", f"tools/list: {t} inputSchema is not an object schema")
        self.ok(f"tools/list ({len(tools)} tools, required ones present)")

        human_key = f"/tmp/py-client-{uuid.uuid4().hex[:12]}"
        project, _ = await self.call("ensure_project", {"human_key": human_key})
        check(isinstance(project, dict), f"ensure_project: expected an object, got {short(project)}")
        check(project.get("human_key") == human_key,
              f"ensure_project: human_key {project.get('human_key')!r} != {human_key!r}")
        check(isinstance(project.get("id"), int) and isinstance(project.get("slug"), str) and project["slug"],
              f"ensure_project: missing id/slug: {short(project)}")
        self.ok(f"ensure_project -> id={project['id']} slug={project['slug']}")

        tokens: dict[str, str | None] = {}
        for name, task in (("BlueLake", "python client sender"), ("GreenCastle", "python client recipient")):
            agent, _ = await self.call(
                "register_agent",
                {"project_key": human_key, "program": "python-sdk-client", "model": "test-model",
                 "name": name, "task_description": task},
            )
            check(isinstance(agent, dict) and agent.get("name") == name,
                  f"register_agent: expected an agent named {name}, got {short(agent)}")
            tokens[name] = agent.get("registration_token")
            self.ok(f"register_agent {name}")

        policy_args = self.with_token(
            "set_contact_policy",
            {"project_key": human_key, "agent_name": "GreenCastle", "policy": "open"},
            "registration_token", tokens["GreenCastle"],
        )
        policy, _ = await self.call("set_contact_policy", policy_args)
        check(isinstance(policy, dict) and policy.get("policy") == "open",
              f"set_contact_policy: expected policy 'open', got {short(policy)}")
        self.ok("set_contact_policy GreenCastle -> open")

        marker = uuid.uuid4().hex[:8]
        subject = f"Hello from the Python SDK {marker}"
        body = f"Body **markdown** from the Python SDK client.\n\nmarker: {marker}"
        send_args = self.with_token(
            "send_message",
            {"project_key": human_key, "sender_name": "BlueLake", "to": ["GreenCastle"],
             "subject": subject, "body_md": body},
            "sender_token", tokens["BlueLake"],
        )
        sent, _ = await self.call("send_message", send_args)
        check(isinstance(sent, dict), f"send_message: expected an object, got {short(sent)}")
        check("error" not in sent, f"send_message: delivery failed: {short(sent)}")
        check(sent.get("count") == 1, f"send_message: expected count 1, got {short(sent)}")
        deliveries = sent.get("deliveries")
        check(isinstance(deliveries, list) and len(deliveries) == 1,
              f"send_message: expected one delivery, got {short(sent)}")
        payload = deliveries[0].get("payload") or {}
        check(payload.get("subject") == subject, f"send_message: payload subject mismatch: {short(payload)}")
        message_id = payload.get("id")
        check(isinstance(message_id, int), f"send_message: payload has no integer id: {short(payload)}")
        self.ok(f"send_message BlueLake -> GreenCastle (message id {message_id})")

        inbox_args = self.with_token(
            "fetch_inbox",
            {"project_key": human_key, "agent_name": "GreenCastle", "include_bodies": True},
            "registration_token", tokens["GreenCastle"],
        )
        inbox, _ = await self.call("fetch_inbox", inbox_args)
        check(isinstance(inbox, list), f"fetch_inbox: expected a JSON list, got {short(inbox)}")
        found = [m for m in inbox if isinstance(m, dict) and m.get("id") == message_id]
        check(found, f"fetch_inbox: message {message_id} not in GreenCastle's inbox: {short(inbox)}")
        msg = found[0]
        check(msg.get("subject") == subject, f"fetch_inbox: subject {msg.get('subject')!r} != {subject!r}")
        check(msg.get("body_md") == body, f"fetch_inbox: body_md {msg.get('body_md')!r} != {body!r}")
        check(msg.get("from") == "BlueLake", f"fetch_inbox: from {msg.get('from')!r} != 'BlueLake'")
        check(msg.get("kind") == "to", f"fetch_inbox: kind {msg.get('kind')!r} != 'to'")
        self.ok("fetch_inbox GreenCastle: message arrived with subject, body, from, kind")

        whois_args = self.with_token(
            "whois",
            {"project_key": human_key, "agent_name": "BlueLake", "include_recent_commits": True},
            "registration_token", tokens["BlueLake"],
        )
        whois, _ = await self.call("whois", whois_args)
        commits = whois.get("recent_commits") if isinstance(whois, dict) else None
        check(isinstance(commits, list) and commits,
              f"whois: expected recent archive commits (the archive has at least its first), got {short(whois)}")
        check(all(isinstance(c.get("hexsha"), str) and len(c["hexsha"]) == 12 for c in commits),
              f"whois: commit hexsha must be 12 characters: {short(commits)}")
        self.ok(f"whois BlueLake: {len(commits)} recent archive commits, newest {commits[0].get('summary')!r}")

        bad_args = {"project_key": human_key, "sender_name": "PurpleBadger", "to": ["GreenCastle"],
                    "subject": "should fail", "body_md": "unknown sender"}
        text, _ = await self.call("send_message", bad_args, expect_error=True)
        check("not found" in text.lower(), f"send_message (unknown sender): error text lacks 'not found': {short(text)}")
        self.ok(f"send_message from unknown sender -> isError ({short(text, 120)})")

        await self.check_reservations(human_key, project["slug"], tokens)
        await self.check_resources(project["slug"], message_id)
        toon, _ = await self.call("ensure_project", {"human_key": human_key, "format": "toon"})
        check(isinstance(toon, dict) and toon.get("format") == "toon" and isinstance(toon.get("data"), str),
              f"ensure_project format=toon: expected a TOON envelope, got {short(toon)}")
        check(f"human_key: {human_key}" in toon["data"].splitlines(),
              f"ensure_project format=toon: data lacks the human_key line: {short(toon)}")
        self.ok("ensure_project format=toon -> TOON envelope")

    async def check_reservations(self, human_key: str, slug: str, tokens: dict[str, str | None]) -> None:
        reserve = self.with_token(
            "file_reservation_paths",
            {"project_key": human_key, "agent_name": "BlueLake", "paths": ["src/api/*.py"],
             "ttl_seconds": 600, "exclusive": True, "reason": "py-client"},
            "registration_token", tokens["BlueLake"],
        )
        granted, _ = await self.call("file_reservation_paths", reserve)
        check(isinstance(granted, dict) and [g.get("path_pattern") for g in granted.get("granted", [])] == ["src/api/*.py"],
              f"file_reservation_paths: expected one grant, got {short(granted)}")
        rival = self.with_token(
            "macro_file_reservation_cycle",
            {"project_key": human_key, "agent_name": "GreenCastle", "paths": ["src/api/users.py"],
             "auto_release": True},
            "registration_token", tokens["GreenCastle"],
        )
        cycle, _ = await self.call("macro_file_reservation_cycle", rival)
        conflicts = (cycle.get("file_reservations") or {}).get("conflicts") if isinstance(cycle, dict) else None
        check(isinstance(conflicts, list) and conflicts
              and conflicts[0]["holders"][0].get("agent") == "BlueLake",
              f"macro_file_reservation_cycle: expected BlueLake as the conflicting holder, got {short(cycle)}")
        check((cycle.get("released") or {}).get("released") == 1,
              f"macro_file_reservation_cycle: expected its own grant released, got {short(cycle)}")
        read = dump(await self.session.read_resource(f"resource://file_reservations/{slug}"))
        rows = json.loads((read.get("contents") or [{}])[0].get("text") or "null")
        check(isinstance(rows, list) and [r.get("agent") for r in rows] == ["BlueLake"],
              f"resource file_reservations: expected BlueLake's reservation only, got {short(rows)}")
        self.ok("file reservations: grant, conflict reported by the cycle macro, resource lists the holder")

    async def check_resources(self, slug: str, message_id: int) -> None:
        import mcp.shared.exceptions as mcp_exceptions

        # 2.x names it MCPError, 1.x McpError.
        mcp_error = getattr(mcp_exceptions, "MCPError", None) or getattr(mcp_exceptions, "McpError")

        listed = dump(await self.session.list_resources())
        uris = [str(r.get("uri")) for r in listed.get("resources") or []]
        check("resource://tooling/metrics" in uris, f"resources/list: no tooling/metrics in {uris}")
        templates = dump(await self.session.list_resource_templates())
        names = [t.get("uriTemplate") for t in templates.get("resourceTemplates") or []]
        check(any(str(n).startswith("resource://inbox/{agent}") for n in names),
              f"resources/templates/list: no inbox template in {names}")
        self.ok(f"resources/list ({len(uris)}) and templates/list ({len(names)})")

        read = dump(await self.session.read_resource(f"resource://inbox/GreenCastle?project={slug}"))
        contents = read.get("contents") or []
        check(contents and isinstance(contents[0].get("text"), str),
              f"resources/read inbox: no text content: {short(read)}")
        inbox = json.loads(contents[0]["text"])
        check([m.get("id") for m in inbox.get("messages", [])] == [message_id],
              f"resources/read inbox: expected message {message_id}: {short(inbox)}")
        self.ok("resources/read inbox resource: the message is there")

        try:
            await self.session.read_resource("resource://no-such/thing")
        except mcp_error as exc:
            check("Unknown resource" in str(exc), f"unknown resource: unexpected error {exc}")
        else:
            raise CheckFailed("resources/read of an unknown URI succeeded")
        self.ok("resources/read of an unknown URI -> JSON-RPC error")


async def amain(url: str, timeout: float) -> int:
    import anyio
    from mcp.client.session import ClientSession

    name, factory = pick_transport()
    log(f"mcp SDK {sdk_version()}, transport {name}, url {url}")
    with anyio.fail_after(timeout):
        async with open_transport(factory, url) as streams:
            # 1.x yields (read, write, get_session_id); 2.x yields (read, write).
            read, write = streams[0], streams[1]
            get_session_id = streams[2] if len(streams) > 2 else None
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                if get_session_id is not None:
                    log(f"Mcp-Session-Id issued by server: {get_session_id()!r}")
                runner = Runner(session)
                await runner.run(init)
    log(f"PASS: {runner.checks} checks passed")
    return 0


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for sub in exc.exceptions:
            out.extend(leaf_exceptions(sub))
        return out
    return [exc]


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} http://127.0.0.1:PORT/mcp", file=sys.stderr)
        return 2
    url = sys.argv[1]
    timeout = float(os.environ.get("MAILROOM_CLIENT_TIMEOUT", "60"))
    import anyio

    try:
        return anyio.run(amain, url, timeout)
    except BaseException as exc:  # noqa: BLE001 - report everything, including exception groups
        if isinstance(exc, KeyboardInterrupt):
            raise
        leaves = leaf_exceptions(exc)
        checks = [e for e in leaves if isinstance(e, CheckFailed)]
        if checks:
            for e in checks:
                log(f"FAIL: {e}")
        else:
            for e in leaves:
                if isinstance(e, TimeoutError):
                    log(f"FAIL: timed out after {timeout:.0f}s talking to {url}")
                else:
                    traceback.print_exception(e, file=sys.stderr)
                    log(f"FAIL: {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
