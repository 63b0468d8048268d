"""The chat adapter's retry loop and request shape, whichever HTTP client sends the request.

``ChatModel`` is the ``Model`` for any OpenAI-compatible chat endpoint (OpenAI, vLLM,
llama.cpp, Ollama...) without the transport: ``openai_chat`` sends through ``openai``;
``http_chat`` through the HTTP client ``openai`` itself uses, for the CLI's first request,
which then leaves before ``openai`` has been imported (about two seconds). Both transports
turn their errors into ``failures`` types, so every retry and every error reads the same.
No ``openai`` import.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol

from ..config import ModelSettings
from ..core.ports import ModelReply, RetryCallback, Usage
from ..errors import ConfigError, ModelError
from ._compat import cannot_stream_tools, hint, permanent, refused_on_loopback
from ._replies import NoStreamedTools, is_transport_error, one_line
from ._wire import outgoing, retry_after
from .failures import ConnectionFailure, EndpointFailure, StatusFailure, TimeoutFailure
from .settings import OPENAI_BASE_URL

SESSION_HEADER = "X-Codeagent-Session"
"""The agent session a request belongs to, for a class gateway's usage ledger."""

current_session: ContextVar[str | None] = ContextVar("codeagent_session", default=None)
"""The session whose run makes the requests: set by the server in each run's task, so one
model object (and its connection pool) serves every session."""

NO_KEY = "no-key"
"""Sent when no key is configured: local servers need none, but the client insists on one."""

DEFAULT_MAX_OUTPUT_TOKENS = ModelSettings.max_output_tokens
"""Tokens one reply may take: without a bound a local server may write until its context is
full (minutes per step on a CPU)."""

Reply = tuple[dict[str, Any], Any, "str | None"]
"""``(message, usage, finish_reason)`` of one answered request."""


class Transport(Protocol):
    """Sends one chat-completions request (``kwargs`` as ``openai``'s ``create`` takes
    them) and reads its reply; raises ``failures`` types, ``NoStreamedTools``, or the HTTP
    library's own error for a stream broken half-way."""

    async def send(
        self,
        kwargs: dict[str, Any],
        stream: bool,
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None,
    ) -> Reply: ...

    async def aclose(self) -> None: ...


def _estimate(value: Any) -> int:
    return math.ceil(len(json.dumps(value, ensure_ascii=False, default=str)) / 4)


