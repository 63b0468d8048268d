"""What the agent panel's buttons and boxes do: Send, Follow up, Stop, Accept, Approve, Open,
and the answers about a host the sandbox asks to reach.

A mixin of ``AgentPanel``: each handler turns a click into one API call, run in the
background (``AgentPanel.run``) so the kernel stays free; its effect comes back as events.
Kept apart from ``panel`` (layout, the event fold, the session's lifecycle) so that what a
click does is read in one place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..timeline.fold import SessionState
from .actions import Inserter
from .client import AgentClient
from .transfer import Payload, upload_all


class PanelClicks:
    """The handlers; ``AgentPanel`` provides the state and widgets they use."""

    client: AgentClient | None
    session_id: str | None
    state: SessionState
    inserter: Inserter | None
    notebook_path: str | None
    payloads: list[Payload]
    brought: list[str]
    serialize_of: Callable[[str], list[Payload]] | None
    mentioned_of: Callable[[str], list[str]] | None
    open_of: Callable[[str, bool], Any] | None
    prompt: Any
    picker: Any
    _warmed: bool
    _warming: Any
    _busy: set[str]

    def run(self, key: str, coro: Awaitable[Any]) -> Any:
        raise NotImplementedError

    def say(self, text: str, *, transient: bool = False) -> None:
        raise NotImplementedError

    def follow(self) -> None:
        raise NotImplementedError

    async def start(self, prompt: str) -> None:
        raise NotImplementedError

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
            mentioned = self.mentioned_of(text) if self.mentioned_of is not None else []
            names = list(dict.fromkeys([*self.picker.chosen, *mentioned]))
            if names and self.serialize_of is not None:
                try:
                    self.payloads = self.serialize_of(",".join(names))
                except Exception as e:  # a UsageError: say it in one line, start nothing
                    self.say(str(e))
                    self.prompt.value = text
                    return
            self.picker.hide()
            self.run("send", self.start(text))
        else:
            self.say("")  # what the last Accept did is old news now
            mentioned = self.mentioned_of(text) if self.mentioned_of is not None else []
            new = [n for n in mentioned if n not in self.brought]
            payloads: list[Payload] = []
            if new and self.serialize_of is not None:
                try:
                    payloads = self.serialize_of(",".join(new))
                except Exception as e:  # a UsageError: say it in one line, send nothing
                    self.say(str(e))
                    self.prompt.value = text
                    return
            self.run("send", self._follow_up(text, payloads))

    async def _follow_up(self, text: str, payloads: list[Payload] | None = None) -> None:
        """A follow-up (or, to a closed session, a resume), with the variables it first
        mentions copied in; the stream is followed again if it had ended with the session."""
        assert self.client is not None and self.session_id is not None
        try:
            uploads = await upload_all(self.client, payloads or [], self.say)
            await self.client.follow_up(self.session_id, text, uploads)
        except BaseException:
            if not self.prompt.value:
                self.prompt.value = text  # nothing was sent: give the message back
            raise
        self.brought = [*self.brought, *(p.name for p in payloads or [])]
        self.say("")
        self.follow()

    def _on_stop(self) -> None:
        if self.client is not None and self.session_id is not None:
            self.say("stopping…", transient=True)
            self.run("stop", self.client.cancel(self.session_id))

    def decide(self, tool_call_id: str, accept: bool, *, run: bool = False) -> None:
        """Accept (record + insert; with ``run``, run it in the user's kernel too) or reject
        (record) one cell."""
        if f"decide-{tool_call_id}" in self._busy:
            return  # a double click
        self.run(f"decide-{tool_call_id}", self._decide([tool_call_id], accept, run=run))

    def _on_accept_all(self) -> None:
        ids = [c.tool_call_id for c in self.state.cells if c.ran_cleanly and c.decision is None]
        if ids:
            self.run("accept-all", self._decide(ids, True))

    async def _decide(self, tool_call_ids: list[str], accept: bool, *, run: bool = False) -> None:
        assert self.client is not None and self.session_id is not None
        for tcid in tool_call_ids:
            await self.client.decide(self.session_id, tcid, accept)
        if accept and self.inserter is not None:
            cells = [c for c in (self.state.cell(t) for t in tool_call_ids) if c is not None]
            self.say(await self.inserter.insert(self.session_id, cells, run=run))

    def approve(self, tool_call_id: str, approved: bool, remember: str = "") -> None:
        """Approve or deny a waiting call; ``remember="session"`` allows the tool for the
        rest of the session (the server remembers it)."""
        assert self.client is not None and self.session_id is not None
        key = f"approve-{tool_call_id}"
        if key in self._busy:
            return  # a double click, or the header's button and the timeline's
        self.run(key, self.client.approve(self.session_id, tool_call_id, approved, remember))

    def answer_host(self, host: str, answer: str) -> None:
        """Answer the sandbox's question about ``host`` (the network card's buttons):
        ``once``, ``session`` or ``deny``; keyed by the host, as the server asked."""
        if self.client is None or self.session_id is None:
            return
        key = f"net-{host}"
        if key in self._busy:
            return  # a double click
        self.run(key, self.client.approve_host(self.session_id, host, answer))

    def open_session(self, session_id: str) -> None:
        """Open (the session list's button): the session in a side panel."""
        if self.open_of is not None:
            self.open_of(session_id, False)

    def resume_session(self, session_id: str) -> None:
        """Resume: a side panel on the closed session; its next message resumes it."""
        if self.open_of is not None:
            self.open_of(session_id, True)
