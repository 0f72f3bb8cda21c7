"""What the Python client scripts of tests/clients share: a failed check, a prefixed log, a
model's JSON, a tool call's JSON answer, and the `script URL` entry point."""

import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any


class CheckFailed(Exception):
    """A check against the server did not hold."""


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)


def logger(prefix: str) -> Callable[[str], None]:
    """A log function printing `[prefix] msg` lines, flushed at once."""

    def log(msg: str) -> None:
        print(f"[{prefix}] {msg}", flush=True)

    return log


def dump(model: Any) -> Any:
    """An SDK model as the JSON the server sent (a plain value stays as it is)."""
    return model.model_dump(by_alias=True, mode="json") if hasattr(model, "model_dump") else model


async def tool(client: Any, name: str, args: dict[str, Any]) -> Any:
    """Calls `name` on an SDK session or client; its JSON answer (a failed call fails the check)."""
    raw = dump(await client.call_tool(name, args))
    text = raw["content"][0]["text"]
    check(not raw.get("isError"), f"{name} failed: {text}")
    return json.loads(text)


def run_with_url(amain: Callable[[str, float], Awaitable[int]], doc: str,
                 log: Callable[[str], None]) -> int:
    """`script URL`: runs `amain(url, MAILROOM_CLIENT_TIMEOUT)`; a failed check exits 1."""
    if len(sys.argv) != 2:
        print(doc, file=sys.stderr)
        return 2
    import anyio

    timeout = float(os.environ.get("MAILROOM_CLIENT_TIMEOUT", "60"))
    try:
        return anyio.run(amain, sys.argv[1], timeout)
    except CheckFailed as failure:
        log(f"FAIL: {failure}")
        return 1
