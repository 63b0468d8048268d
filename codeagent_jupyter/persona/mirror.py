"""One session shown in one chat: its event stream, folded, kept as the persona's messages.

The mirror is one more subscriber of the session's event bus, like the recorder and the
WebSocket. It draws nothing from events itself: the session's own fold (``session.view``,
the state the panel draws) is rendered item by item (``render.item_body``), and each item
is one chat message, added when the item appears and changed in place while it changes (a
cell's outputs arriving, the plan ticking off). Writes to the chat are coalesced to one
every ``interval`` seconds (each write of a WebSocket chat rewrites its ``.chat`` file);
the end of a run is written at once.

A subscriber must not block the bus, so ``_on_event`` only schedules; every write happens
from the event loop, outside ``publish``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from .. import events as ev
from ..timeline.state import ApprovalItem, PromptItem
from . import render

log = logging.getLogger(__name__)

INTERVAL = 0.4
"""Seconds between two writes of a running session to the chat."""

FINISHED, APPROVAL, ENDED = "finished", "approval", "ended"
"""Why ``wait`` returned: the run ended, a tool call (or a host the sandbox asks to reach)
waits for the user, the stream ended."""


class ChatMirror:
    """Keeps ``session``'s timeline as messages of ``sender`` in ``chat``.

    ``chat`` is a jupyterlab_chat ``BaseChatModel`` (the WebSocket or the collaborative
    one); ``new_message(body)`` and ``message(id, body, time)`` build its message objects,
    so this module does not import jupyterlab_chat. Items already in the session when the
    mirror attaches (an earlier conversation, before a server restart) are not repeated.
    """

    def __init__(
        self,
        chat: Any,
        session: Any,
        *,
        new_message: Callable[[str], Any],
        message: Callable[[str, str, float], Any],
        brought: tuple[str, ...] = (),
        on_flush: Callable[[Any], None] | None = None,
        interval: float = INTERVAL,
    ) -> None:
        self.chat = chat
        self.session = session
        self._new_message = new_message
        self._message = message
        self._brought = brought
        self._on_flush = on_flush
        self._interval = interval
        self._shown: dict[str, tuple[str, float, str]] = {}
        """item key -> (chat message id, its time, the body last written)."""
        self._skip = {item.key for item in session.view.items}
        self._plan: tuple[dict[str, str], ...] = session.view.plan
        self._timer: asyncio.TimerHandle | None = None
        self._waiters: list[tuple[int, asyncio.Future[str]]] = []
        self._loop = asyncio.get_event_loop()
        self._attached = False

    # -- the bus side ---------------------------------------------------------------------

    def attach(self) -> None:
        """Follow the session from its next event on."""
        if not self._attached:
            self.session.bus.subscribe(self._on_event, on_end=self._on_end)
            self._attached = True

    def detach(self) -> None:
        if self._attached:
            self.session.bus.unsubscribe(self._on_event)
            self._attached = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._resolve(lambda _seq: True, ENDED)

    def _on_event(self, event: ev.Event) -> None:
        if isinstance(event, ev.RunFinished):
            self._loop.call_soon(self._finish, event.seq)
        elif isinstance(event, ev.ApprovalRequested):
            self._loop.call_soon(self._approval, event.seq)
        elif isinstance(event, ev.NetworkApprovalRequested):
            self._loop.call_soon(self._network_ask, event)
        elif self._timer is None:
            self._timer = self._loop.call_later(self._interval, self.flush)

    def _on_end(self) -> None:
        self._loop.call_soon(self._ended)

    def _finish(self, seq: int) -> None:
        self.flush()
        self._resolve(lambda after: seq >= after, FINISHED)

    def _approval(self, seq: int) -> None:
        self.flush()
        self._resolve(lambda after: seq >= after, APPROVAL)

    def _network_ask(self, event: ev.NetworkApprovalRequested) -> None:
        """The question about a host, as its own message; the reply ends so it is answered."""
        self.flush()
        body = render.network_ask_body(event.host, event.port, event.method, event.timeout_s)
        self._write(f"network-ask-{event.seq}", body)
        self._resolve(lambda after: event.seq >= after, APPROVAL)

    def _ended(self) -> None:
        self.flush()
        self._resolve(lambda _after: True, ENDED)

    def _resolve(self, matches: Callable[[int], bool], why: str) -> None:
        keep = []
        for after, future in self._waiters:
            if matches(after) and not future.done():
                future.set_result(why)
            elif not future.done():
                keep.append((after, future))
        self._waiters = keep

    async def wait(self, after: int) -> str:
        """Until the session's run ends, or one of its tool calls waits for the user, with
        an event numbered ``after`` or later (``FINISHED``, ``APPROVAL``, ``ENDED``)."""
        for event in self.session.bus.since(after):
            if isinstance(event, ev.RunFinished):
                self.flush()
                return FINISHED
        if any(_seq_of(a) >= after for a in self.session.view.pending_approvals):
            self.flush()
            return APPROVAL
        if any(
            isinstance(e, ev.NetworkApprovalRequested) and e.host in self.session.network.pending
            for e in self.session.bus.since(after)
        ):
            return APPROVAL
        if self.session.bus.closed and not self.session.busy:
            self.flush()
            return ENDED
        future: asyncio.Future[str] = self._loop.create_future()
        self._waiters.append((after, future))
        return await future

    # -- the chat side --------------------------------------------------------------------

    def flush(self) -> None:
        """Write every item whose message is new or changed since the last flush."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        state = self.session.view
        try:
            self._write_plan(state)
            for item in state.items:
                if item.key in self._skip:
                    continue
                body = render.item_body(item, state, self._brought)
                if body:
                    self._write(item.key, body)
        except Exception:  # one broken write must not stop the rest of the session
            log.exception("codeagent persona: could not write session %s", self.session.id)
        if self._on_flush is not None:
            with contextlib.suppress(Exception):
                self._on_flush(state)

    def _write_plan(self, state: Any) -> None:
        """The plan as one message per run, changed in place as its steps progress."""
        if state.plan == self._plan:
            return
        self._plan = state.plan
        prompts = [i.key for i in state.items if isinstance(i, PromptItem)]
        if state.plan:
            self._write(f"plan-{prompts[-1] if prompts else ''}", render.plan_body(state.plan))

    def _write(self, key: str, body: str) -> None:
        shown = self._shown.get(key)
        if shown is None:
            message_id = self.chat.add_message(self._new_message(body))
            added = self.chat.get_message(message_id)
            self._shown[key] = (message_id, getattr(added, "time", time.time()), body)
        elif shown[2] != body:
            message_id, at, _ = shown
            self.chat.update_message(self._message(message_id, body, at))
            self._shown[key] = (message_id, at, body)


def _seq_of(item: ApprovalItem) -> int:
    """The number of the event that asked (its key is ``approval-<seq>``)."""
    try:
        return int(item.key.rsplit("-", 1)[-1])
    except ValueError:
        return -1
