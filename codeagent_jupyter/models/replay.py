"""A model that serves recorded assistant turns, for offline replay, demos and tests."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..core.ports import ModelReply, RetryCallback, Usage
from ..errors import ReplayError


class ReplayModel:
    """Answers each ``complete`` call with the next recorded assistant message, in order.

    The tools and the conversation are ignored: a replay re-drives the loop with the same
    choices the model made. ``on_text`` still receives each turn's text, so a streaming display
    shows it. Usage is zero (no tokens are spent). Asking for more turns than were recorded
    raises ``ReplayError``: the run diverged from the recording.
    """

    def __init__(
        self, turns: list[dict[str, Any]], name: str = "recorded", base_url: str = "recorded"
    ) -> None:
        self.name = name
        self.base_url = base_url
        self._turns = [_checked(i, turn) for i, turn in enumerate(turns)]
        self._next = 0

    def __repr__(self) -> str:
        return f"ReplayModel({len(self._turns)} turns, served={self._next}, name={self.name!r})"

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: RetryCallback | None = None,
    ) -> ModelReply:
        if self._next >= len(self._turns):
            raise ReplayError(
                f"the recording has {len(self._turns)} model turns but the replayed run asked "
                f"for turn {self._next + 1}: the run diverged from the recording"
            )
        message = copy.deepcopy(self._turns[self._next])
        self._next += 1
        if message.get("content") and on_text is not None:
            on_text(message["content"])
        return ModelReply(message=message, usage=Usage())


def _checked(index: int, turn: Any) -> dict[str, Any]:
    """Keep only the assistant-message fields, refusing what cannot be one."""
    if not isinstance(turn, dict) or turn.get("role", "assistant") != "assistant":
        raise ReplayError(f"recorded turn {index + 1} is not an assistant message")
    content = turn.get("content")
    if content is not None and not isinstance(content, str):
        raise ReplayError(f"recorded turn {index + 1} has non-text content")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = turn.get("tool_calls")
    if calls:
        if not isinstance(calls, list) or not all(
            isinstance(c, dict) and isinstance(c.get("function"), dict) and c.get("id")
            for c in calls
        ):
            raise ReplayError(f"recorded turn {index + 1} has malformed tool_calls")
        message["tool_calls"] = copy.deepcopy(calls)
    return message
