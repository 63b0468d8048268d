"""The server's MCP sessions: one sandbox per MCP session, kept like our own sessions.

Each MCP session (the SDK's ``Mcp-Session-Id``; on the sessionless 2026 protocol, one per
owner and client name) becomes an ``McpSession`` in the ``SessionManager``'s table at its
``initialize`` (``opened``): listed with the user's sessions, counted against
``max_sessions_per_user`` (the oldest idle sessions close to make room, as for ours, and a
session that never called a tool is idle), closed by the idle reaper. Its sandbox comes from
the pool on its first tool call, and from then on it is recorded as a signed session notebook
in the sessions folder. A closed MCP session's id answers 404, so its client starts a new MCP
session; one closed before its first tool call is forgotten (it holds nothing, has no
notebook) and its transport ended (``McpHub.terminate``), so clients that only initialize
hold at most the cap.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

from ..core.toolset import combine
from ..mcp.results import offered
from ..mcp.server import SessionRefused, instructions
from ..mcp.session import SAVE_DELAY_S, ToolSession, sandbox_tools
from . import lifecycle
from .assembly import plugin_tools, settled_hooks, snapshot_sink
from .errors import ApiError
from .session import CLOSED, IDLE, RUNNING, STARTING, AgentSession
from .supply import shutdown_quietly

log = logging.getLogger(__name__)
NOT_STARTED = "sandbox: not started"
"""How the isolation summary begins while no sandbox has said what it enforces."""


def first_known(before: str, now: str) -> bool:
    """Whether ``now`` is a summary to log: the first one, or the first real one after a
    "not started" (a server without a warm pool knows its isolation only once the first
    sandbox has started; its first line must not stay the only one)."""
    return not before or (before.startswith(NOT_STARTED) and not now.startswith(NOT_STARTED))


class McpSession(AgentSession):
    """A session driven by an MCP client instead of our model: idle between its calls."""

    kind = "mcp"

    def __init__(self, *args: Any, key: tuple[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key = key
        self.tools: ToolSession | None = None
        self._interrupting: asyncio.Future[None] | None = None
        self.opening = False
        """Its sandbox is on its way (its first tool call): not to be culled or closed."""
        self.forget: Any = None
        """Called once closed while it never had a sandbox (``McpHub.opened``)."""
        self.acquire_s: float | None = None
        """Seconds the sandbox took to arrive (from the pool: a few milliseconds)."""

    @property
    def state(self) -> str:
        if self.closed:
            return CLOSED
        if self.tools is None:  # counted from initialize; idle until a tool call starts it
            return STARTING if self.opening else IDLE
        return RUNNING if self.tools.busy else IDLE

    def summary(self) -> dict[str, Any]:
        return {**super().summary(), "kind": self.kind}

    def cancel(self) -> bool:
        """Interrupt the call in flight (the client is told the cell was interrupted)."""
        if not self.running or self.sandbox is None:
            return False
        self._interrupting = asyncio.ensure_future(self.sandbox.interrupt())
        return True

    def start_run(self, prompt: str) -> None:
        raise ApiError(409, f"session {self.id} is driven by its MCP client; it takes no message")

    async def close(self, *, grace_s: float = 10.0, reason: str | None = None) -> None:
        if self.closed:
            return
        if self.tools is not None:
            why = {lifecycle.IDLE_TIMEOUT: "idle", lifecycle.SESSION_CAP: "closed for room"}
            self.tools.end(why.get(reason or "", "the MCP client left"))
        never_started = self.tools is None and not self.opening
        await super().close(grace_s=grace_s, reason=reason)
        if never_started and self.forget is not None:
            await self.forget(self)


class McpHub:
    """The MCP sessions of the server: a sandbox per key, recorded and culled like ours.

    Needs no MCP SDK: ``/codeagent/mcp`` (``mcp_endpoint.py``, on the SDK installed) and
    Jupyter AI's tool registry (``mcp/registry.py``, on ``jupyter-server-mcp``'s SDK) both
    call ``tools_for``, so the registry works whichever SDK Jupyter AI pins.
    """

    def __init__(self, manager: Any) -> None:
        self.manager = manager
        unstarted = sandbox_tools(None, manager.root_dir, _unasked_install(manager, None))
        unstarted += plugin_tools(manager, None, attended=False)
        self.schemas = offered(combine(unstarted))
        self.sessions: dict[tuple[str, str], McpSession] = {}
        self._creating: dict[tuple[str, str], asyncio.Future[McpSession]] = {}
        self._summary = ""
        self.terminate: Any = None
        """``async (session id)``: end the transport of an MCP session (the endpoint's)."""

    async def stop(self) -> None:
        for session in list(self.sessions.values()):
            await session.close(reason=lifecycle.SERVER_STOPPED)

    async def isolation(self) -> tuple[str, str]:
        """``(summary, initialize instructions)``: the isolation the pool's sandboxes
        report (the summary is logged once, the first line an MCP user reads)."""
        manager = self.manager
        pool = await manager.ensure_pool()
        enforcement = manager.supply.enforcement or (
            pool.status().get("enforcement") if pool else None
        )
        from ..sandbox import report

        if enforcement:
            summary = report.summary(enforcement, manager.default_limits)
            text = instructions(summary, report.warning(enforcement))
        else:
            error = manager.supply.status().get("error") or "no sandbox has started yet"
            summary = f"{NOT_STARTED} ({error})"
            text = instructions(summary)
        if summary != self._summary:
            if first_known(self._summary, summary):
                manager.log.info("codeagent: MCP sandboxes: %s", summary)
            self._summary = summary
        return summary, text

    # -- sessions ---------------------------------------------------------------------------

    def opened(self, owner: str, session_id: str) -> list[AgentSession]:
        """Count the MCP session ``session_id`` of ``owner`` from its ``initialize`` on;
        the idle sessions to close for it (``manager.make_room``), marked already. The
        ``ApiError(429)`` of a user whose sessions are all running, as for ours."""
        manager, key = self.manager, (owner, session_id)
        if key in self.sessions:
            return []
        victims = manager.room_for(owner)
        lifecycle.mark(victims)
        ident = uuid.uuid4().hex[:12]
        path = manager.sessions_dir / f"{ident}.ipynb"
        session = McpSession(ident, owner=owner, path=path, model="mcp client", key=key)
        session.forget = self._forget
        manager.sessions[ident] = session
        self.sessions[key] = session
        return victims

    async def _forget(self, session: McpSession) -> None:
        """A session closed before its first tool call: nothing of it is kept."""
        self.manager.sessions.pop(session.id, None)
        if self.sessions.get(session.key) is session:
            del self.sessions[session.key]
        if self.terminate is not None and ":" not in session.key[1]:
            await self.terminate(session.key[1])

    def touch(self, owner: str, session_id: str) -> None:
        """A request of an MCP session: activity, as the idle reaper and the cap count it."""
        session = self.sessions.get((owner, session_id))
        if session is not None and not session.closed:
            session.touch()

    def closed(self, owner: str, session_id: str) -> bool:
        """Whether this MCP session had a sandbox that is gone (idle, room, deleted)."""
        session = self.sessions.get((owner, session_id))
        return session is not None and session.closed

    async def tools_for(self, key: tuple[str, str], client: str) -> ToolSession:
        """The tool session of ``key`` (``(owner, MCP session)``), opened when new."""
        session = self.sessions.get(key)
        if session is not None and session.closed:
            if ":" not in key[1]:  # an MCP session id: its client must start a new one
                raise SessionRefused("this MCP session was closed; start a new one")
            session = None
        if session is not None and session.tools is not None:
            session.touch()
            return session.tools
        pending = self._creating.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._open(key, client))
            self._creating[key] = pending
            pending.add_done_callback(lambda _: self._creating.pop(key, None))
        session = await asyncio.shield(pending)
        assert session.tools is not None
        return session.tools

    async def _open(self, key: tuple[str, str], client: str) -> McpSession:
        """A new MCP session of ``key[0]`` with its own sandbox, recorded from here on."""
        from ..record.recorder import NotebookRecorder

        manager = self.manager
        owner = key[0]
        if manager.stopping:
            raise SessionRefused("the server is shutting down")
        counted = self.sessions.get(key)
        if counted is None or counted.closed:  # the sessionless protocol: counted now
            try:
                self.sessions.pop(key, None)
                victims = self.opened(*key)
            except ApiError as e:
                raise SessionRefused(e.log_message) from None
            counted = self.sessions[key]
            counted.forget = None  # a failed start below forgets it itself
            await manager.make_room(victims)
        session = counted
        session_id = session.id
        session.opening = True
        session.model = f"mcp client: {client}"
        path = session.path
        workdir = manager.resolver.workdir_for(None)
        started = time.perf_counter()
        try:
            sandbox = await manager.supply.get(owner, workdir, manager.default_limits)
        except ApiError as e:
            session.opening = False
            if session.forget is None:
                manager.sessions.pop(session_id, None)
                self.sessions.pop(key, None)
            raise SessionRefused(e.log_message) from None
        session.acquire_s = time.perf_counter() - started
        if session.closed:  # the server began shutting down while the kernel started
            await shutdown_quietly(sandbox)
            raise SessionRefused("the session was closed while its sandbox started")
        recorder = NotebookRecorder(
            path, session_id=session_id, on_saved=manager.signer.saved, save_delay=SAVE_DELAY_S
        )
        session.bus.subscribe(recorder.emit)
        snapshot_sink(manager, session, recorder, workdir)
        tools = ToolSession(
            [
                *sandbox_tools(sandbox, workdir, _unasked_install(manager, sandbox)),
                *plugin_tools(manager, sandbox, attended=False),
            ],
            sandbox,
            session.bus,
            config=manager.settings.agent_config(),
            hooks=settled_hooks(manager, session),
            on_activity=session.touch,
        )
        session.attach(None, sandbox, recorder)
        session.tools = tools
        tools.begin(client)
        manager.log.info(
            "codeagent: MCP session %s of %s (%s): sandbox in %.1f ms",
            session_id,
            owner,
            client,
            session.acquire_s * 1000,
        )
        return session

    async def end(self, owner: str, session_id: str) -> None:
        """The client ended its MCP session (DELETE): its sandbox goes, its notebook stays."""
        session = self.sessions.get((owner, session_id))
        if session is not None:
            await session.close(reason=lifecycle.DELETED)


def _unasked_install(manager: Any, sandbox: Any) -> Any:
    """``install_packages`` for MCP sessions: only where ``c.CodeAgent.packages`` allows
    installs without asking (``approval: auto``); nobody answers an approval card there."""
    from .assembly import install_tool

    tool = install_tool(manager, sandbox)
    return tool if tool is not None and tool.approval == "auto" else None
