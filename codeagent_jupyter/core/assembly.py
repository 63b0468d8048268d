"""``build_agent``: the one wiring of an agent from a model, a sandbox and its settings.

The CLI, the server, the benches and the examples all build their loop here, so a setting
such as ``AgentConfig.result_chars`` reaches the tools the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import AgentConfig
from ..tools import ToolBox
from .bus import EventBus
from .loop import AgentLoop
from .ports import EventSink, Model
from .runner import Approver


def build_agent(
    model: Model,
    sandbox: Any,
    bus: EventBus | Sequence[EventSink] = (),
    config: AgentConfig | None = None,
    *,
    workdir: Path | None = None,
    approver: Approver | None = None,
    context: str = "",
    notebook_cells: dict[str, str] | None = None,
) -> AgentLoop:
    """An ``AgentLoop`` with the standard tools on ``sandbox`` (files in ``workdir``, by
    default the sandbox's own), publishing on ``bus`` (or to a list of sinks)."""
    config = config or AgentConfig()
    root = Path(workdir) if workdir is not None else Path(sandbox.workdir)
    tools = ToolBox(sandbox, root, result_chars=config.result_chars, notebook_cells=notebook_cells)
    return AgentLoop(model, sandbox, tools, bus, config, approver=approver, context=context)
