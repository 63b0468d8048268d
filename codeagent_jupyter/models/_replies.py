"""Reading one chat-completions reply, plain or streamed, into our message form.

Apart from the adapter (``openai_chat``) so that its retry loop and the two ways a reply
arrives stay short; this module takes the ``openai`` objects as they come and imports
nothing of ``openai`` itself (the adapter stays its only importer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.usage import is_empty
from ..errors import ModelError
from ._compat import cannot_stream_tools
from ._wire import merge_call, message_dict


class NoStreamedTools(Exception):
    """The server cannot stream a reply to a request with tools: ask again without streaming."""


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_transport_error(exc: Exception) -> bool:
    """Errors of the HTTP library under ``openai`` that it did not wrap (mid-stream)."""
    module = type(exc).__module__ or ""
    return module.startswith(("httpx", "httpcore", "h11")) or isinstance(exc, ConnectionError)


def plain_reply(
    response: Any, base_url: str, on_text: Callable[[str], None] | None
) -> tuple[dict[str, Any], Any, str | None]:
    """``(message, usage, finish_reason)`` of a reply that came whole."""
    if not response.choices:
        raise ModelError(f"model endpoint {base_url} answered without choices")
    choice = response.choices[0]
    raw = choice.message
    calls = [
        (c.id, c.function.name, c.function.arguments)
        for c in raw.tool_calls or []
        if getattr(c, "function", None) is not None
    ]
    message = message_dict(raw.content, calls)
    if raw.content and on_text is not None:
        on_text(raw.content)
    return message, response.usage, choice.finish_reason


async def streamed_reply(
    stream: Any,
    tools: list[dict[str, Any]],
    on_text: Callable[[str], None] | None,
    connection_error: type[Exception],
) -> tuple[dict[str, Any], Any, str | None]:
    """``(message, usage, finish_reason)`` of a streamed reply, text passed on as it comes.

    The server said 200 already: a stream with tools that breaks, or ends, before any reply
    is the server refusing to stream tools (``NoStreamedTools``: ask again, plainly).
    """
    text_parts: list[str] = []
    calls_by_index: dict[int, list[Any]] = {}
    usage, finish = None, None
    try:
        async with stream:
            async for chunk in stream:
                usage = getattr(chunk, "usage", None) or usage
                for choice in chunk.choices or []:
                    finish = choice.finish_reason or finish
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        text_parts.append(delta.content)
                        if on_text is not None:
                            on_text(delta.content)
                    for tc in delta.tool_calls or []:
                        merge_call(calls_by_index, tc)
    except Exception as exc:
        broken = is_transport_error(exc) or isinstance(exc, connection_error)
        if tools and not text_parts and not calls_by_index:
            if broken:
                raise NoStreamedTools(f"the stream broke before any reply: {exc!r}") from exc
            if cannot_stream_tools(str(exc)):  # an error event inside the stream
                raise NoStreamedTools(f"it said: {one_line(str(exc))}") from exc
        raise
    calls = [(c[0], c[1], "".join(c[2])) for _, c in sorted(calls_by_index.items())]
    message = message_dict("".join(text_parts), calls)
    if tools and finish is None and is_empty(message):
        raise NoStreamedTools("its stream ended without any reply")
    return message, usage, finish
