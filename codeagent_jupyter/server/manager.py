"""``SessionManager``: owns every session, the sandbox pool and the models of the server.

Handlers only translate HTTP to calls here. All of it runs on the server's event loop, so
the bookkeeping (session table, per-user counts, warm sandboxes) needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from .. import events as ev
from ..config import SandboxLimits
from .errors import ApiError
from .session import AgentSession
from .workspace import NotebookResolver

INTERRUPTED_REASON = "the server stopped while this run was in progress"


class SessionManager:
    """Creates, finds and closes sessions; keeps the pool warm; restores sessions from disk."""

    def __init__(
        self,
        settings: Any,
        *,
        root_dir: Path,
        contents_manager: Any,
        log: logging.Logger | None = None,
    ) -> None:
        self.settings = settings
        self.root_dir = Path(root_dir)
        self.sessions_dir = settings.sessions_path(self.root_dir)
        self.resolver = NotebookResolver(self.root_dir, contents_manager)
        self.log = log or logging.getLogger(__name__)
        self.default_limits: SandboxLimits = settings.sandbox_limits()
        self.sessions: dict[str, AgentSession] = {}
        self.pool: Any = None
        self._pool_lock: asyncio.Lock | None = None
        self._pool_error: str | None = None
        self._warm: dict[str, tuple[Any, Path, float]] = {}
        self._models: dict[str, Any] = {}
        self._enforcement: dict[str, Any] | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._stopping = False

    # -- persistence ----------------------------------------------------------------------

    def load_saved(self) -> None:
        """List the sessions recorded under ``sessions_dir``; mark cut-off runs interrupted."""
        from ..recorder import NotebookRecorder, load_session

        if not self.sessions_dir.is_dir():
            return
        for path in sorted(self.sessions_dir.glob("*.ipynb")):
            try:
                record = load_session(path)
            except Exception as e:
                self.log.warning("codeagent: skipping %s: %s", path.name, e)
                continue
            events = [e.to_dict() for e in record.events]
            status = record.status
            if status == "running":
                # The server died mid-run: close the run in the notebook so it says so.
                seq = events[-1]["seq"] + 1 if events else 0
                finished = ev.RunFinished(seq=seq, status=ev.INTERRUPTED, reason=INTERRUPTED_REASON)
                try:
                    NotebookRecorder(path).emit(finished)
                except Exception as e:
                    self.log.warning("codeagent: cannot mark %s interrupted: %s", path.name, e)
                events.append(finished.to_dict())
                status = ev.INTERRUPTED
            meta = record.notebook.metadata.get("codeagent", {})
            extra = (meta.get("config") or {}).get("extra_context") or {}
            session = AgentSession(
                path.stem,
                owner=str(extra.get("owner", "")),
                path=path,
                notebook_path=extra.get("notebook_path"),
                model=record.model,
                created=(meta.get("timings") or {}).get("started"),
                events=events,
                status=status,
            )
            session.closed = True
            self.sessions[session.id] = session

    # -- the pool -------------------------------------------------------------------------

    async def ensure_pool(self) -> Any:
        """Start the sandbox pool once; later calls return it (or None if it cannot start)."""
        if self._pool_lock is None:
            self._pool_lock = asyncio.Lock()
        async with self._pool_lock:
            if self.pool is None and not self._stopping:
                pool = None
                try:
                    from ..sandbox import SandboxPool

                    pool = SandboxPool(
                        size=self.settings.pool_size,
                        workdir=self.root_dir,
                        limits=self.default_limits,
                    )
                    await pool.start()
                except Exception as e:
                    self._pool_error = str(e)
                    self.log.error("codeagent: sandbox pool failed to start: %s", e)
                    if pool is not None:
                        with contextlib.suppress(Exception):
                            await pool.shutdown()
                    return None
                self.pool = pool
                self._pool_error = None
            if self._reaper is None and not self._stopping:
                self._reaper = asyncio.ensure_future(self._reap())
            return self.pool

    async def _acquire(self, owner: str, workdir: Path, limits: SandboxLimits) -> Any:
        """A started sandbox for a new session: the owner's warm one, the pool's, or a new one."""
        from ..sandbox import Sandbox

        if limits == self.default_limits:
            warm = self._warm.pop(owner, None)
            if warm is not None:
                sandbox, warm_dir, _ = warm
                if warm_dir == workdir:
                    return sandbox
                await _shutdown_quietly(sandbox)
            pool = await self.ensure_pool()
            if pool is not None:
                return await pool.acquire(workdir=workdir)
        sandbox = Sandbox(workdir=workdir, limits=limits)
        await sandbox.start()
        return sandbox

    async def warm(self, owner: str, notebook_path: str | None) -> dict[str, Any]:
        """Hold a started sandbox for ``owner``'s next session (replaces an older warm one)."""
        workdir = self.resolver.workdir_for(notebook_path)
        held = self._warm.get(owner)
        if held is not None and held[1] == workdir:
            self._warm[owner] = (held[0], workdir, time.monotonic() + self.settings.warm_ttl)
            return {"warm": True, "pool": self.pool_status()}
        sandbox = await self._start_sandbox(owner, workdir, self.default_limits)
        old = self._warm.pop(owner, None)
        self._warm[owner] = (sandbox, workdir, time.monotonic() + self.settings.warm_ttl)
        if old is not None:
            await _shutdown_quietly(old[0])
        return {"warm": True, "pool": self.pool_status()}

    async def _start_sandbox(self, owner: str, workdir: Path, limits: SandboxLimits) -> Any:
        try:
            sandbox = await self._acquire(owner, workdir, limits)
            self._enforcement = dict(sandbox.enforcement)  # what this machine enforces
            return sandbox
        except ApiError:
            raise
        except Exception as e:
            self.log.exception("codeagent: cannot start a sandbox")
            raise ApiError(503, f"cannot start a sandbox kernel: {e}") from e

    def pool_status(self) -> dict[str, Any]:
        if self.pool is not None:
            status = dict(self.pool.status())
        else:
            status = {"started": False, "error": self._pool_error}
        status["warm_held"] = len(self._warm)
        return status

    # -- models ---------------------------------------------------------------------------

    def model_for(self, requested: str | None) -> Any:
        """The model for a session; a name outside ``allowed_models`` is refused (403)."""
        from ..errors import ConfigError
        from ..models.openai_chat import OpenAIChatModel, resolve_settings

        settings = self.settings
        try:
            default, base_url, _ = resolve_settings(
                settings.model, settings.base_url, settings.resolved_api_key()
            )
        except ConfigError as e:
            raise ApiError(503, f"the server has no usable model configured: {e}") from e
        name = requested or default
        if name != default and name not in settings.allowed_models:
            raise ApiError(403, f"model {name!r} is not allowed on this server")
        model = self._models.get(name)
        if model is None:
            model = OpenAIChatModel(
                name,
                base_url,
                settings.resolved_api_key(),
                stream=settings.stream,
                timeout=settings.model_timeout,
                max_retries=settings.model_max_retries,
            )
            self._models[name] = model
        return model

    def model_info(self) -> dict[str, Any]:
        """What clients may know about the model: names and endpoint, never the key."""
        from ..errors import ConfigError
        from ..models.openai_chat import resolve_settings

        settings = self.settings
        info: dict[str, Any] = {"allowed_models": list(settings.allowed_models)}
        try:
            name, base_url, _ = resolve_settings(
                settings.model, settings.base_url, settings.resolved_api_key()
            )
            info |= {"configured": True, "name": name, "base_url": base_url}
        except ConfigError as e:
            info |= {"configured": False, "error": str(e)}
        info["api_key_configured"] = bool(settings.resolved_api_key())
        info["stream"] = settings.stream
        return info

    def health(self) -> dict[str, Any]:
        """Model settings (no secret), what the sandbox really enforces, pool and sessions."""
        pool = self.pool_status()
        enforcement = pool.pop("enforcement", None) or self._enforcement
        return {
            "model": self.model_info(),
            "sandbox": {"limits": self.default_limits.to_dict(), "enforcement": enforcement},
            "pool": pool,
            "sessions": {
                "total": len(self.sessions),
                "open": sum(1 for s in self.sessions.values() if not s.closed),
                "running": sum(1 for s in self.sessions.values() if s.running),
            },
            "max_sessions_per_user": self.settings.max_sessions_per_user,
            "approval": dict(self.settings.approval),
        }

    # -- sessions -------------------------------------------------------------------------

    def get(self, session_id: str) -> AgentSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise ApiError(404, f"no session {session_id}")
        return session

    def list(self) -> list[dict[str, Any]]:
        ordered = sorted(self.sessions.values(), key=lambda s: s.created)
        return [s.summary() for s in ordered]

    def open_count(self, owner: str) -> int:
        return sum(1 for s in self.sessions.values() if s.owner == owner and not s.closed)

    async def create(
        self,
        owner: str,
        prompt: str,
        *,
        notebook_path: str | None = None,
        model: str | None = None,
        limits: dict[str, Any] | None = None,
    ) -> AgentSession:
        """Start a session and its first run; returns once the run is under way."""
        from ..context import build_context
        from ..loop import AgentLoop
        from ..recorder import NotebookRecorder
        from ..tools import ToolBox

        if self._stopping:
            raise ApiError(503, "the server is shutting down")
        cap = self.settings.max_sessions_per_user
        if self.open_count(owner) >= cap:
            raise ApiError(
                429, f"too many open sessions ({cap}); delete one (DELETE /sessions/ID) first"
            )
        chosen = self.model_for(model)
        session_limits = self._limits(limits)
        workdir = self.resolver.workdir_for(notebook_path)
        notebook = await self.resolver.read(notebook_path) if notebook_path else None

        session_id = uuid.uuid4().hex[:12]
        path = self.sessions_dir / f"{session_id}.ipynb"
        session = AgentSession(
            session_id, owner=owner, path=path, notebook_path=notebook_path, model=chosen.name
        )
        self.sessions[session_id] = session  # counts against the cap while the kernel starts
        try:
            sandbox = await self._start_sandbox(owner, workdir, session_limits)
        except BaseException:
            del self.sessions[session_id]
            raise
        if session.closed:  # deleted or shut down while the kernel was starting
            await _shutdown_quietly(sandbox)
            raise ApiError(409, f"session {session_id} was closed while starting")
        try:
            config = self.settings.agent_config()
            config.extra_context.update({"owner": owner, "notebook_path": notebook_path})
            recorder = NotebookRecorder(path, session_id=session_id)
            loop = AgentLoop(
                chosen,
                sandbox,
                ToolBox(sandbox, workdir, result_chars=config.result_chars),
                [session.log, recorder],
                config,
                approver=session.approve,
                context=build_context(workdir, notebook),
            )
        except BaseException:
            del self.sessions[session_id]
            await _shutdown_quietly(sandbox)
            raise
        session.attach(loop, sandbox, recorder)
        session.start_run(prompt)
        return session

    def _limits(self, requested: dict[str, Any] | None) -> SandboxLimits:
        """Request limits may only tighten the administrator's (403 otherwise)."""
        if not requested:
            return self.default_limits
        try:
            wanted = SandboxLimits.from_dict(requested)
        except ValueError as e:
            raise ApiError(400, str(e)) from e
        base = self.default_limits.to_dict()
        merged = dict(base)
        for name in requested:
            value, ceiling = getattr(wanted, name), base[name]
            if value > ceiling:
                raise ApiError(403, f"limit {name}={value} is above this server's {ceiling}")
            merged[name] = value
        return SandboxLimits(**merged)

    def follow_up(self, session_id: str, text: str) -> AgentSession:
        session = self.get(session_id)
        session.start_run(text)
        return session

    def decide_cell(self, session_id: str, cell_id: str, accepted: bool) -> dict[str, Any]:
        from ..recorder import NotebookRecorder

        session = self.get(session_id)
        return session.decide_cell(cell_id, accepted, lambda s: NotebookRecorder(s.path))

    async def delete(self, session_id: str) -> AgentSession:
        session = self.get(session_id)
        await session.close()
        return session

    # -- housekeeping ---------------------------------------------------------------------

    async def _reap(self) -> None:
        """Close sessions idle past ``idle_timeout`` and drop expired warm sandboxes."""
        while not self._stopping:
            await asyncio.sleep(5.0)
            now = time.monotonic()
            for owner, (sandbox, _, expires) in list(self._warm.items()):
                if now > expires and self._warm.get(owner, (None,))[0] is sandbox:
                    del self._warm[owner]
                    await _shutdown_quietly(sandbox)
            timeout = self.settings.idle_timeout
            if timeout > 0:
                for session in list(self.sessions.values()):
                    idle = session.state == "idle" and now - session.last_activity > timeout
                    if idle:
                        self.log.info("codeagent: closing idle session %s", session.id)
                        await session.close()

    async def shutdown(self) -> None:
        """Stop every run, shut every sandbox and the pool down (no kernel left behind)."""
        self._stopping = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper
        live = [s for s in self.sessions.values() if not s.closed]
        await asyncio.gather(*(s.close(grace_s=5.0) for s in live), return_exceptions=True)
        warm = [held[0] for held in self._warm.values()]
        self._warm.clear()
        await asyncio.gather(*(_shutdown_quietly(s) for s in warm))
        if self._pool_lock is not None:
            async with self._pool_lock:
                pool, self.pool = self.pool, None
        else:
            pool, self.pool = self.pool, None
        if pool is not None:
            with contextlib.suppress(Exception):
                await pool.shutdown()
        for model in self._models.values():
            with contextlib.suppress(Exception):
                await model.aclose()
        self._models.clear()


async def _shutdown_quietly(sandbox: Any) -> None:
    with contextlib.suppress(Exception):
        await sandbox.shutdown()
