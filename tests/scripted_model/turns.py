"""Scripted turns: what the fake model answers, as JSON-able dicts.

A turn is one of::

    {"type": "message", "message": {...assistant message...}, "usage": {...} | None}
    {"type": "error", "status": 429, "message": "...", "retry_after": 0.1}
    {"type": "delay", "seconds": 1.0, "turn": {...}}

``usage`` is optional: absent means the server counts tokens itself; ``None`` omits usage
from the answer (to test estimation). Script files may also use the shorthands
``{"text": "..."}`` and ``{"tool_calls": [["run_cell", {"code": "1+1"}], ...]}``.
"""

from __future__ import annotations

import itertools
import json
import threading
from typing import Any

Turn = dict[str, Any]

_ids = itertools.count(1)
_ids_lock = threading.Lock()


def next_id(prefix: str) -> str:
    """A process-wide unique id such as ``call_7``: ids never collide across scripts."""
    with _ids_lock:
        return f"{prefix}_{next(_ids)}"


def _usage_field(usage: dict[str, int] | bool | None) -> dict[str, Any]:
    if usage is True:
        return {}
    return {"usage": usage or None}


def text(content: str, *, usage: dict[str, int] | bool | None = True) -> Turn:
    """An assistant message without tool calls (ends an agent run)."""
    message = {"role": "assistant", "content": content}
    return {"type": "message", "message": message, **_usage_field(usage)}


def tool_calls(
    *calls: tuple[str, dict[str, Any] | str],
    content: str | None = None,
    usage: dict[str, int] | bool | None = True,
) -> Turn:
    """One assistant message with 1+ tool calls; ids are unique (``call_<n>``).

    Arguments given as a ``str`` are sent verbatim (so they may be malformed JSON).
    """
    if not calls:
        raise ValueError("tool_calls() needs at least one (name, arguments) pair")
    items = [
        {
            "id": next_id("call"),
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for name, args in calls
    ]
    message = {"role": "assistant", "content": content, "tool_calls": items}
    return {"type": "message", "message": message, **_usage_field(usage)}


def raw_tool_call(name: str, arguments: str, *, content: str | None = None) -> Turn:
    """A single tool call whose arguments string is sent as given (e.g. broken JSON)."""
    return tool_calls((name, arguments), content=content)


def error(status: int, *, retry_after: float | None = None, message: str | None = None) -> Turn:
    """An HTTP error answer with an OpenAI-style error body (and ``retry-after`` if given)."""
    turn: Turn = {"type": "error", "status": status, "message": message or f"scripted {status}"}
    if retry_after is not None:
        turn["retry_after"] = retry_after
    return turn


def delay(seconds: float, turn: Turn) -> Turn:
    """Sleep ``seconds`` before answering with ``turn`` (to trip client timeouts)."""
    return {"type": "delay", "seconds": seconds, "turn": turn}


def normalise(turn: Any) -> Turn:
    """Accept the canonical turn dicts and the script-file shorthands."""
    if not isinstance(turn, dict):
        raise ValueError(f"a scripted turn must be a dict, got {type(turn).__name__}")
    if "type" in turn:
        if turn["type"] not in ("message", "error", "delay"):
            raise ValueError(f"unknown scripted turn type {turn['type']!r}")
        return turn
    if "text" in turn:
        return text(turn["text"])
    if "tool_calls" in turn:
        pairs = [
            (c["name"], c.get("arguments", {})) if isinstance(c, dict) else (c[0], c[1])
            for c in turn["tool_calls"]
        ]
        return tool_calls(*pairs, content=turn.get("content"))
    raise ValueError(f"unknown scripted turn: {json.dumps(turn)[:200]}")
