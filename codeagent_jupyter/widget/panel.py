"""The agent panel: an ipywidgets view of one server session, plus its buttons.

The panel holds no agent logic. It folds the session's events into a ``SessionState``
(``fold.reduce``, the same fold the server answers from), renders that state, and turns
clicks into API calls (accept, cancel, approve, follow-up) whose effects come back as events.
Accepted cells go into the live notebook through the labextension (``bridge``) or, without
it, via ``%agent accept N``; they get the imports of the sandbox's preloaded names they use
(``handoff``), so they run in the user's kernel as they ran in the sandbox.

Layout: a header that stays in view (``header``: title, Stop, status, a pending approval,
plan), the timeline in a scroller of bounded height, the prompt box, and the user's
sessions (``sessions_view``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import ipywidgets as w

from ..events import Event
from ..timeline.fold import SessionState, reduce
from ..timeline.state import CellItem
from . import layout, render, theme
from .actions import Inserter
from .changes_view import ChangesView
from .client import AgentClient, CodeAgentError
from .handoff import cell_source
from .header import Header
from .install_box import InstallBox
from .make import make_view
from .panel_clicks import PanelClicks
from .picker import VariablePicker
from .sessions_view import SessionList
from .transfer import Payload, upload_all
from .views import ItemView

log = logging.getLogger(__name__)
TICK_S = 1.0
WARM_WAIT_S = 15.0  # how long Send waits for a warm-up still in flight before starting anyway


class AgentPanel(PanelClicks):
    """One panel = at most one session; ``widget`` is what gets displayed."""

    def __init__(
        self,
        client: AgentClient | None,
        *,
        notebook_path: str | None = None,
        model: str | None = None,
        max_steps: int | None = None,
        inserter: Inserter | None = None,
    ) -> None:
        self.client = client
        self.notebook_path = notebook_path
        self.model = model
        self.max_steps = max_steps
        self.inserter = inserter
        self.namespace_of: Callable[[], list[dict[str, Any]]] | None = None
        """Describes the user's variables (no values) when a session starts."""
        self.payloads: list[Payload] = []
        """Variables (``--with``) to upload and load into the sandbox at start."""
        self.serialize_of: Callable[[str], list[Payload]] | None = None
        """Serializes the variables chosen in the picker (``AgentMagics.serialize``)."""
        self.mentioned_of: Callable[[str], list[str]] | None = None
        """The ``@name`` mentions of a request that are the kernel's variables."""
        self.label_of: Callable[[str], str | None] | None = None
        """Names a notebook cell id as the user sees it (``In [7]``), if this kernel knows."""
        self.open_of: Callable[[str, bool], Any] | None = None
        """Opens a session in a side panel (``AgentMagics.open_side``): (id, resume)."""
        self.brought: list[str] = []
        """The ``--with`` variables copied into the sandbox (named in accepted cells)."""
        self.placement: Any = None
        """Where the panel is shown (``display.Placement``); keeps the saved summary."""
        self.start_fields: Callable[[], Awaitable[dict[str, Any]]] | None = None
        """More fields of the start request, read at Send time (``live.LiveNotebook``: the
        kernel id and the live cells, so the server works on the notebook as it is now)."""
        self.session_id: str | None = None
        self.state = SessionState()
        self._views: dict[str, ItemView] = {}
        self._warmed = False
        self._warming: asyncio.Future[None] | None = None
        self._transient = False
        self._follow_task: asyncio.Task[None] | None = None
        self._tick_task: asyncio.Task[None] | None = None
        self._busy: set[str] = set()
        self._tasks: set[asyncio.Future[None]] = set()
        self._build()
        if inserter is not None:
            inserter.source_of = self.handoff

    # -- layout ---------------------------------------------------------------------------

    def _build(self) -> None:
        self.header = Header(self)
        head = self.header
        self.banner, self.title, self.status, self.plan = (
            head.banner,
            head.title,
            head.status,
            head.plan,
        )
        self.stop, self.accept_all, self.controls = head.stop, head.accept_all, head.controls
        self.timeline, self.scroller = layout.timeline()
        self.prompt, self.send, self.composer = layout.composer(self._on_send, self._on_typing)
        self.notice = w.HTML("")
        self.picker = VariablePicker(lambda: self.namespace_of() if self.namespace_of else [])
        self.sessions = SessionList(self)
        self.changes = ChangesView(self)
        self.installs = InstallBox(self)
        self.widget = w.VBox(
            [
                self.header.widget,
                self.scroller,
                self.changes.widget,
                self.notice,
                self.picker.widget,
                self.composer,
                self.installs.widget,
                self.sessions.widget,
            ],
            layout=w.Layout(border=f"1px solid {theme.BORDER}", padding="6px", width="100%"),
        )
        self.widget.add_class("codeagent-panel")
        # Which kernel-side widget this view shows: JupyterLab's side of the project tells a
        # live panel from one whose kernel is gone by this id (a comm of the kernel or not).
        self.widget.add_class(f"codeagent-model-{self.widget.model_id}")
        self._sync_controls()

    @property
    def anchor_cell_id(self) -> str | None:
        """The notebook cell that holds this panel (accepted cells go below it)."""
        return self.inserter.anchor_cell_id if self.inserter is not None else None

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def cell_label(self, cell_id: str) -> str:
        """The user's cell ``cell_id`` as they see it (``In [7]``), for an edit's header."""
        label = self.label_of(cell_id) if self.label_of is not None else None
        return label or ""

    def handoff(self, cell: CellItem) -> str:
        """The source an accepted cell gets in the notebook (``handoff.cell_source``)."""
        return cell_source(cell, self.state.preloaded, self.brought)

    # -- events -> view -------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Fold one event into the state and update only what changed on screen."""
        was_running = self.state.running
        was_asking = bool(self.state.pending_approvals)
        self.state = reduce(self.state, event)
        if was_running and not self.state.running:
            if self._transient:
                self.say("")  # "stopping…" is answered by the run's end
            self._run_ended()
        elif was_asking != bool(self.state.pending_approvals):
            self._update_summary()  # the cell's stub says "waiting for your approval"
        self.refresh()

    def _run_ended(self) -> None:
        """Refresh what depends on a finished run: the saved summary, the session list,
        the files it changed."""
        self.changes.refresh()
        self._update_summary()
        if self.sessions.widget.selected_index is not None:
            self.sessions.refresh()

    def _update_summary(self) -> None:
        if self.placement is not None:
            try:
                self.placement.update()
            except Exception:  # the summary is a copy: the panel goes on without it
                log.exception("codeagent panel: could not update the saved summary")

    def refresh(self) -> None:
        state = self.state
        self.header.refresh(state, render.status_html(state, time.time()))
        children = []
        for item in state.items:
            view = self._views.get(item.key)
            if view is None:
                view = make_view(item, self)
                self._views[item.key] = view
            else:
                view.update(item)
            children.append(view.widget)
        if tuple(children) != self.timeline.children:
            self.timeline.children = tuple(children)
        self._sync_controls()

    def _sync_controls(self) -> None:
        running = self.state.running
        started = self.session_id is not None
        self.stop.disabled = not running
        self.stop.layout.display = "" if running else "none"  # no faded Stop after a run
        acceptable = [c for c in self.state.cells if c.ran_cleanly and c.decision is None]
        self.accept_all.disabled = not acceptable or "accept-all" in self._busy
        self.controls.layout.display = "" if started else "none"
        self.send.disabled = running or "send" in self._busy
        self.send.description = "Follow up" if started else "Send"
        self.prompt.disabled = running
        self.installs.sync(started=started, running=running, busy="install" in self._busy)

    def say(self, text: str, *, transient: bool = False) -> None:
        """A one-line notice under the timeline (what happened to an Accept, an error).

        A ``transient`` notice is cleared when the run ends.
        """
        self._transient = transient
        self.notice.value = (
            f'<div class="codeagent-notice" style="font-size:12px">{render.esc(text)}</div>'
            if text
            else ""
        )

    # -- session lifecycle ----------------------------------------------------------------

    async def start(self, prompt: str, *, title: str = "") -> None:
        """Start a new session with ``prompt`` and follow its events; ``title`` is how the
        request reads to people when the prompt was written for the model (a fix)."""
        assert self.client is not None
        self.say("starting a sandbox…")
        if self._warming is not None:  # the sandbox warmed while typing is the one to use
            await asyncio.wait({self._warming}, timeout=WARM_WAIT_S)
        try:
            uploads = await upload_all(self.client, self.payloads, self.say)
            fields = {"notebook_path": self.notebook_path}
            fields |= await self.start_fields() if self.start_fields else {}
            summary = await self.client.start(
                prompt,
                model=self.model,
                max_steps=self.max_steps,
                namespace=self.namespace_of() if self.namespace_of else None,
                uploads=uploads,
                title=title or None,
                **fields,
            )
            self.brought = [p.name for p in self.payloads]
            self.payloads = []
        except BaseException:
            if not self.prompt.value:
                self._warmed = True  # giving the text back is not typing
                self.prompt.value = prompt  # nothing started: give the request back
            raise
        self.installs.offered = bool(summary.get("installs", True))
        self._set_session(summary["id"])
        self.say("")
        self.follow()

    def attach(self, session_id: str) -> None:
        """Show an existing session: its events are replayed from 0, then followed live."""
        self._set_session(session_id)
        self.follow()

    def _set_session(self, session_id: str) -> None:
        """Name the session in the header and on the panel's element: JupyterLab's side of
        the project finds a side panel's session there once its kernel is gone (Reattach)."""
        self.session_id = session_id
        self.header.set_session(session_id)
        self.widget.add_class(f"codeagent-session-{session_id}")

    def follow(self) -> None:
        if self._follow_task is None or self._follow_task.done():
            self._follow_task = asyncio.ensure_future(self._follow())
        if self._tick_task is None or self._tick_task.done():
            self._tick_task = asyncio.ensure_future(self._tick())

    async def _follow(self) -> None:
        assert self.client is not None and self.session_id is not None
        try:
            async for event in self.client.events(self.session_id, since=self.state.last_seq + 1):
                self.apply(event)
        except CodeAgentError as e:
            self.say(str(e))
        except Exception as e:  # keep the kernel quiet; show what happened in the panel
            log.exception("codeagent panel: event stream failed")
            self.say(f"codeagent: event stream failed: {e}")

    async def _tick(self) -> None:
        """Keep the elapsed time moving while a run is going."""
        while self._follow_task is not None and not self._follow_task.done():
            await asyncio.sleep(TICK_S)
            if self.state.running:
                self.status.value = render.status_html(self.state, time.time())

    def run(self, key: str, coro: Awaitable[Any]) -> asyncio.Future[None]:
        """Run a click's API call in the background; errors become the panel's notice."""

        async def guarded() -> None:
            try:
                await coro
            except CodeAgentError as e:
                self.say(str(e))
            except Exception as e:
                log.exception("codeagent panel: %s failed", key)
                self.say(f"codeagent: {key} failed: {type(e).__name__}: {e}")
            finally:
                self._busy.discard(key)
                self._sync_controls()

        self._busy.add(key)
        self._sync_controls()
        task = asyncio.ensure_future(guarded())
        self._tasks.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)
        return task

    def close(self) -> None:
        for task in (self._follow_task, self._tick_task):
            if task is not None:
                task.cancel()
        if self.inserter is not None:
            self.inserter.close()
        if self.placement is not None:
            self.placement.close()
        self.widget.close()
