"""Forwarding to the real provider with the class key, streaming passed through.

Only the JSON body goes upstream, with the class key as the only credential: the student's
token, cookies and other headers never leave the gateway. Streamed answers are relayed
event by event as they arrive (read with ``httpx-sse``, comments dropped); the gateway asks
the provider for the usage chunk (``stream_options.include_usage``) so the ledger counts
real tokens, and drops that chunk again when the client did not ask for it. A provider
that reports no usage is estimated (about four characters a token) and the ledger row
says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent

from .errors import GatewayError

TRANSCRIPT_LIMIT = 1_000_000
"""Characters of a response kept for a transcript."""


@dataclass
class Reply:
    """What came back: status, usage (as reported, or estimated) and the body's text."""

    status: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    text: list[str] = field(default_factory=list)
    _size: int = 0

    def count(self, usage: Any) -> bool:
        """Take the provider's usage report; False when there is none to take."""
        if not isinstance(usage, dict) or not isinstance(usage.get("prompt_tokens"), int):
            return False
        self.prompt_tokens = usage["prompt_tokens"]
        completion = usage.get("completion_tokens")
        self.completion_tokens = completion if isinstance(completion, int) else 0
        return True

    def keep(self, piece: str) -> None:
        if self._size < TRANSCRIPT_LIMIT:
            self.text.append(piece[: TRANSCRIPT_LIMIT - self._size])
            self._size += len(piece)


def _estimate(value: Any) -> int:
    return max(1, math.ceil(len(json.dumps(value, default=str)) / 4))


Start = Callable[[int, str], None]
Sink = Callable[[bytes], Awaitable[None]]


class Upstream:
    """An OpenAI-compatible provider at ``base_url``; one pooled HTTP client."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float = 300.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=10.0),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def _failure(self, exc: httpx.HTTPError) -> GatewayError:
        if isinstance(exc, httpx.TimeoutException):
            return GatewayError(
                504,
                "the class's model provider did not answer in time",
                kind="server_error",
                code="upstream_timeout",
            )
        return GatewayError(
            502,
            f"the class's model provider cannot be reached ({type(exc).__name__})",
            kind="server_error",
            code="upstream_error",
        )

    async def models(self) -> list[str]:
        """Model ids the provider lists (for a class that allows any model)."""
        try:
            response = await self._client.get(f"{self.base_url}/models", headers=self._auth)
        except httpx.HTTPError as e:
            raise self._failure(e) from None
        try:
            data = response.json().get("data", [])
        except (ValueError, AttributeError):
            data = []
        return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    async def chat(
        self, body: dict[str, Any], start: Start, sink: Sink, *, keep_text: bool = False
    ) -> Reply:
        """Forward one chat completion; ``start(status, content_type)`` then ``sink`` chunks."""
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        sent = body
        if body.get("stream") and not wants_usage:
            sent = {
                **body,
                "stream_options": {**(body.get("stream_options") or {}), "include_usage": True},
            }
        try:
            reply = await self._post(sent, body, start, sink, wants_usage, keep_text)
            if reply is None:  # the provider refused stream_options the client never sent
                reply = await self._post(body, body, start, sink, True, keep_text)
                assert reply is not None
        except httpx.HTTPError as e:
            raise self._failure(e) from None
        return reply

    async def _post(
        self,
        sent: dict[str, Any],
        original: dict[str, Any],
        start: Start,
        sink: Sink,
        wants_usage: bool,
        keep_text: bool,
    ) -> Reply | None:
        url = f"{self.base_url}/chat/completions"
        async with self._client.stream("POST", url, json=sent, headers=self._auth) as response:
            kind = response.headers.get("content-type", "application/json")
            if response.status_code == 200 and kind.startswith("text/event-stream"):
                start(200, "text/event-stream")
                return await self._relay(response, original, sink, wants_usage, keep_text)
            data = await response.aread()
        if response.status_code == 400 and sent is not original and b"stream_options" in data:
            return None
        start(response.status_code, kind)
        reply = Reply(response.status_code)
        await sink(data)
        text = data.decode("utf-8", "replace")
        if keep_text:
            reply.keep(text)
        if response.status_code == 200:
            try:
                usage = json.loads(text).get("usage")
            except (ValueError, AttributeError):
                usage = None
            if not reply.count(usage):
                reply.estimated = True
                reply.prompt_tokens = _estimate(original.get("messages"))
                reply.completion_tokens = _estimate(text)
        return reply

    async def _relay(
        self,
        response: httpx.Response,
        original: dict[str, Any],
        sink: Sink,
        wants_usage: bool,
        keep_text: bool,
    ) -> Reply:
        """Pass server-sent events through one by one (parsed by ``httpx-sse``, written out
        again in the same form), reading usage on the way."""
        reply = Reply(200)
        usage: dict[str, Any] | None = None
        produced = 0
        async for sse in EventSource(response).aiter_sse():
            drop = False
            chunk = _chunk(sse.data)
            if chunk is not None:
                if chunk.get("usage"):
                    usage = chunk["usage"]
                    drop = not wants_usage and not chunk.get("choices")
                for choice in chunk.get("choices") or ():
                    produced += len(json.dumps((choice or {}).get("delta") or ""))
            text = _encode(sse)
            if keep_text:
                reply.keep(text)
            if not drop:
                await sink(text.encode())
        if not reply.count(usage):
            reply.estimated = True
            reply.prompt_tokens = _estimate(original.get("messages"))
            reply.completion_tokens = max(1, math.ceil(produced / 4))
        return reply


def _chunk(data: str) -> dict[str, Any] | None:
    """A streamed chat-completion chunk (None for ``[DONE]`` or anything not a JSON object)."""
    if data.strip() == "[DONE]":
        return None
    try:
        chunk = json.loads(data)
    except ValueError:
        return None
    return chunk if isinstance(chunk, dict) else None


def _encode(sse: ServerSentEvent) -> str:
    """One event in the wire form the client expects (``data:`` lines, then a blank line)."""
    lines = [] if sse.event == "message" else [f"event: {sse.event}"]
    lines += [f"id: {sse.id}"] if sse.id else []
    lines += [f"retry: {sse.retry}"] if sse.retry is not None else []
    lines += [f"data: {line}" for line in sse.data.split("\n")]
    return "\n".join(lines) + "\n\n"
