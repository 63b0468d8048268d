"""Plain helpers for one model turn: token totals, tool-call arguments, tool outcomes.

Kept apart from the loop so that the loop reads as control flow only; everything here is
a pure function of its input.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class Totals:
    """Token totals of a session, summed over requests (what the token budget counts)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    """True once any request's usage was estimated (the server sent none)."""

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        data = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total,
        }
        if self.estimated:  # only when true: readers that predate it see the same dict
            data["estimated"] = True
        return data


def parse_arguments(name: str, raw: Any) -> tuple[Any, Outcome | None]:
    """Decode a tool call's arguments; on failure, the refusal the model is shown instead.

    Raw newlines and tabs inside JSON strings are accepted (``strict=False``): local models
    often write code that way, and the intent is unambiguous.
    """
    try:
        arguments = json.loads(raw or "{}", strict=False) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        return raw, Outcome.refused(
            f"Error: the arguments for {name!r} are not valid JSON ({exc.msg} at position "
            f"{exc.pos}). Call the tool again with a JSON object matching its schema."
        )
    if not isinstance(arguments, dict):
        return raw, Outcome.refused(f"Error: arguments for {name!r} must be a JSON object")
    return arguments, None


@dataclass
class Outcome:
    """What a tool call came to: the status, the text the model sees, the tool's result."""

    status: str
    message: str = ""
    result: Any = None

    @classmethod
    def refused(cls, message: str) -> Outcome:
        return cls("refused", message)

    @classmethod
    def from_result(cls, result: Any) -> Outcome:
        return cls(getattr(result, "status", "ok") or "ok", "", result)

    @property
    def text(self) -> str:
        if self.result is None:
            return self.message
        body = self.result.text or "(no output)"
        if self.status == "ok":
            return body
        note = f" {self.result.note}" if self.result.note else ""
        return f"[cell status: {self.status}.{note}]\n{body}"


def clean_message(message: dict[str, Any]) -> dict[str, Any]:
    """Keep only the fields every OpenAI-compatible server accepts back in the history."""
    clean: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append(
            {
                "id": call.get("id"),
                "type": "function",
                "function": {
                    "name": function.get("name", ""),
                    "arguments": function.get("arguments") or "",
                },
            }
        )
    if calls:
        clean["tool_calls"] = calls
    return clean
