"""The session event bus: the one place that numbers a session's events and hands them out.

Everything that happens in a session (the loop's steps, a user's cell decision, the server
marking a cut-off run) is published here, and only here does an event get its ``seq``. Every
consumer (notebook recorder, server session state, WebSocket fan-out, CLI printer, panel)
subscribes a plain callable and receives the typed events, in order.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, TypeVar

from ..events import Event

log = logging.getLogger(__name__)
E = TypeVar("E", bound=Event)

Subscriber = Callable[[Event], None]
"""Receives each event in order; must not block for long (it runs inside ``publish``)."""


class EventBus:
    """Numbers events, keeps them if asked, and delivers them to subscribers synchronously.

    Delivery is synchronous (a WebSocket writes to its socket inside ``publish``), and
    ``subscribe(since=…)`` replays the backlog and registers in one step, so a subscriber
    can neither miss an event nor see one twice. A failing subscriber is logged and kept:
    one broken display never stops a run or the others.
    """

    def __init__(
        self,
        subscribers: Iterable[Subscriber] = (),
        *,
        history: Iterable[Event] = (),
        keep: bool = True,
        next_seq: int | None = None,
    ) -> None:
        self.events: list[Event] = list(history)
        """Every event so far (only when ``keep``): what a late subscriber is replayed."""
        self.keep = keep
        self.next_seq = self.events[-1].seq + 1 if self.events else 0
        """The number the next event gets: after ``history``, or ``next_seq`` when given (a
        session carried on from its notebook numbers on from there)."""
        if next_seq is not None:
            self.next_seq = next_seq
        self.closed = False
        self._subscribers: list[Subscriber] = list(subscribers)
        self._on_end: dict[Subscriber, Callable[[], None]] = {}

    def publish(self, cls: type[E], **fields: Any) -> E:
        """Create, number and deliver an event of type ``cls``; returns it."""
        return self.deliver(cls(seq=self.next_seq, **fields))

    def deliver(self, event: E) -> E:
        """Number an already built event (its ``seq`` is replaced) and deliver it."""
        if event.seq != self.next_seq:
            event = replace(event, seq=self.next_seq)
        self.next_seq += 1
        if self.keep:
            self.events.append(event)
        for send in list(self._subscribers):
            try:
                send(event)
            except Exception:
                log.exception("event subscriber %r failed on %s", send, event.type)
        return event

    def since(self, seq: int) -> list[Event]:
        return [e for e in self.events if e.seq >= seq]

    def subscribe(
        self,
        send: Subscriber,
        since: int | None = None,
        *,
        on_end: Callable[[], None] | None = None,
        first: bool = False,
    ) -> None:
        """Deliver every later event to ``send`` (first those from ``since``, when given).

        ``on_end`` is called once when the bus closes: nothing more will come. ``first``
        puts ``send`` ahead of the subscribers so far (a client should not wait for a disk
        write to see an event).
        """
        if since is not None:
            for event in self.since(since):
                send(event)
        self._subscribers.insert(0 if first else len(self._subscribers), send)
        if on_end is not None:
            self._on_end[send] = on_end

    def unsubscribe(self, send: Subscriber) -> None:
        with contextlib.suppress(ValueError):
            self._subscribers.remove(send)
        self._on_end.pop(send, None)

    def close(self) -> None:
        """Tell every subscriber that asked to know that the stream has ended."""
        self.closed = True
        ends, self._on_end = list(self._on_end.values()), {}
        for end in ends:
            with contextlib.suppress(Exception):
                end()
