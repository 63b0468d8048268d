"""What a conversation must hold before it is sent again: an answer to every tool call.

Chat-completions APIs reject a request whose assistant message names a tool call with no
``tool`` message after it. A run can end between the two — its task cancelled while a cell
ran (a pause, a kernel interrupt, a killed process) — and the next run, live or resumed from
the notebook, then begins with a user message after that call. Both paths close such calls
here, with a text that tells the model the call did not finish.
"""

from __future__ import annotations

from typing import Any

INTERRUPTED_CALL = "Not run: the session was interrupted before this call finished."


def answer_open_calls(messages: list[dict[str, Any]], text: str = INTERRUPTED_CALL) -> None:
    """Answer the latest assistant message's calls that have no tool message yet (in place)."""
    for index in range(len(messages) - 1, -1, -1):
        msg = messages[index]
        if msg.get("role") == "assistant":
            answered = {m.get("tool_call_id") for m in messages[index + 1 :]}
            for call in msg.get("tool_calls") or []:
                if call.get("id") not in answered:
                    messages.append(
                        {"role": "tool", "tool_call_id": call.get("id"), "content": text}
                    )
            return
        if msg.get("role") == "user":
            return
