"""Asking the person at the terminal whether the sandbox may reach an unlisted host.

Under ``--network policy`` with ``default: ask`` the broker asks here, on a terminal only
(a run without one denies, saying so). The question names the host the broker checked,
shown as plain text (the request's host passed the broker's strict host syntax: letters,
digits, dots, dashes, an IPv6 literal), never anything the model chose; the answer is kept
by that host for the session when the user says so. One question at a time; reading the
answer runs off the event loop, so the kernel and the model go on meanwhile.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from typing import TextIO

ANSWERS = {"o": "once", "once": "once", "s": "session", "session": "session"}


class TerminalApprover:
    """The broker's approver on a terminal: ``"once"``, ``"session"`` or ``"deny"``."""

    def __init__(self, stdin: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stderr = stderr or sys.stderr
        self._lock = asyncio.Lock()

    async def __call__(self, host: str, *, port: int = 0, method: str = "") -> str | None:
        async with self._lock:
            ask = functools.partial(self._ask, host, port, method)
            return await asyncio.get_running_loop().run_in_executor(None, ask)

    def _ask(self, host: str, port: int = 0, method: str = "") -> str | None:
        shown = "".join(c if c.isprintable() else "?" for c in host)[:255]
        shown += f":{port}" if port else ""
        what = f" ({method[:16]})" if method.isalpha() else ""
        self.stderr.write(
            f"\nThe sandbox asks to reach {shown}{what}. "
            "Allow it? [o]nce / for this [s]ession / [N]o: "
        )
        self.stderr.flush()
        line = self.stdin.readline()
        if not line:
            return None
        return ANSWERS.get(line.strip().lower(), "deny")


def terminal_approver() -> TerminalApprover | None:
    """An approver when both stdin and stderr are terminals, else None (nobody to ask)."""
    try:
        if sys.stdin.isatty() and sys.stderr.isatty():
            return TerminalApprover()
    except (AttributeError, ValueError):
        pass
    return None