class ChatModel:
    """A ``Model`` backed by ``chat.completions`` with tools, on a ``Transport``.

    Retries 429, 408/409, 5xx, timeouts and connection errors with exponential backoff
    (honouring ``retry-after``, waits capped at ``max_wait`` seconds) and then raises
    ``ModelError``; other 4xx answers, 5xx answers that name a request the server cannot
    handle, and a refused connection on this machine (no server on that port) fail at once.
    ``on_text`` receives text deltas when streaming, or the whole text once otherwise. The
    API key is held by the transport only and never appears in ``repr`` or in anything
    returned.

    Compatibility with the servers people run (llama.cpp, vLLM, Ollama): ``tool_choice`` is
    sent explicitly (a missing one means "none" to llama-cpp-python); assistant turns go back
    with ``content: ""``; each reply is bounded by ``max_output_tokens``; a server that cannot
    stream replies with tools is asked again without streaming, remembered for this object
    and said once through ``on_retry`` (attempt 0, no wait). A reply with neither text nor
    tool calls is returned with its ``finish_reason``: the loop refuses it as an answer, for
    every model alike (``core.usage.empty_reply_error``).
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        stream: bool = ModelSettings.stream,
        timeout: float = ModelSettings.timeout,
        max_retries: int = ModelSettings.max_retries,
        backoff: float = 1.0,
        extra_body: dict[str, Any] | None = None,
        max_wait: float = 60.0,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        tool_choice: str | None = "auto",
        send_session: bool = False,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("no model name given")
        if max_output_tokens is not None and max_output_tokens <= 0:
            raise ConfigError("max_output_tokens must be a positive whole number")
        self.name = model.strip()
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.stream = stream
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.max_wait = max_wait
        self.extra_body = dict(extra_body or {})
        self.max_output_tokens = max_output_tokens
        self.tool_choice = tool_choice
        self.send_session = send_session
        """Send ``SESSION_HEADER`` with each request made for a session: on for the class
        gateway, which keeps it per request; other providers are not told."""
        self._stream_usage = True  # cleared if the server rejects stream_options
        self.stream_tools = True
        """Cleared once the server showed it cannot stream a reply to a request with tools."""
        self._limit_key = "max_tokens"  # max_completion_tokens if the server insists
        key = api_key or os.environ.get("OPENAI_API_KEY") or NO_KEY
        self.transport: Transport = self._make_transport(key)

    def _make_transport(self, key: str) -> Transport:
        """The transport this model sends through, holding ``key`` (subclasses choose)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        args = f"model={self.name!r}, base_url={self.base_url!r}, stream={self.stream}"
        return f"{type(self).__name__}({args})"

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop (others are dropped with their loop)."""
        await self.transport.aclose()

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
        attempt = 1
        while True:
            try:
                return await self._request(messages, tools, on_text)
            except NoStreamedTools as exc:
                self._stop_streaming_tools(str(exc), on_retry)
                await self.aclose()  # the server may drop that connection just after
                continue
            except Exception as exc:
                if isinstance(exc, StatusFailure) and self._adapt(exc, tools, on_retry):
                    continue
                reason, status, server_wait = self._classify(exc)
            if attempt == attempts:
                break
            wait = self._wait(attempt, server_wait)
            if on_retry is not None:
                on_retry(attempt, wait, reason)
            await asyncio.sleep(wait)
            attempt += 1
        tries = f"{attempts} attempt" + ("s" if attempts > 1 else "")
        raise ModelError(f"model request failed after {tries}: {reason}", status_code=status)

    def _classify(self, exc: Exception) -> tuple[str, int | None, float | None]:
        """``(reason, status, retry_after)`` for a retryable failure; raise for the rest."""
        if isinstance(exc, StatusFailure):
            status = exc.status_code
            detail = exc.detail()
            reason = f"HTTP {status} from {self.base_url}: {detail}"
            # x-should-retry: false is how a server says waiting will not help (as openai's own
            # retry logic reads it), e.g. a gateway's used-up quota.
            final = exc.headers.get("x-should-retry") == "false"
            if not final and not permanent(status, detail):
                return reason, status, retry_after(exc.headers)
            raise ModelError(
                f"model request rejected: {reason}{hint(status, detail)}", status_code=status
            ) from None
        if isinstance(exc, TimeoutFailure):
            return f"no answer from {self.base_url} within {self.timeout:g}s", None, None
        if isinstance(exc, ConnectionFailure):
            if refused_on_loopback(exc, self.base_url):
                raise ModelError(
                    f"nothing is listening at {self.base_url} (connection refused): "
                    "is the model server running, and on that port?"
                ) from None
            why = one_line(exc.cause, 120) if exc.cause else "connection failed"
            return f"connection to {self.base_url} failed ({why})", None, None
        if isinstance(exc, EndpointFailure):
            detail = one_line(str(exc))
            raise ModelError(f"model endpoint error from {self.base_url}: {detail}") from exc
        if is_transport_error(exc):  # a stream broken half-way may surface the HTTP lib's error
            return f"connection to {self.base_url} broke ({one_line(repr(exc), 120)})", None, None
        raise exc

    def _wait(self, attempt: int, server_wait: float | None) -> float:
        if server_wait is not None:
            return min(self.max_wait, server_wait)
        base = self.backoff * 2 ** (attempt - 1)
        return min(self.max_wait, base * (1 + 0.25 * random.random()))

    def _adapt(
        self, exc: StatusFailure, tools: list[dict[str, Any]], on_retry: RetryCallback | None
    ) -> bool:
        """Change what is sent after a refusal that names an optional feature; True to ask
        again at once. Each adaptation happens at most once, so this cannot loop."""
        if exc.status_code < 400:
            return False
        detail = exc.detail().lower()
        if self.stream and self._stream_usage and "stream_options" in detail:
            self._stream_usage = False  # usage is then estimated, and marked so
            return True
        if self._limit_key == "max_tokens" and "max_completion_tokens" in detail:
            self._limit_key = "max_completion_tokens"  # newer OpenAI models refuse max_tokens
            return True
        if self.stream and tools and self.stream_tools and cannot_stream_tools(detail):
            self._stop_streaming_tools(f"it answered: {exc.detail()}", on_retry)
            return True
        return False

    def _stop_streaming_tools(self, why: str, on_retry: RetryCallback | None) -> None:
        self.stream_tools = False
        if on_retry is not None:
            on_retry(
                0,
                0.0,
                f"{self.base_url} cannot stream replies to requests with tools ({why}); "
                "asking again without streaming, and not streaming such requests from now on",
            )

    # -- one request ------------------------------------------------------------------------
    def _kwargs(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict:
        kwargs: dict[str, Any] = {"model": self.name, "messages": outgoing(messages)}
        if tools:
            kwargs["tools"] = tools
            if self.tool_choice:
                kwargs["tool_choice"] = self.tool_choice
        if self.max_output_tokens is not None:
            kwargs[self._limit_key] = self.max_output_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        session = current_session.get() if self.send_session else None
        if session:
            kwargs["extra_headers"] = {SESSION_HEADER: session}
        return kwargs

    async def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None,
    ) -> ModelReply:
        kwargs = self._kwargs(messages, tools)
        stream = self.stream and not (tools and not self.stream_tools)
        if stream and self._stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
        message, usage, finish = await self.transport.send(kwargs, stream, tools, on_text)
        return ModelReply(message, self._usage(usage, messages, tools, message), finish)

    @staticmethod
    def _usage(
        usage: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], reply: dict
    ) -> Usage:
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        if prompt is None and completion is None:
            return Usage(_estimate([messages, tools]), _estimate(reply), estimated=True)
        return Usage(prompt or 0, completion or 0)
