"""``build_agent``: a session's agent, built whole from everything it is made of.

Every edge (the CLI's ``run`` and ``resume``, the server's create and rebuild, a helper of
the ``delegate`` tool, the benches) builds its loop here in one call and never reaches into
it afterwards: the tools (as toolsets), the hooks around them, the approver, the context,
and for a resumed session its history and run index are all inputs. The core builds no
tools itself: the edge (or ``tools/``) makes them and passes them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import AgentConfig
from .bus import EventBus
from .loop import AgentLoop
from .ports import EventSink, Model, SandboxPort, ToolHooks
from .runner import Approver
from .toolset import Toolset


def build_agent(
    model: Model,
    sandbox: SandboxPort | None,
    bus: EventBus | Sequence[EventSink] = (),
    config: AgentConfig | None = None,
    *,
    tools: Toolset | Sequence[Toolset],
    hooks: ToolHooks | None = None,
    approver: Approver | None = None,
    context: str = "",
    history: Sequence[dict[str, Any]] = (),
    run_index: int = 0,
) -> AgentLoop:
    """An ``AgentLoop`` on ``sandbox`` (started, or a ``StartingSandbox`` still starting)
    offering ``tools`` (one toolset or several, combined in order), publishing on ``bus`` (a
    session's bus, or a list of sinks for a bus of its own).

    ``hooks`` see every tool call (and reach helpers through the tool context);
    ``approver`` decides calls of tools under ``ask``; ``context`` opens the first request;
    ``history`` (the earlier conversation, no system message) and ``run_index`` (runs so
    far) continue a resumed session.
    """
    return AgentLoop(
        model,
        sandbox,
        tools,
        bus,
        config or AgentConfig(),
        approver=approver,
        context=context,
        hooks=hooks,
        history=history,
        run_index=run_index,
    )
