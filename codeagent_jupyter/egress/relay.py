"""Relaying one allowed request: a plain HTTP exchange or a CONNECT tunnel, within limits.

``Relaying`` is the half of ``Broker`` that moves bytes once the decision is made: the
request upstream as HTTP/1.0 with ``Connection: close``, the response back with its body
hashed and cut at ``max_response_mb``, or a tunnel's bytes both ways uninspected; every
byte counted against the session, every read and write against the idle timeout. A
complete ``GET`` body also goes into ``bodies`` (the content store, when there is one) as
it passes, with the response headers a replay needs kept in the record. It expects
``policy``, ``idle_timeout``, ``session_bytes`` and ``bodies`` on the object (``Broker``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable
from typing import Any, TypeVar

from . import http1
from .bodies import BodyStore, BodyWriter
from .policy import EgressPolicy

T = TypeVar("T")
MIB = 1024 * 1024
CHUNK = 256 * 1024
"""Bytes relayed per read: large enough that a 1 MiB body takes a few loop turns."""
_PHRASES = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    411: "Length Required",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``awaitable`` given ``seconds``, else ``TimeoutError``: ``asyncio.timeout`` where
    there is one, since ``wait_for`` before Python 3.12 makes a task of every read."""
    timeout = getattr(asyncio, "timeout", None)
    if timeout is None:
        try:
            return await asyncio.wait_for(awaitable, seconds)
        except asyncio.TimeoutError:
            raise TimeoutError from None
    async with timeout(seconds):
        return await awaitable


class Refused(Exception):
    """A request refused or a transfer cut: the status and the rule, said in one line."""

    def __init__(self, status: int, rule: str) -> None:
        super().__init__(rule)
        self.status, self.rule = status, rule


