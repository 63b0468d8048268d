"""What OpenAI-compatible servers really say when they refuse, made readable and classified.

Local servers (llama.cpp, vLLM, Ollama) answer a malformed or unsupported request in their
own ways: llama-cpp-python wraps a pydantic report of every union member in an HTTP 500,
llama.cpp's server answers 500 when tools need ``--jinja``. Cutting such a body at its first
few hundred characters hides the one line that names the problem, and retrying a request the
server will never accept only adds minutes. This module keeps the telling part of a body
(bounded) and knows which failures are deterministic. No ``openai`` import.
"""

from __future__ import annotations

import errno
import ipaddress
import re
from urllib.parse import urlsplit

from ..util.textbounds import head_tail

DETAIL_LIMIT = 1200
"""Characters of a server's error message kept: enough for a validation report's cause."""

_PERMANENT_5XX = (
    "validation error",  # pydantic (llama-cpp-python answers 500 for a body it cannot parse)
    "requires --jinja",  # llama.cpp's server started without --jinja, asked for tools
    "tool choice is not supported",
    "does not support tools",
    "not supported",
)
"""Phrases that make a 5xx answer a refusal of this request, not a passing failure."""

_STREAM_TOOLS = re.compile(r"stream\w*\b.*\btool|tool.*\bstream", re.I | re.S)

_PYDANTIC_HEADER = re.compile(r"^\d+ validation errors? for \S+", re.M)
_PYDANTIC_ERROR = re.compile(
    r"^(?P<loc>\S[^\n]*)\n\s+(?P<msg>[^\n]*?)(?:\s+\[type=(?P<type>[\w.]+)[^\n]*\])?$", re.M
)
_NOISE = re.compile(r"^\s*For further information visit \S+\s*$", re.M)


def readable(message: str, limit: int = DETAIL_LIMIT) -> str:
    """One line of at most ``limit`` characters that still says what is wrong.

    A pydantic validation report is reduced to its errors, and errors that only say "this
    is not the union member for that role" are dropped when a more specific one exists, so
    ``messages.2...content: Input should be a valid string`` survives where a plain cut
    would have kept the header alone. Anything else keeps its head and its tail.
    """
    text = _NOISE.sub("", str(message))
    header = _PYDANTIC_HEADER.search(text)
    if header:
        errors = [
            (m["loc"].strip(), m["msg"].strip(), m["type"] or "")
            for m in _PYDANTIC_ERROR.finditer(text[header.end() :])
        ]
        specific = [e for e in errors if e[2] not in ("literal_error", "missing")] or errors
        if specific:
            shown = "; ".join(f"{loc}: {msg}" for loc, msg, _ in specific)
            text = f"{header.group(0)}: {shown}"
    text = " ".join(text.split())
    return " ".join(head_tail(text, limit).split())


def permanent(status: int, detail: str) -> bool:
    """Whether retrying would be pointless: 4xx except 408/409/429, or a 5xx that names a
    request the server cannot handle (see ``_PERMANENT_5XX``)."""
    if status in (408, 409, 429):
        return False
    if status < 500:
        return True
    low = detail.lower()
    return any(marker in low for marker in _PERMANENT_5XX)


def cannot_stream_tools(detail: str) -> bool:
    """Whether an error says that streaming a reply with tools is what the server refuses."""
    return bool(_STREAM_TOOLS.search(detail)) and "not supported" in detail.lower()


def hint(status: int, detail: str) -> str:
    """A short pointer to the fix for refusals people meet when they first connect a server."""
    low = detail.lower()
    if "--jinja" in low:
        return " (start llama-server with --jinja: see docs/model-servers.md)"
    if "auto-tool-choice" in low or "tool-call-parser" in low:
        return (
            " (start vLLM with --enable-auto-tool-choice --tool-call-parser NAME: "
            "see docs/model-servers.md)"
        )
    if "does not support tools" in low:
        return " (this model's chat template has no tool support: pick a model that has it)"
    if "max_completion_tokens" in low or "max_tokens" in low:
        return " (try another --max-output-tokens)"
    if status == 401 or (status == 403 and "key" in low):  # not a class's refusal (403)
        return " (check OPENAI_API_KEY)"
    if status == 404:
        return " (check the model name and --base-url)"
    return ""


def refused_on_loopback(exc: BaseException, base_url: str) -> bool:
    """Whether ``exc`` is a refused connection to a server on this machine.

    Nothing listens on that port: a local model server that is not running, or a wrong
    port. Waiting will not change that (unlike a refusal from across a network, where a
    restarting load balancer may answer again), so the request fails at once.
    """
    host = (urlsplit(base_url).hostname or "").lower()
    if host != "localhost":
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return False
        except ValueError:
            return False
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or (
            isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
        ):
            return True
        cause = cause.__cause__ or cause.__context__
    return False
