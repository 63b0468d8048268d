"""``SessionManager``: owns every session, where their sandboxes come from, and the models.

Handlers only translate HTTP to calls here. All of it runs on the server's event loop, so
the bookkeeping (session table, per-user counts) needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from .errors import ApiError
from .session import AgentSession
from .store import load_saved_sessions
from .supply import SandboxSupply, shutdown_quietly
from .workspace import NotebookResolver

RECORDED = "recorded"
"""The model name of sessions answered from ``c.CodeAgent.recording``."""


class SessionManager:
    """Creates, finds and closes sessions; restores earlier ones from their notebooks."""

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
        self.supply = SandboxSupply(
            root_dir=self.root_dir,
            limits=self.default_limits,
            pool_size=settings.pool_size,
            log=self.log,
        )
        self._models: dict[str, Any] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._stopping = False

    def load_saved(self) -> None:
        """List the sessions recorded under ``sessions_dir`` (cut-off runs: interrupted)."""
        for session in load_saved_sessions(self.sessions_dir, self.log):
            self.sessions[session.id] = session

    async def ensure_pool(self) -> Any:
        """Start the sandbox pool (once) and the housekeeping task."""
        self._ensure_reaper()
        return await self.supply.ensure_pool()

    def _ensure_reaper(self) -> None:
        if self._reaper is None and not self._stopping:
            self._reaper = asyncio.ensure_future(self._reap())

    async def warm(self, owner: str, notebook_path: str | None) -> dict[str, Any]:
        """Hold a started sandbox for ``owner``'s next session (replaces an older warm one)."""
        workdir = self.resolver.workdir_for(notebook_path)
        self._ensure_reaper()
        await self.supply.warm(owner, workdir, self.settings.warm_ttl)
        return {"warm": True, "pool": self.supply.status()}

    # -- models ---------------------------------------------------------------------------

    def _resolve(self) -> tuple[str, str]:
        """The default model and endpoint; ConfigError (one line) when there is none."""
        from ..errors import ConfigError
        from ..models.openai_chat import resolve_settings

        settings = self.settings
        if not (settings.model or os.environ.get("CODEAGENT_MODEL")):
            raise ConfigError(
                "no model configured: set c.CodeAgent.model in jupyter_server_config.py "
                "(or CODEAGENT_MODEL in the server's environment)"
            )
        name, base_url, _ = resolve_settings(
            settings.model, settings.base_url, settings.resolved_api_key()
        )
        return name, base_url

    def model_for(self, requested: str | None) -> Any:
        """The model for a session; a name outside ``allowed_models`` is refused (403)."""
        from ..errors import ConfigError
        from ..models.openai_chat import OpenAIChatModel

        settings = self.settings
        if settings.recording:
            if requested not in (None, RECORDED):
                raise ApiError(403, f"this server replays a recording; model {requested!r} is off")
            return self._recorded_model()
        try:
            default, base_url = self._resolve()
        except ConfigError as e:
            raise ApiError(503, str(e)) from e
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
                max_output_tokens=settings.max_output_tokens,
            )
            self._models[name] = model
        return model

    def _recorded_model(self) -> Any:
        """A fresh replay of the configured recording (each session replays it from the start)."""
        from ..errors import CodeAgentError
        from ..models.replay import ReplayModel
        from ..recorder import load_session

        path = Path(self.settings.recording)
        path = path if path.is_absolute() else self.root_dir / path
        try:
            turns = [turn for run in load_session(path).turns for turn in run]
            return ReplayModel(turns, name=RECORDED, base_url=self.settings.recording)
        except (OSError, ValueError, CodeAgentError) as e:
            raise ApiError(503, f"cannot replay {self.settings.recording!r}: {e}") from e

    def model_info(self) -> dict[str, Any]:
        """What clients may know about the model: names and endpoint, never the key."""
        from ..errors import ConfigError

        settings = self.settings
        info: dict[str, Any] = {"allowed_models": list(settings.allowed_models)}
        if settings.recording:
            return info | {"configured": True, "name": RECORDED, "recording": settings.recording}
        try:
            name, base_url = self._resolve()
            info |= {"configured": True, "name": name, "base_url": base_url}
        except ConfigError as e:
            info |= {"configured": False, "error": str(e)}
        info["api_key_configured"] = bool(settings.resolved_api_key())
        info["stream"] = settings.stream
        return info

    def health(self) -> dict[str, Any]:
        """Model settings (no secret), what the sandbox really enforces, pool and sessions."""
        pool = self.supply.status()
        enforcement = pool.pop("enforcement", None) or self.supply.enforcement
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
        max_steps: int | None = None,
    ) -> AgentSession:
        """Start a session and its first run; returns once the run is under way.

        ``max_steps`` may only lower the administrator's step budget (400 otherwise).
        """
        from ..context import build_context
        from ..loop import AgentLoop
        from ..recorder import NotebookRecorder
        from ..tools import ToolBox

        if self._stopping:
            raise ApiError(503, "the server is shutting down")
        self._ensure_reaper()
        cap = self.settings.max_sessions_per_user
        if self.open_count(owner) >= cap:
            raise ApiError(
                429, f"too many open sessions ({cap}); delete one (DELETE /sessions/ID) first"
            )
        if max_steps is not None and not 0 < max_steps <= self.settings.max_steps:
            raise ApiError(400, f"max_steps must be between 1 and {self.settings.max_steps}")
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
            sandbox = await self.supply.get(owner, workdir, session_limits)
        except BaseException:
            del self.sessions[session_id]
            raise
        if session.closed:  # deleted or shut down while the kernel was starting
            await shutdown_quietly(sandbox)
            raise ApiError(409, f"session {session_id} was closed while starting")
        try:
            config = self.settings.agent_config()
            if max_steps is not None:
                config = dataclasses.replace(config, max_steps=max_steps)
            config.extra_context.update({"owner": owner, "notebook_path": notebook_path})
            price = self.settings.prices.get(chosen.name)
            if isinstance(price, dict):
                config.extra_context["price"] = {
                    k: float(price.get(k, 0)) for k in ("input", "output")
                }
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
            await shutdown_quietly(sandbox)
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
        idle_timeout, warm_ttl = self.settings.idle_timeout, self.settings.warm_ttl
        interval = max(0.2, min(5.0, warm_ttl / 2, idle_timeout / 2 if idle_timeout > 0 else 5.0))
        while not self._stopping:
            await asyncio.sleep(interval)
            await self.supply.expire_warm()
            now = time.monotonic()
            if idle_timeout > 0:
                for session in list(self.sessions.values()):
                    if session.state == "idle" and now - session.last_activity > idle_timeout:
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
        await self.supply.shutdown()
        for model in self._models.values():
            with contextlib.suppress(Exception):
                await model.aclose()
        self._models.clear()
