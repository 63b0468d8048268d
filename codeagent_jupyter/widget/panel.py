"""The agent panel: an ipywidgets view of one server session, plus its buttons.

The panel holds no agent logic. It folds the session's events into a ``SessionState``
(``fold.reduce``, the same fold the server answers from), renders that state, and turns
clicks into API calls (accept, cancel, approve, follow-up) whose effects come back as events.
Accepted cells go into the live notebook through the labextension (``bridge``) or, without
it, via ``%agent accept N``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import ipywidgets as w

from ..events import Event
from ..fold import SessionState, reduce
from . import render
from .actions import Inserter
from .client import AgentClient, CodeAgentError
from .picker import VariablePicker
from .transfer import Payload, upload_all
from .views import ItemView, make_view

log = logging.getLogger(__name__)
TICK_S = 1.0
WARM_WAIT_S = 15.0  # how long Send waits for a warm-up still in flight before starting anyway


class AgentPanel:
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

    # -- layout ---------------------------------------------------------------------------

    def _build(self) -> None:
        self.banner = w.HTML("")  # red while the session's sandbox is unconfined
        self.title = w.HTML(self._title_html())
        self.status = w.HTML(render.status_html(self.state, time.time()))
        self.plan = w.HTML("")
        self.timeline = w.VBox([], layout=w.Layout(width="100%"))
        self.prompt = w.Textarea(
            placeholder="Ask the agent, e.g. load sales.csv and plot monthly revenue",
            layout=w.Layout(width="100%", height="60px"),
            continuous_update=True,
        )
        self.prompt.add_class("codeagent-prompt")
        self.prompt.observe(self._on_typing, "value")
        self.send = self._button("Send", "codeagent-send", self._on_send, style="primary")
        self.stop = self._button("Stop", "codeagent-stop", self._on_stop, style="danger")
        self.accept_all = self._button("Accept all", "codeagent-accept-all", self._on_accept_all)
        self.controls = w.HBox([self.accept_all, self.stop])
        self.composer = w.HBox([self.prompt, self.send], layout=w.Layout(width="100%"))
        self.notice = w.HTML("")
        self.picker = VariablePicker(lambda: self.namespace_of() if self.namespace_of else [])
        head = [self.banner, self.title, self.status, self.plan]
        self.widget = w.VBox(
            [*head, self.timeline, self.controls, self.notice, self.picker.widget, self.composer],
            layout=w.Layout(border="1px solid #ccc", padding="6px", width="100%"),
        )
        self.widget.add_class("codeagent-panel")
        self._sync_controls()

    def _button(self, label: str, css: str, handler: Callable[[], Any], **kw: Any) -> w.Button:
        button = w.Button(description=label, button_style=kw.get("style", ""))
        button.add_class(css)
        button.on_click(lambda _b: handler())
        return button

    @property
    def anchor_cell_id(self) -> str | None:
        """The notebook cell that holds this panel (accepted cells go below it)."""
        return self.inserter.anchor_cell_id if self.inserter is not None else None

    def _title_html(self) -> str:
        if not self.session_id:
            return "<b>codeagent</b>"
        sid = render.esc(self.session_id)
        hint = (
            f'<span style="color:{render.MUTED};font-size:11px"> · after a kernel restart: '
            f"%agent --attach {sid}</span>"
        )
        return f"<b>codeagent</b> <code>{sid}</code>{hint}"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    # -- events -> view -------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Fold one event into the state and update only what changed on screen."""
        was_running = self.state.running
        self.state = reduce(self.state, event)
        if was_running and not self.state.running and self._transient:
            self.say("")  # "stopping…" is answered by the run's end
        self.refresh()

    def refresh(self) -> None:
        state = self.state
        banner = render.banner_html(state)
        if banner != self.banner.value:
            self.banner.value = banner
        self.status.value = render.status_html(state, time.time())
        self.plan.value = render.plan_html(state.plan)
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
        acceptable = [c for c in self.state.cells if c.ran_cleanly and c.decision is None]
        self.accept_all.disabled = not acceptable or "accept-all" in self._busy
        self.controls.layout.display = "" if started else "none"
        self.send.disabled = running or "send" in self._busy
        self.send.description = "Follow up" if started else "Send"
        self.prompt.disabled = running

    def say(self, text: str, *, transient: bool = False) -> None:
        """A one-line notice under the timeline (what happened to an Accept, an error).

        A ``transient`` notice is cleared when the run ends.
        """
        self._transient = transient
        self.notice.value = (
            f'<div class="codeagent-notice" style="font-size:12px">{render.esc(text)}</div>'
        )

    # -- session lifecycle ----------------------------------------------------------------

    async def start(self, prompt: str) -> None:
        """Start a new session with ``prompt`` and follow its events."""
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
                **fields,
            )
            self.payloads = []
        except BaseException:
            if not self.prompt.value:
                self._warmed = True  # giving the text back is not typing
                self.prompt.value = prompt  # nothing started: give the request back
            raise
        self.session_id = summary["id"]
        self.title.value = self._title_html()
        self.say("")
        self.follow()

    def attach(self, session_id: str) -> None:
        """Show an existing session: its events are replayed from 0, then followed live."""
        self.session_id = session_id
        self.title.value = self._title_html()
        self.follow()

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

    # -- handlers -------------------------------------------------------------------------

    def _on_typing(self, change: dict[str, Any]) -> None:
        if self._warmed or not change["new"] or self.client is None or self.session_id:
            return
        self.picker.refresh()
        self._warmed = True
        self._warming = self.run("warm", self.client.warm(self.notebook_path))

    def _on_send(self) -> None:
        text = self.prompt.value.strip()
        if not text or self.client is None:
            return
        self.prompt.value = ""
        if self.session_id is None:
            if self.picker.chosen and self.serialize_of is not None:
                try:
                    self.payloads = self.serialize_of(",".join(self.picker.chosen))
                except Exception as e:  # a UsageError: say it in one line, start nothing
                    self.say(str(e))
                    self.prompt.value = text
                    return
            self.picker.hide()
            self.run("send", self.start(text))
        else:
            self.run("send", self.client.follow_up(self.session_id, text))

    def _on_stop(self) -> None:
        if self.client is not None and self.session_id is not None:
            self.say("stopping…", transient=True)
            self.run("stop", self.client.cancel(self.session_id))

    def decide(self, tool_call_id: str, accept: bool) -> None:
        """Accept (record + insert) or reject (record) one cell."""
        if f"decide-{tool_call_id}" in self._busy:
            return  # a double click
        self.run(f"decide-{tool_call_id}", self._decide([tool_call_id], accept))

    def _on_accept_all(self) -> None:
        ids = [c.tool_call_id for c in self.state.cells if c.ran_cleanly and c.decision is None]
        if ids:
            self.run("accept-all", self._decide(ids, True))

    async def _decide(self, tool_call_ids: list[str], accept: bool) -> None:
        assert self.client is not None and self.session_id is not None
        for tcid in tool_call_ids:
            await self.client.decide(self.session_id, tcid, accept)
        if accept and self.inserter is not None:
            cells = [c for c in (self.state.cell(t) for t in tool_call_ids) if c is not None]
            self.say(await self.inserter.insert(self.session_id, cells))

    def approve(self, tool_call_id: str, approved: bool) -> None:
        assert self.client is not None and self.session_id is not None
        self.run(
            f"approve-{tool_call_id}", self.client.approve(self.session_id, tool_call_id, approved)
        )

    def close(self) -> None:
        for task in (self._follow_task, self._tick_task):
            if task is not None:
                task.cancel()
        if self.inserter is not None:
            self.inserter.close()
        self.widget.close()