class Relaying:
    """Byte moving for ``Broker``; see the module's docstring for what it relies on."""

    policy: EgressPolicy
    idle_timeout: float
    session_bytes: int
    bodies: BodyStore | None

    async def _forward(
        self,
        request: http1.Request,
        head: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        record: dict[str, Any],
    ) -> None:
        """One request upstream as HTTP/1.0 with ``Connection: close``; the response back."""
        authority = request.host if request.port == 80 else f"{request.host}:{request.port}"
        lines = [f"{request.method} {request.path} HTTP/1.0", f"Host: {authority}"]
        lines += [f"{k}: {v}" for k, v in request.headers if k.lower() not in http1.HOP_BY_HOP]
        lines.append("Connection: close")
        sent = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        up_writer.write(sent)
        record["bytes_up"] = len(sent)
        left = request.body_length
        while left > 0:
            chunk = await self._read(reader, min(CHUNK, left))
            if not chunk:
                return
            left -= len(chunk)
            record["bytes_up"] += len(chunk)
            self._count(len(chunk), record)
            up_writer.write(chunk)
            await self._drain(up_writer)
        try:
            head = await within(up_reader.readuntil(b"\r\n\r\n"), self.idle_timeout)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            await answer(writer, 502, f"no valid response from {request.host}")
            record.update(status=502, rule=record["rule"] + "; no valid response upstream")
            return
        status, expected = response_shape(head, request.method)
        record["status"] = status
        record["headers"] = replay_headers(head)
        head = closing(head)
        writer.write(head)
        record["bytes_down"] = len(head)
        keep = self.bodies.writer() if self.bodies and request.method == "GET" else None
        try:
            await self._body(up_reader, writer, expected, record, keep)
        finally:
            if keep is not None and not record.get("stored"):
                keep.discard()  # cut, too large, or the client went away: nothing stays

    async def _body(
        self,
        up_reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        expected: int | None,
        record: dict[str, Any],
        keep: BodyWriter | None,
    ) -> None:
        """The response body back to the client, hashed, capped, and kept when whole."""
        body = hashlib.sha256()
        cap = int(self.policy.max_response_mb * MIB)
        size, whole = 0, False
        try:
            while expected is None or size < expected:
                want = CHUNK if expected is None else min(CHUNK, expected - size)
                chunk = await self._read(up_reader, want)
                if not chunk:
                    whole = expected is None
                    break
                if size + len(chunk) > cap:
                    chunk = chunk[: cap - size]
                    record["rule"] += f"; cut at max_response_mb {self.policy.max_response_mb:g}"
                    size += len(chunk)
                    writer.write(chunk)
                    body.update(chunk)
                    break
                size += len(chunk)
                self._count(len(chunk), record)
                writer.write(chunk)  # sent first: the hash and the store come after
                body.update(chunk)
                if keep is not None:  # a disk write: off the event loop
                    await asyncio.to_thread(keep.write, chunk)
                await self._drain(writer)
            else:
                whole = True
        except Refused as e:
            record["rule"] += f"; cut: {e.rule}"
        record["bytes_down"] += size
        record["sha256"] = body.hexdigest()
        if keep is not None:
            # Only a body the sandbox got whole is kept: a replay serves it as it came.
            kept = await asyncio.to_thread(keep.finish, record["sha256"]) if whole else None
            record["stored"] = kept is not None

    async def _tunnel(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        record: dict[str, Any],
    ) -> None:
        """Bytes both ways, uninspected, within the response cap, the session cap and time."""
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        record["status"] = 200
        cap = int(self.policy.max_response_mb * MIB)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, key: str) -> None:
            while True:
                chunk = await self._read(src, CHUNK)
                if not chunk:
                    if dst.can_write_eof():
                        dst.write_eof()
                    return
                if key == "bytes_down" and record[key] + len(chunk) > cap:
                    record["rule"] += f"; cut at max_response_mb {self.policy.max_response_mb:g}"
                    raise Refused(403, "max_response_mb")
                record[key] += len(chunk)
                self._count(len(chunk), record)
                dst.write(chunk)
                await self._drain(dst)

        ups = asyncio.ensure_future(pump(reader, up_writer, "bytes_up"))
        downs = asyncio.ensure_future(pump(up_reader, writer, "bytes_down"))
        try:
            await asyncio.wait({downs}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (ups, downs):
                task.cancel()
            for task in (ups, downs):
                with contextlib.suppress(BaseException):
                    await task
        with contextlib.suppress(BaseException):
            downs.result()

    async def _read(self, stream: asyncio.StreamReader, size: int) -> bytes:
        try:
            return await within(stream.read(size), self.idle_timeout)
        except TimeoutError:
            raise Refused(504, f"idle for {self.idle_timeout:g} s") from None

    async def _drain(self, stream: asyncio.StreamWriter) -> None:
        transport = stream.transport
        if transport.is_closing():
            raise ConnectionResetError("the other side closed")
        if transport.get_write_buffer_size() <= transport.get_write_buffer_limits()[1]:
            return  # below the high-water mark drain() would not wait: spare its timer task
        try:
            await within(stream.drain(), self.idle_timeout)
        except TimeoutError:
            raise Refused(408, f"client did not read for {self.idle_timeout:g} s") from None

    def _count(self, size: int, record: dict[str, Any]) -> None:
        self.session_bytes += size
        if self.session_bytes > self.policy.max_session_mb * MIB:
            raise Refused(403, f"max_session_mb {self.policy.max_session_mb:g} used up")


def response_shape(head: bytes, method: str) -> tuple[int, int | None]:
    """The upstream status, and the body length to relay (None: until it closes)."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 502
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return status, 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return status, int(value.strip())
    return status, None


_CONNECTION = (b"connection", b"keep-alive", b"proxy-connection")
REPLAYED_HEADERS = (
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "content-disposition",
    "content-language",
    "last-modified",
    "etag",
    "location",
)
"""Response headers a replay sends again (with its own ``Content-Length``): what a client
reads to decode the body or follow a redirect; never cookies or anything about the
connection."""
MAX_HEADER_VALUE = 1000


def replay_headers(head: bytes) -> list[list[str]]:
    """The ``REPLAYED_HEADERS`` of a response head, as ``[name, value]`` pairs, bounded."""
    kept = []
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        key = name.strip().lower().decode("latin-1")
        if colon and key in REPLAYED_HEADERS and len(kept) < len(REPLAYED_HEADERS):
            text = value.strip().decode("latin-1")[:MAX_HEADER_VALUE]
            kept.append([key, "".join(c for c in text if c.isprintable())])
    return kept


def closing(head: bytes) -> bytes:
    """The response head with ``Connection: close``: the broker ends every connection after
    one response, so a client must never take it for one it can reuse."""
    lines = head.removesuffix(b"\r\n\r\n").split(b"\r\n")
    kept = [lines[0]] + [
        line for line in lines[1:] if line.partition(b":")[0].strip().lower() not in _CONNECTION
    ]
    return b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n"


async def answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """The broker's own response: the status and one line naming the rule."""
    text = f"codeagent egress broker: {status} {reason}\n".encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {status} {_PHRASES.get(status, 'Error')}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(text)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode("ascii") + text)
    await asyncio.wait_for(writer.drain(), 5)
