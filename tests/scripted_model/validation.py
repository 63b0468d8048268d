"""The checks the real chat-completions API makes before it answers.

The point of the fake is that a loop which leaves a tool call unanswered fails here the same
way it would against the real service: HTTP 400 with an OpenAI-style message.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

_ROLES = {"system", "developer", "user", "assistant", "tool"}


def conversation_problem(body: Any) -> str | None:
    """What the real API would reject in this request (as its 400 message), or ``None``."""
    if not isinstance(body, dict):
        return "We could not parse the JSON body of your request."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': expected a non-empty array of message objects."
    pending: list[str] = []  # ids of the latest assistant tool calls not yet answered
    known: set[str] = set()  # ids a tool message may answer right now
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in _ROLES:
            return f"Invalid value for 'messages[{i}].role': {role!r}."
        problem = _content_problem(i, role, msg.get("content"))
        if problem:
            return problem
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if call_id not in known:
                return (
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (unknown tool_call_id {call_id!r})."
                )
            if call_id in pending:
                pending.remove(call_id)
            continue
        if pending:
            return _unanswered(pending)
        known = set()
        if role == "assistant" and msg.get("tool_calls"):
            pending = [c.get("id") for c in msg["tool_calls"] if isinstance(c, dict)]
            known = set(pending)
    if pending:
        return _unanswered(pending)
    return _tools_problem(body.get("tools"))


def _content_problem(i: int, role: str, content: Any) -> str | None:
    """A message's content: text, or (as the real API takes it) an array of parts, where
    only a user message may carry ``image_url`` parts, each a URL the service can fetch or
    a base64 ``data:`` URL of a PNG, JPEG, GIF or WebP image."""
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, list) or not content:
        return f"Invalid 'messages[{i}].content': expected a string or a non-empty array."
    for j, part in enumerate(content):
        where = f"messages[{i}].content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if not isinstance(part.get("text"), str):
                return f"Invalid '{where}.text': expected a string."
            continue
        if kind != "image_url":
            return f"Invalid value for '{where}.type': {kind!r}."
        if role != "user":
            return f"Invalid '{where}': image_url is only supported in messages with role 'user'."
        problem = _image_problem(where, part.get("image_url"))
        if problem:
            return problem
    return None


def _image_problem(where: str, image: Any) -> str | None:
    url = image.get("url") if isinstance(image, dict) else None
    if not isinstance(url, str):
        return f"Invalid '{where}.image_url.url': expected a string."
    if image.get("detail", "auto") not in ("auto", "low", "high"):
        return f"Invalid value for '{where}.image_url.detail'."
    if url.startswith(("https://", "http://")):
        return None
    match = _DATA_URL.fullmatch(url)
    if not match:
        return f"Invalid image URL in '{where}': expected a base64 data URL or an https URL."
    try:
        data = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return f"Invalid image in '{where}': the base64 data could not be decoded."
    magic = _MAGIC[match.group(1)]
    if not any(data.startswith(m) for m in magic):
        return f"Invalid image in '{where}': the data is not a {match.group(1)} image."
    return None


_DATA_URL = re.compile(r"data:image/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/=]+)")
_MAGIC = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpeg": (b"\xff\xd8\xff",),
    "gif": (b"GIF87a", b"GIF89a"),
    "webp": (b"RIFF",),
}


def _unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        f"{', '.join(map(str, ids))}"
    )


def _tools_problem(tools: Any) -> str | None:
    if tools is None:
        return None
    ok = isinstance(tools, list) and all(
        isinstance(t, dict)
        and t.get("type") == "function"
        and isinstance(t.get("function"), dict)
        and t["function"].get("name")
        for t in tools
    )
    return None if ok else "Invalid 'tools': expected an array of function tool definitions."
