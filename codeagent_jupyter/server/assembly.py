"""The server's one assembly of a session's agent: a new session and a resumed or forked
one are both built by ``build_session_agent``, in one call.

Everything a session's agent is made of is decided here from ``c.CodeAgent``: its budgets
(and the request's own step budget), the standard tools on its sandbox and workspace, the
``delegate`` tool, the administrator's tool hooks, the session's approver, the workspace
snapshots after each step, and for a resume the earlier conversation and run count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..core.assembly import build_agent
from ..core.loop import AgentLoop
from ..egress.index_door import index_door
from ..errors import ConfigError
from ..packages.installer import Installer
from ..record.snapshots import SnapshotStore
from ..tools import ToolBox
from ..tools.install import InstallTool
from .changes_sink import attach as keep_changes_cell
from .delegation import helper_tool
from .errors import ApiError
from .session import AgentSession
from .snapshot_worker import OffLoopSnapshots, SettledFirst


def build_session_agent(
    manager: Any,
    session: AgentSession,
    model: Any,
    sandbox: Any,
    recorder: Any,
    *,
    workdir: Path,
    limits: SandboxLimits,
    max_steps: int | None = None,
    context: str = "",
    notebook_cells: dict[str, str] | None = None,
    cell_labels: dict[str, str] | None = None,
    history: Sequence[dict[str, Any]] = (),
    run_index: int = 0,
    install: Any = None,
    instructions: str = "",
    instruction_files: Sequence[str] = (),
) -> AgentLoop:
    """The agent of ``session`` on ``sandbox``, recorded by ``recorder`` (already on the
    session's bus). 503 when the administrator's tool hooks are misconfigured. ``install``:
    the ``install_packages`` tool where a resume made it first (to reinstall with it)."""
    settings = manager.settings
    config = settings.agent_config()
    if max_steps is not None:
        config = dataclasses.replace(config, max_steps=max_steps)
    if instructions:  # the workspace's AGENTS.md (``core.instructions``)
        config = dataclasses.replace(config, instructions=instructions)
    extra: dict[str, Any] = {"owner": session.owner, "notebook_path": session.notebook_path}
    if instruction_files:  # named in the panel's header, recorded with the run
        extra["instruction_files"] = list(instruction_files)
    price = settings.prices.get(model.name)
    if isinstance(price, dict):
        extra["price"] = {k: float(price.get(k, 0)) for k in ("input", "output")}
    config.extra_context.update(extra)
    snapshot_sink(manager, session, recorder, workdir)
    vision = config.sees(model.name)
    tools: list[Any] = [
        ToolBox(
            sandbox,
            workdir,
            notebook_cells=notebook_cells,
            cell_labels=cell_labels,
            vision=vision,
        )
    ]
    helpers = helper_tool(
        manager, session, model, workdir=workdir, limits=limits, recorder=recorder
    )
    if helpers is not None:
        tools.append(helpers)
    install = install if install is not None else install_tool(manager, sandbox)
    if install is not None:
        tools.append(install)
    session.installs = install  # the panel's installs go through it too (``installs``)
    return build_agent(
        model,
        sandbox,
        session.bus,
        config,
        tools=tools,
        hooks=settled_hooks(manager, session),
        approver=session.approve,
        context=context,
        history=history,
        run_index=run_index,
    )


def install_tool(manager: Any, sandbox: Any) -> Any:
    """``install_packages`` under ``c.CodeAgent.packages``; None when installs are off.
    Every session's sandbox writes somewhere under the server's root, so no wheel folder
    may lie there."""
    policy = manager.settings.package_policy()
    if policy is None:
        return None
    door = None
    if getattr(sandbox, "egress", None) is not None:
        # the sandbox's way out is the broker: pip's to the index is one of its own
        door = index_door(policy.sources, manager.settings.egress_policy())
    return InstallTool(
        sandbox, Installer(policy, door=door), approval=policy.approval, writable=[manager.root_dir]
    )


def store_of(manager: Any, owner: str) -> SnapshotStore:
    """``owner``'s snapshot store: in the server's state directory, out of every sandbox's
    reach, bounded by the per-user quota (``snapshot_areas``)."""
    return manager.snapshots.store_for(owner)


def snapshot_sink(manager: Any, session: AgentSession, recorder: Any, workdir: Any) -> None:
    """Snapshot ``workdir`` after each step, ahead of the recorder (so each save has it)."""
    keep_changes_cell(manager, session, recorder, workdir)  # after the recorder: last cell
    meta = recorder.notebook.metadata["codeagent"]
    if session.snapshots is not None:  # resumed again: the same sink, the current notebook
        session.snapshots.meta, session.snapshots.workdir = meta, workdir
        session.snapshots.recorder = recorder
        return
    store = store_of(manager, session.owner)
    session.snapshots = OffLoopSnapshots(store, workdir, meta, session=session.id)
    session.snapshots.recorder = recorder
    session.bus.subscribe(session.snapshots.emit, first=True)


def settled_hooks(manager: Any, session: AgentSession) -> Any:
    """The session's tool hooks (``session_hooks``) behind a wait for its workspace
    snapshots: no tool call starts while the last step's snapshot is being taken."""
    return SettledFirst(session.snapshots, session_hooks(manager, session), session.id)


def session_hooks(manager: Any, session: AgentSession) -> Any:
    """The administrator's tool hooks for the session's agent (``c.CodeAgent.hooks``), on
    its bus in place of an earlier agent's; None when there are none."""
    from ..hooks import HookChain

    settings = manager.settings
    names = list(getattr(settings, "hooks", None) or [])
    if not names:
        return None
    try:
        chain = HookChain.from_names(
            names,
            dict(settings.hook_options),
            timeout_s=settings.hook_timeout,
            session_id=session.id,
        )
    except ConfigError as e:
        raise ApiError(503, f"the tool hooks are misconfigured: {e}") from None
    if session.hooks is not None:
        session.bus.unsubscribe(session.hooks.emit)
    session.hooks = chain
    session.bus.subscribe(chain.emit, on_end=lambda: chain.end_soon({"owner": session.owner}))
    return chain
