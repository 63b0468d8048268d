"""Answering the sandbox from a session's recorded requests: a replay that needs no network.

``replay --model recorded``, ``resume`` and ``fork`` hand the broker a ``Recording``: the
``network_request`` events of the session notebook and the content store their bodies went
into. While it plays, every request is answered from it, in recorded order for the same
method and URL, and nothing is connected to. What it serves:

- a recorded plain-HTTP ``GET`` whose body is in the store: the recorded status, the
  headers a client needs (``relay.REPLAYED_HEADERS``) and the body, byte for byte, after its
  bytes were checked against the recorded sha256 (a store someone edited is refused);
- a recorded refusal: the same refusal, word for word;
- anything else (never recorded, fetched more often than recorded, a body over the store's
  cap, an HTTPS tunnel, whose bytes the broker never saw in clear): 502 with one line saying
  so, ``not in the recording: GET http://…`` or ``not recorded (TLS): CONNECT host:443``.

The notebook is data anyone may have edited: a status, a header or a digest from it is
checked before it is used, and a digest is the only way it names a stored body.
"""

from __future__ import annotations

import asyncio
import hashlib
import http
from collections import defaultdict, deque
from collections.abc import Iterable
from typing import Any

from . import http1
from .bodies import BodyStore, Mismatch
from .relay import CHUNK, MAX_HEADER_VALUE, REPLAYED_HEADERS, answer

MISS_STATUS = 502
REPLAYED = "replayed from the recording"
MISSES_KEPT = 100


class Recording:
    """The recorded requests of one session, answered in order; ``playing`` until ``stop``."""

    def __init__(self, events: Iterable[dict[str, Any]], bodies: BodyStore) -> None:
        self.bodies = bodies
        self.playing = True
        self._queues: dict[tuple[str, str], deque[dict[str, Any]]] = defaultdict(deque)
        for event in events:
            method, url = event.get("method"), event.get("url")
            if isinstance(method, str) and isinstance(url, str) and method:
                self._queues[(method, url)].append(event)
        self.served = 0
        self.missed: list[str] = []
        """One line per request the recording could not answer (the first ``MISSES_KEPT``)."""

    @classmethod
    def from_notebook(cls, notebook: Any, bodies: BodyStore) -> Recording:
        """The ``network_request`` events logged in a session notebook."""
        meta = notebook.metadata.get("codeagent", {}) if hasattr(notebook, "metadata") else {}
        logged = meta.get("events", []) if isinstance(meta, dict) else []
        events = [e for e in logged if isinstance(e, dict) and e.get("type") == "network_request"]
        return cls(events, bodies)

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def stop(self) -> None:
        """Play no more: the broker applies its policy to the network from now on (a
        resume's live run, after the rebuild was served from the recording)."""
        self.playing = False

    async def answer(
        self, request: http1.Request, writer: asyncio.StreamWriter, record: dict[str, Any]
    ) -> None:
        """Answer ``request`` from the recording, filling ``record`` as the broker would."""
        queue = self._queues.get((request.method, request.url))
        entry = queue.popleft() if queue else None
        if entry is None:
            return await self._miss(writer, record, f"not in the recording: {_said(request)}")
        if not entry.get("allowed"):
            status, rule = _status(entry.get("status")), str(entry.get("rule", ""))[:500]
            record.update(status=status or 403, rule=f"replayed refusal: {rule}")
            self.served += 1
            return await answer(writer, status or 403, rule)
        if request.method == "CONNECT":
            why = f"not recorded (TLS): {_said(request)} passed the broker encrypted"
            return await self._miss(writer, record, why)
        digest, status = entry.get("sha256"), _status(entry.get("status"))
        if request.method != "GET" or not entry.get("stored") or not status:
            why = f"not in the recording: {_said(request)} (its body was not stored)"
            return await self._miss(writer, record, why)
        try:
            body, size = await asyncio.to_thread(self.bodies.open_verified, str(digest))
        except Mismatch as e:
            why = f"refused: {e} (recorded for {_said(request)})"
            return await self._miss(writer, record, why)
        except OSError:
            why = f"not in the recording: {_said(request)} (its body is not in the store)"
            return await self._miss(writer, record, why)
        with body:
            head = _head(status, entry.get("headers"), size)
            writer.write(head)
            record.update(status=status, rule=REPLAYED, allowed=True, stored=True)
            record.update(bytes_down=len(head), sha256=digest)
            again, sent = hashlib.sha256(), 0
            while sent < size:
                chunk = await asyncio.to_thread(body.read, min(CHUNK, size - sent))
                if not chunk:
                    break
                again.update(chunk)
                if sent + len(chunk) == size and again.hexdigest() != digest:
                    break  # changed since it was checked: the client gets it cut short
                writer.write(chunk)
                sent += len(chunk)
                record["bytes_down"] += len(chunk)
                await writer.drain()
        self.served += 1

    async def _miss(self, writer: asyncio.StreamWriter, record: dict[str, Any], why: str) -> None:
        record.update(status=MISS_STATUS, rule=why, allowed=False)
        if len(self.missed) < MISSES_KEPT:
            self.missed.append(why)
        await answer(writer, MISS_STATUS, why)


def _said(request: http1.Request) -> str:
    return f"{request.method} {request.url}"


def _status(value: Any) -> int:
    """A recorded status if it is one (100-599), else 0."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599
    return value if ok else 0


def _head(status: int, headers: Any, size: int) -> bytes:
    """The replayed response head: status, the recorded headers a client needs (checked:
    known names, printable values), the stored body's length, and ``Connection: close``."""
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Status"
    lines = [f"HTTP/1.1 {status} {phrase}"]
    chunked = False
    for pair in headers if isinstance(headers, list) else []:
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            continue
        name, value = pair[0].lower(), pair[1]
        if name not in REPLAYED_HEADERS or len(value) > MAX_HEADER_VALUE:
            continue
        if not value.isprintable():
            continue
        chunked = chunked or name == "transfer-encoding"
        lines.append(f"{name}: {value}")
    if not chunked:
        lines.append(f"Content-Length: {size}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
