"""Wire-format helpers for the chat adapter: no ``openai`` import, so they are easy to reuse."""

from __future__ import annotations

import email.utils
import time
import uuid
from typing import Any


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``retry-after`` secs or date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:  # an HTTP date
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def merge_call(calls: dict[int, list[Any]], tc: Any) -> None:
    """Fold one streamed tool-call fragment into ``calls`` (index -> [id, name, arg parts])."""
    index = tc.index
    if index is None:  # some servers omit it: a new id opens a call, else continue the last
        is_new = tc.id is not None and all(c[0] != tc.id for c in calls.values())
        index = len(calls) if is_new or not calls else max(calls)
    entry = calls.setdefault(index, [None, None, []])
    if tc.id and not entry[0]:
        entry[0] = tc.id
    function = tc.function
    if function is not None:
        if function.name and not entry[1]:
            entry[1] = function.name
        if function.arguments:
            entry[2].append(function.arguments)


def message_dict(content: str | None, calls: list[tuple[Any, Any, Any]]) -> dict[str, Any]:
    """An assistant message in chat form; ids are filled in when a server omits them.

    ``content`` is ``""`` rather than ``null`` when the model wrote no text: the message
    goes back into the history, and llama-cpp-python rejects a ``null`` content there.
    """
    message: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id or f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name or "", "arguments": arguments or ""},
            }
            for call_id, name, arguments in calls
        ]
    return message


def outgoing(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as every server accepts it: assistant turns carry ``content: ""``, never
    ``null`` or nothing (llama-cpp-python validates it as a string; OpenAI, vLLM and Ollama
    accept the empty string too). Messages already in that form are passed through as is."""
    fixed = []
    for message in messages:
        if message.get("role") == "assistant" and message.get("content") is None:
            message = {**message, "content": ""}
        fixed.append(message)
    return fixed
