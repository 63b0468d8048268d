"""MCP servers' calls answered from a session's recording: a replay starts no server.

``codeagent replay --model recorded`` re-drives the agent from its recorded turns; the calls
of ``mcp__`` tools among them get the result recorded for them, in order, so the replay runs
offline and never reaches the program that answered the first time.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from typing import Any

from .. import events as ev
from ..core.outcome import ToolOutcome
from ..core.toolset import ToolContext
from ..errors import ToolArgumentError
from .mcp_bounds import NAME, PREFIX


class RecordedMcpTools:
    """The ``mcp__`` tools of a recording (a ``Toolset``), each call answered as recorded."""

    def __init__(self, events: Iterable[ev.Event]) -> None:
        self._answers: dict[str, deque[ev.ToolCallFinished]] = defaultdict(deque)
        for event in events:
            name = getattr(event, "name", "")
            # The notebook is data: only well-formed names of MCP tools are taken from it.
            if (
                isinstance(event, ev.ToolCallFinished)
                and name.startswith(PREFIX)
                and NAME.match(name)
            ):
                self._answers[event.name].append(event)
        self._schemas = [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": "A recorded MCP tool (answered from the recording).",
                    "parameters": {"type": "object"},
                },
            }
            for name in self._answers
        ]

    @property
    def names(self) -> set[str]:
        return set(self._answers)

    def schemas(self) -> list[dict[str, Any]]:
        return [dict(s, function=dict(s["function"])) for s in self._schemas]

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> ToolOutcome:
        answers = self._answers.get(name)
        if answers is None:
            raise ToolArgumentError(f"unknown tool {name!r}")
        if not answers:
            return ToolOutcome.refused(f"Error: no recorded result left for {name}")
        recorded = answers.popleft()
        return ToolOutcome(recorded.status, recorded.result, duration_s=recorded.duration_s)
