"""Plain helpers for one model turn: token totals and the assistant message kept.

Kept apart from the loop so that the loop reads as control flow only; everything here is
a pure function of its input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ModelError


@dataclass
class Totals:
    """Token totals of a session, summed over requests (what the token budget counts)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    """True once any request's usage was estimated (the server sent none)."""

    def add(self, usage: Any) -> dict[str, Any]:
        """Count one request's ``Usage``; returns the ``UsageUpdated`` fields for it."""
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.estimated = self.estimated or usage.estimated
        return {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "estimated": usage.estimated,
            "total_prompt_tokens": self.prompt_tokens,
            "total_completion_tokens": self.completion_tokens,
            "total_estimated": self.estimated,
        }

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


def is_empty(message: dict[str, Any]) -> bool:
    """A reply with no text and no tool call: no answer, whatever the server meant by it."""
    return not str(message.get("content") or "").strip() and not message.get("tool_calls")


def empty_reply_error(model: Any, reply: Any) -> ModelError:
    """The one error for an empty reply, with what is known of why (the server's finish
    reason; at the output limit, the limit)."""
    name = getattr(model, "name", "") or "the model"
    where = f" at {model.base_url}" if getattr(model, "base_url", "") else ""
    finish = getattr(reply, "finish_reason", None)
    why = f" (finish_reason {finish!r})" if finish else ""
    limit = getattr(model, "max_output_tokens", None)
    if finish == "length" and limit:
        why = f" (it stopped at the output limit of {limit} tokens)"
    return ModelError(f"model {name}{where} sent an empty reply: no text and no tool call{why}")
