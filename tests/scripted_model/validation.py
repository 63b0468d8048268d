"""The checks the real chat-completions API makes before it answers.

The point of the fake is that a loop which leaves a tool call unanswered fails here the same
way it would against the real service: HTTP 400 with an OpenAI-style message.
"""

from __future__ import annotations

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
