"""The way an install reaches its index: directly, or through a door someone else opens.

Under ``--network policy`` the edges hand the installer a ``Door``: for each call it opens
an HTTP proxy (a broker whose allow-list is the index hosts) and closes it after. pip gets
it as ``--proxy``, the downloads as their proxy. This module knows nothing of the broker;
it only keeps one call at a time going through the door it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

Door = Callable[[], AbstractAsyncContextManager[str]]
"""Opens the way to the index for one call: an HTTP proxy URL, good until it is left."""


class Through:
    """An installer's door: ``proxy`` is its URL while a call is under way, else None."""

    def __init__(self, door: Door | None) -> None:
        self.door = door
        self.proxy: str | None = None
        self._one_call = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        """The door open for one call (one call at a time); nothing to open without one."""
        if self.door is None:
            yield
            return
        async with self._one_call, self.door() as proxy:
            self.proxy = proxy
            try:
                yield
            finally:
                self.proxy = None
