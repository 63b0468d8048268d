"""A session's events over the server's WebSocket, as typed events, reconnecting on drops.

Kept apart from ``client`` (the REST calls): this is the one long-lived connection, with
its own retry rule. A reconnect asks for the events after the last one seen (``since``),
so none is lost or shown twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import WebSocketClosedError, websocket_connect

from ..events import Event
from .discovery import ClientError


async def follow(
    client: Any, session_id: str, since: int = 0, *, retries: int = 5
) -> AsyncIterator[Event]:
    """Every event from ``since`` on, live, typed (``Event.from_dict``); reconnects (with
    ``since``) if the socket drops. Event types this client does not know (a newer
    server) are skipped.

    Ends when the server closes the stream because the session is closed.
    """
    failures = 0
    while True:
        url = client.api.replace("http", "ws", 1) + f"/sessions/{quote(session_id, safe='')}/events"
        request = HTTPRequest(f"{url}?since={since}", headers=client.headers())
        try:
            conn = await websocket_connect(request)
        except (OSError, HTTPClientError) as e:
            code = getattr(e, "code", 0)
            if code in (403, 404) or failures >= retries:
                raise ClientError(code, f"codeagent: cannot follow {session_id}: {e}") from None
            failures += 1
            await asyncio.sleep(min(0.25 * 2**failures, 5.0))
            continue
        failures = 0
        try:
            while True:
                message = await conn.read_message()
                if message is None:
                    break
                data = json.loads(message)
                since = int(data.get("seq", since)) + 1
                try:
                    event = Event.from_dict(data)
                except (ValueError, TypeError):
                    continue
                yield event
        except WebSocketClosedError:
            pass
        finally:
            conn.close()
        if conn.close_code == 1000:  # the server ended the stream: the session is closed
            return
        failures += 1
        if failures > retries:
            raise ClientError(0, f"codeagent: lost the event stream of {session_id}")
        await asyncio.sleep(min(0.25 * 2**failures, 5.0))
