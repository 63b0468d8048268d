"""Tool call ids are the model's words: a session refuses one it has already used.

Everything the user decides about a call (approve, deny, "allow for this session", accept a
cell) reaches the server keyed by the call's id, and that id is chosen by the model. An id
used twice would let a decision about one call land on another — a denied ``run_command``
and a later ``run_cell`` under the same id once made "allow for this session" allow the
command. So an id is claimed once per session (the conversation before a resume included),
and a call that reuses one is refused before anything about it runs: no hook, no approval,
no tool. The model still gets its one tool message, saying why.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def duplicate_text(call_id: str) -> str:
    """What the model is shown for a call whose id was already used in the session."""
    return (
        f"Error: tool call id {call_id!r} was already used in this session; the call was not "
        "run. Every tool call needs an id of its own: call the tool again with a new id."
    )


class CallIds:
    """The tool call ids a session has used, seeded from the conversation it continues."""

    def __init__(self, history: Iterable[dict[str, Any]] = ()) -> None:
        self._used: set[str] = set()
        for message in history:
            if message.get("role") == "assistant":
                for call in message.get("tool_calls") or []:
                    self._used.add(str(call.get("id", "")))

    def claim(self, call_id: str) -> bool:
        """True the first time ``call_id`` is seen (it is used from now on), else False."""
        if call_id in self._used:
            return False
        self._used.add(call_id)
        return True
