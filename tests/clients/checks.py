"""What the Python client scripts of tests/clients share: a failed check and a prefixed log."""

from collections.abc import Callable


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
