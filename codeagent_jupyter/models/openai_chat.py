"""The model adapter for any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp, Ollama...).

This is the only module that imports ``openai``. The client's own retries are switched off so
that every retry is reported to the caller (``on_retry``) and ends in one clear ``ModelError``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import openai

from ..errors import ConfigError, ModelError
from ..protocols import ModelReply, RetryCallback, Usage
from ._wire import merge_call, message_dict, retry_after

OPENAI_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "no-key"
"""Sent when no key is configured: local servers need none, but the client insists on one."""

_RETRY_STATUS = {408, 409, 429}


def resolve_settings(
    model: str | None = None, base_url: str | None = None, api_key: str | None = None
) -> tuple[str, str, str | None]:
    """Fill model, base URL and key from ``CODEAGENT_MODEL``, ``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``; raise ``ConfigError`` (one line) when the run cannot work.

    The key may be ``None`` for a non-OpenAI endpoint: local servers usually need none.
    """
    model = (model or os.environ.get("CODEAGENT_MODEL") or "").strip()
    if not model:
        raise ConfigError("no model name: pass --model NAME or set CODEAGENT_MODEL")
    base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).strip()
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(f"invalid base URL {base_url!r}: expected http(s)://host[:port]/v1")
    api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
    if api_key is None and parsed.hostname == "api.openai.com":
        raise ConfigError(
            f"no API key for {base_url}: set OPENAI_API_KEY, or pass --base-url for a local server"
        )
    return model, base_url, api_key


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_detail(exc: openai.APIStatusError) -> str:
    """The server's own message, from an OpenAI-style body when there is one."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return _one_line(inner["message"])
        if isinstance(inner, str):
            return _one_line(inner)
    return _one_line(exc.response.text or exc.message)


def _estimate(value: Any) -> int:
    return math.ceil(len(json.dumps(value, ensure_ascii=False, default=str)) / 4)


