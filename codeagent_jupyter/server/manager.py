"""``SessionManager``: owns every session, where their sandboxes come from, and the models.

Handlers only translate HTTP to calls here. All of it runs on the server's event loop, so
the bookkeeping (session table, per-user counts) needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..core.context import loaded_context
from ..core.mentions import parse as parse_mentions
from ..sandbox.demand import ceiling
from . import lifecycle
from .creation import create
from .errors import ApiError
from .fetched import fetched_areas
from .mentioning import mentioned, with_mentions
from .model_registry import ModelRegistry
from .offloop import off_loop
from .policy import Caller, check_text
from .revive import pause, revive
from .session import AgentSession
from .signing import SessionSigner, UnsignedNotebook
from .snapshot_areas import SnapshotAreas, protected_sessions
from .supply import SandboxSupply
from .uploads import UploadStore
from .workspace import NotebookResolver

OLD_SESSIONS_DIR = ".codeagent/sessions"
"""Where sessions were kept before (inside the server root, within the sandbox's reach)."""


class SessionManager:
    """Creates, finds and closes sessions; restores earlier ones from their notebooks."""

    def __init__(
        self,
        settings: Any,
        *,
        root_dir: Path,
        contents_manager: Any,
        log: logging.Logger | None = None,
        state_dir: Path,
        session_manager: Any = None,
    ) -> None:
        self.settings = settings
        self.root_dir = Path(root_dir)
        self.sessions_dir = settings.sessions_path(self.root_dir)
        self.state_dir = Path(state_dir)
        self.resolver = NotebookResolver(self.root_dir, contents_manager, session_manager)
        self.class_instructions: Callable[[], str] | None = None
        """The class gateway's instructions for every session (on JupyterHub), or None."""
        self.log = log or logging.getLogger(__name__)
        self.default_limits: SandboxLimits = settings.sandbox_limits()
        self.sessions: dict[str, AgentSession] = {}
        self.supply = SandboxSupply(
            root_dir=self.root_dir,
            limits=self.default_limits,
            pool_size=settings.pool_size,
            log=self.log,
            allow_unconfined=settings.allow_unconfined,
            kernel_manager_class=settings.kernel_manager_class,
            backend=settings.sandbox_backend_of(self.root_dir),
            preload=settings.preload_modules(),
            pool_max=ceiling(settings.pool_size, settings.pool_max, settings.pool_memory_mb),
        )
        self.signer = SessionSigner(self.state_dir, self.log)
        self.models = ModelRegistry(settings, self.root_dir)
        self.uploads = UploadStore(self.state_dir / "uploads", settings.max_upload_mb)
        self.snapshots = SnapshotAreas(
            self.state_dir / "snapshots",
            settings.snapshot_quota_mb,
            # called by captures in worker threads: a copy, as the loop may add a session
            lambda owner: protected_sessions(list(self.sessions.values()), owner),
        )
        policy = settings.egress_policy() if hasattr(settings, "egress_policy") else None
        self.fetched = fetched_areas(self.state_dir, self.snapshots, policy)
        """Each owner's fetched bodies (``--network policy``), inside their quota."""
        self._reaper: asyncio.Task[None] | None = None
        self._stopping = False

    def load_saved(self) -> None:
        """List the signed sessions under ``sessions_dir`` (cut-off runs: interrupted)."""
        from .store import load_into

        load_into(self, OLD_SESSIONS_DIR)

    @property
    def stopping(self) -> bool:
        """The server is shutting down: nothing new starts."""
        return self._stopping

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

    def health(self, owner: str | None = None) -> dict[str, Any]:
        """Model settings (no secret), what the sandbox really enforces, pool and sessions;
        with ``owner``, that user's snapshot store (its use, and skipped snapshots and why)."""
        from .health import report

        return report(self, owner)

    # -- sessions -------------------------------------------------------------------------

    def get(self, session_id: str, caller: Caller, *, change: bool = False) -> AgentSession:
        """``caller``'s session (or one a read group may see); 404 for anyone else's, the
        same answer as for an id that does not exist."""
        session = self.sessions.get(session_id)
        read_groups = self.settings.read_groups
        if session is None or not caller.may_read(session.owner, read_groups):
            raise ApiError(404, f"no session {session_id}")
        if change and not caller.may_change(session.owner):
            raise ApiError(403, f"session {session_id} belongs to another user; it is read-only")
        return session

    async def follow_paths(self) -> None:
        """Bring each open session's ``notebook_path`` up to date with its kernel's Jupyter
        session (the notebook was renamed or moved since the session started)."""
        for session in [s for s in self.sessions.values() if s.kernel_id and not s.closed]:
            path = await self.resolver.path_of_kernel(session.kernel_id)
            if path:
                session.notebook_path = path

    def list(self, caller: Caller) -> list[dict[str, Any]]:
        read_groups = self.settings.read_groups
        mine = [s for s in self.sessions.values() if caller.may_read(s.owner, read_groups)]
        return [s.summary() for s in sorted(mine, key=lambda s: s.created)]

    def open_count(self, owner: str) -> int:
        return len(lifecycle.open_sessions(self.sessions.values(), owner))

    def room_for(self, owner: str) -> list[AgentSession]:
        """The idle sessions to close for one more of ``owner``'s (429 if all are busy)."""
        cap = self.settings.max_sessions_per_user
        return lifecycle.room_for(self.sessions.values(), owner, cap)

    async def make_room(self, victims: list[AgentSession]) -> None:
        await lifecycle.close_all(victims, self.log)

    async def create(self, owner: str, prompt: str, **request: Any) -> AgentSession:
        """Start a session and its first run; returns once the run is under way (the
        request's fields and their checks: ``creation.create``)."""
        if self._stopping:
            raise ApiError(503, "the server is shutting down")
        self._ensure_reaper()
        return await create(self, owner, prompt, **request)

    def follow_up(
        self, session_id: str, caller: Caller, text: str, section: str = ""
    ) -> AgentSession:
        """``section``: what the message's @-mentions add (the model reads both, people
        the message)."""
        session = self.get(session_id, caller, change=True)
        check_text(text, self.settings.max_prompt_chars, "the message")
        shown = " ".join(text.split()) if section else ""
        session.start_run(with_mentions(text, section), shown)
        return session

    async def send(
        self,
        session_id: str,
        caller: Caller,
        text: str,
        *,
        strict_mentions: bool = True,
        uploads: list[str] | None = None,
    ) -> AgentSession:
        """A message: a follow-up in a live session; a resume of a closed one; its
        @-mentions resolved first (400 for an unknown one, before anything runs, unless
        not ``strict_mentions``). ``uploads``: variables of the user's kernel (``POST
        /uploads``) loaded into the sandbox before the message runs, as at the start."""
        session = self.get(session_id, caller, change=True)
        uploads = uploads or []
        added = self.uploads.names(session.owner, uploads)
        section = await self._mentioned(session, text, strict_mentions, added)
        if session.closed and not session.deleted and not self._stopping:
            self._ensure_reaper()
            return await revive(self, session, with_mentions(text, section), uploads=uploads)
        if uploads:
            section = await self._load(session, uploads, section)
        return self.follow_up(session_id, caller, text, section)

    async def _load(self, session: AgentSession, uploads: list[str], section: str) -> str:
        """Load ``uploads`` into a live session's sandbox (409 while it runs: nothing is
        claimed then); ``section`` with what was loaded said for the model."""
        sandbox = session.sandbox
        if session.running or session.loop is None or sandbox is None:
            raise ApiError(409, f"session {session.id} is busy; send the message again later")
        chosen = self.uploads.take(session.owner, uploads, sandbox.limits.disk_mb)
        loaded = await self.uploads.load(chosen, sandbox)
        session.variables = list(dict.fromkeys([*session.variables, *(u.name for u in chosen)]))
        said = loaded_context(loaded)
        return f"{section}\n\n{said}" if section and said else section or said

    async def _mentioned(
        self, session: AgentSession, text: str, strict: bool, added: list[str] | None = None
    ) -> str:
        if not parse_mentions(text):
            return ""
        workdir = self.resolver.workdir_for(session.notebook_path)
        notebook = None
        if session.notebook_path is not None:
            with contextlib.suppress(ApiError):
                notebook = await self.resolver.read(session.notebook_path)
        variables = [*session.variables, *(added or [])]
        return await mentioned(text, workdir, notebook, variables, strict=strict)

    async def fork(
        self, session_id: str, caller: Caller, prompt: str, step: int | None
    ) -> AgentSession:
        """A new session from the state after ``step`` of this one (its end when None)."""
        if self._stopping:
            raise ApiError(503, "the server is shutting down")
        parent = self.get(session_id, caller, change=True)
        if parent.running:
            raise ApiError(409, f"session {session_id} is running; pause or cancel it first")
        self._ensure_reaper()
        return await revive(self, parent, prompt, step=step, fork=True)

    async def pause(self, session_id: str, caller: Caller) -> AgentSession:
        """Stop after the step in flight, release the sandbox; a message resumes it."""
        session = self.get(session_id, caller, change=True)
        sandbox = session.sandbox
        await pause(session, wait_s=(sandbox.limits.cell_timeout if sandbox else 0) + 15)
        return session

    def decide_cell(
        self, session_id: str, caller: Caller, cell_id: str, accepted: bool
    ) -> dict[str, Any]:
        session = self.get(session_id, caller, change=True)
        try:
            return session.decide_cell(cell_id, accepted, lambda s: self.signer.reopen(s.path))
        except UnsignedNotebook as e:
            raise ApiError(409, f"session {session_id} cannot be changed: {e}") from e

    async def delete(self, session_id: str, caller: Caller) -> AgentSession:
        session = self.get(session_id, caller, change=True)
        session.deleted = True
        await session.close(reason=lifecycle.DELETED)
        settled = getattr(session.snapshots, "settled", None)
        if settled is not None:  # a capture still in a worker would hold its files again
            await settled()
        # what only it held; in a worker, as the store's lock may wait for another capture
        await off_loop(self.snapshots.release, session.owner, session.id)
        return session

    async def snapshots_settled(self, owner: str) -> None:
        """Wait until the captures ``owner``'s sessions asked for so far are in (a run's last
        one is taken after ``run_finished``), and the store's use is counted, in a worker."""
        for session in list(self.sessions.values()):
            settled = getattr(session.snapshots, "settled", None)
            if session.owner == owner and settled is not None:
                await settled()
        await off_loop(self.snapshots.store_for(owner).stored_bytes)

    # -- housekeeping ---------------------------------------------------------------------

    async def _reap(self) -> None:
        await lifecycle.reap(self)

    async def shutdown(self) -> None:
        """Stop every run, shut every sandbox and the pool down (no kernel left behind)."""
        self._stopping = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper
        live = [s for s in self.sessions.values() if not s.closed]
        await asyncio.gather(
            *(s.close(grace_s=5.0, reason=lifecycle.SERVER_STOPPED) for s in live),
            return_exceptions=True,
        )
        await self.supply.shutdown()
        self.signer.close()
        await self.models.aclose()
