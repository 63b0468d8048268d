"""The sha256 of a relayed body, computed beside the relay rather than in its way.

Hashing a MiB costs about a millisecond, as much as loopback takes to carry it: done on
the event loop between a read and the next, it would halve the broker's throughput.
``hashlib`` lets go of the GIL for large inputs, so a large chunk is hashed by a worker
thread of this body's own (one worker: chunks are hashed in the order they came) while
the loop sends it and reads the next; small chunks are hashed on the spot, where a thread
hop would cost more than the hash. At most ``AHEAD`` bytes wait to be hashed: past that
the relay waits for the hasher, so a fast origin cannot pile bodies up in memory. The
digest is whole only once ``digest()`` returned. The worker is the broker's (``Hashers``),
started at its first large body and kept: starting a thread per body costs more than it
saves on a loaded machine.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

INLINE = 64 * 1024
"""Chunks smaller than this are hashed on the event loop (below a thread hop's cost)."""
AHEAD = 4 * 1024 * 1024
"""The most bytes waiting for the worker before the relay waits for it."""


class Hashers:
    """One broker's hashing worker: one thread, started when first wanted (chunks queued
    to it are hashed in the order they were given, whichever body they belong to)."""

    def __init__(self) -> None:
        self._worker: ThreadPoolExecutor | None = None

    def worker(self) -> ThreadPoolExecutor:
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="egress-hash")
        return self._worker

    def close(self) -> None:
        """Let the thread go once the chunk in hand is hashed (the rest is dropped)."""
        if self._worker is not None:
            self._worker.shutdown(wait=False, cancel_futures=True)
            self._worker = None


class BodyHash:
    """``await update(chunk)`` for each chunk in order, then ``await digest()``."""

    def __init__(self, hashers: Hashers) -> None:
        self._hash = hashlib.sha256()
        self._hashers = hashers
        self._pending: deque[tuple[Future[None], int]] = deque()
        self._waiting = 0

    async def update(self, chunk: bytes) -> None:
        """Hash ``chunk`` after every chunk given before it."""
        if len(chunk) < INLINE and not self._pending:
            self._hash.update(chunk)
            return
        worker = self._hashers.worker()
        self._pending.append((worker.submit(self._hash.update, chunk), len(chunk)))
        self._waiting += len(chunk)
        while self._pending and (self._waiting > AHEAD or self._pending[0][0].done()):
            await self._settle()

    async def digest(self) -> str:
        """The hex digest of every chunk given, once the worker has hashed them all."""
        while self._pending:
            await self._settle()
        return self._hash.hexdigest()

    def close(self) -> None:
        """Drop the chunks not hashed yet (the body is not wanted any more)."""
        for future, _ in self._pending:
            future.cancel()
        self._pending.clear()

    async def _settle(self) -> None:
        future, size = self._pending[0]
        if future.done():
            future.result()
        else:
            await asyncio.wrap_future(future)
        self._pending.popleft()
        self._waiting -= size