class OpenAIChatModel:
    """A ``Model`` backed by ``chat.completions`` with tools.

    Retries 429, 408/409, 5xx, timeouts and connection errors with exponential backoff
    (honouring ``retry-after``, waits capped at ``max_wait`` seconds) and then raises
    ``ModelError``; other 4xx answers fail at once. ``on_text`` receives text deltas when
    streaming, or the whole text once otherwise. The API key is held by the client only and
    never appears in ``repr`` or in anything returned.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        stream: bool = False,
        timeout: float = 120,
        max_retries: int = 4,
        backoff: float = 1.0,
        extra_body: dict[str, Any] | None = None,
        max_wait: float = 60.0,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("no model name given")
        self.name = model.strip()
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.stream = stream
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.max_wait = max_wait
        self.extra_body = dict(extra_body or {})
        self._stream_usage = True  # cleared if the server rejects stream_options
        key = api_key or os.environ.get("OPENAI_API_KEY") or NO_KEY
        self._make_client: Callable[[], openai.AsyncOpenAI] = lambda: openai.AsyncOpenAI(
            api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0
        )
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI]] = {}

    def __repr__(self) -> str:
        args = f"model={self.name!r}, base_url={self.base_url!r}, stream={self.stream}"
        return f"OpenAIChatModel({args})"

    def _client(self) -> openai.AsyncOpenAI:
        """One client per event loop: its connection pool cannot be shared across loops."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop:
            entry = (loop, self._make_client())
            self._clients = {k: v for k, v in self._clients.items() if not v[0].is_closed()}
            self._clients[id(loop)] = entry
        return entry[1]

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop (others are dropped with their loop)."""
        entry = self._clients.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].close()

    # -- the retry loop ----------------------------------------------------------------------
    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: RetryCallback | None = None,
    ) -> ModelReply:
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return await self._request(messages, tools, on_text)
            except Exception as exc:
                if isinstance(exc, openai.APIStatusError) and self._drop_stream_usage(exc):
                    return await self.complete(messages, tools, on_text=on_text, on_retry=on_retry)
                reason, status, server_wait = self._classify(exc)
            if attempt == attempts:
                break
            wait = self._wait(attempt, server_wait)
            if on_retry is not None:
                on_retry(attempt, wait, reason)
            await asyncio.sleep(wait)
        tries = f"{attempts} attempt" + ("s" if attempts > 1 else "")
        raise ModelError(f"model request failed after {tries}: {reason}", status_code=status)

    def _classify(self, exc: Exception) -> tuple[str, int | None, float | None]:
        """``(reason, status, retry_after)`` for a retryable failure; raise for the rest."""
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            reason = f"HTTP {status} from {self.base_url}: {_error_detail(exc)}"
            if status in _RETRY_STATUS or status >= 500:
                return reason, status, retry_after(exc.response.headers)
            raise ModelError(
                f"model request rejected: {reason}{_hint(status)}", status_code=status
            ) from None
        if isinstance(exc, openai.APITimeoutError):
            return f"no answer from {self.base_url} within {self.timeout:g}s", None, None
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            why = _one_line(str(cause), 120) if cause and str(cause) else "connection failed"
            return f"connection to {self.base_url} failed ({why})", None, None
        if isinstance(exc, openai.OpenAIError):
            detail = _one_line(str(exc))
            raise ModelError(f"model endpoint error from {self.base_url}: {detail}") from exc
        if _is_transport_error(exc):  # a stream broken half-way may surface the HTTP lib's error
            return f"connection to {self.base_url} broke ({_one_line(repr(exc), 120)})", None, None
        raise exc

    def _wait(self, attempt: int, server_wait: float | None) -> float:
        if server_wait is not None:
            return min(self.max_wait, server_wait)
        base = self.backoff * 2 ** (attempt - 1)
        return min(self.max_wait, base * (1 + 0.25 * random.random()))

    def _drop_stream_usage(self, exc: openai.APIStatusError) -> bool:
        """Some servers reject ``stream_options``; then ask again without it, once."""
        if exc.status_code not in (400, 422) or not (self.stream and self._stream_usage):
            return False
        if "stream_options" in _error_detail(exc).lower():
            self._stream_usage = False
            return True
        return False

    # -- one request ------------------------------------------------------------------------
    async def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None,
    ) -> ModelReply:
        kwargs: dict[str, Any] = {"model": self.name, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        client = self._client()
        if not self.stream:
            response = await client.chat.completions.create(**kwargs)
            if not response.choices:
                raise ModelError(f"model endpoint {self.base_url} answered without choices")
            raw = response.choices[0].message
            calls = [
                (c.id, c.function.name, c.function.arguments)
                for c in raw.tool_calls or []
                if getattr(c, "function", None) is not None
            ]
            message = message_dict(raw.content, calls)
            if raw.content and on_text is not None:
                on_text(raw.content)
            return ModelReply(message, self._usage(response.usage, messages, tools, message))
        if self._stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
        stream = await client.chat.completions.create(stream=True, **kwargs)
        text_parts: list[str] = []
        calls_by_index: dict[int, list[Any]] = {}
        usage = None
        async with stream:
            async for chunk in stream:
                usage = getattr(chunk, "usage", None) or usage
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        text_parts.append(delta.content)
                        if on_text is not None:
                            on_text(delta.content)
                    for tc in delta.tool_calls or []:
                        merge_call(calls_by_index, tc)
        calls = [(c[0], c[1], "".join(c[2])) for _, c in sorted(calls_by_index.items())]
        message = message_dict("".join(text_parts) or None, calls)
        return ModelReply(message, self._usage(usage, messages, tools, message))

    @staticmethod
    def _usage(
        usage: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], reply: dict
    ) -> Usage:
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        if prompt is None and completion is None:
            return Usage(_estimate([messages, tools]), _estimate(reply), estimated=True)
        return Usage(prompt or 0, completion or 0)


def _is_transport_error(exc: Exception) -> bool:
    """Errors of the HTTP library under ``openai`` that it did not wrap (mid-stream)."""
    module = type(exc).__module__ or ""
    return module.startswith(("httpx", "httpcore", "h11")) or isinstance(exc, ConnectionError)


def _hint(status: int) -> str:
    if status in (401, 403):
        return " (check OPENAI_API_KEY)"
    if status == 404:
        return " (check the model name and --base-url)"
    return ""
