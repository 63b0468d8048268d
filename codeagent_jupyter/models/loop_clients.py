"""One HTTP client per event loop, for both transports of the chat model.

An async HTTP client belongs to the event loop that first used it (its connection pool and
locks); the CLI, the server and tests may drive one model from several loops in turn, so each
loop gets its own client, and clients of closed loops are dropped. A client made ahead of time
(``spare``: its TLS context loaded off the critical path) goes to the first loop that asks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

C = TypeVar("C")


class LoopClients(Generic[C]):
    """The clients made by ``make``, one per running event loop."""

    def __init__(self, make: Callable[[], C]) -> None:
        self.make = make
        self.spare: C | None = None
        self._by_loop: dict[int, tuple[asyncio.AbstractEventLoop, C]] = {}

    def prepare(self) -> None:
        """Make the next loop's client now (in a thread, before any loop needs it)."""
        self.spare = self.make()

    def current(self) -> C:
        """The running loop's client, made (or taken from ``spare``) on first use."""
        loop = asyncio.get_running_loop()
        entry = self._by_loop.get(id(loop))
        if entry is None or entry[0] is not loop:
            client, self.spare = self.spare or self.make(), None
            entry = (loop, client)
            self._by_loop = {k: v for k, v in self._by_loop.items() if not v[0].is_closed()}
            self._by_loop[id(loop)] = entry
        return entry[1]

    def pop(self) -> C | None:
        """The running loop's client, forgotten (for the caller to close), or None."""
        entry = self._by_loop.pop(id(asyncio.get_running_loop()), None)
        return entry[1] if entry is not None else None
