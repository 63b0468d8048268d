"""The session event bus: one numbering, ordered delivery, a replayed backlog, clean ends."""

from __future__ import annotations

import logging

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.bus import EventBus


def test_events_are_numbered_from_zero_in_order() -> None:
    seen: list[ev.Event] = []
    bus = EventBus([seen.append])
    first = bus.publish(ev.RunStarted, prompt="a")
    built = ev.TextDelta(seq=99, text="x")  # built elsewhere: the bus numbers it
    second = bus.deliver(built)
    assert (first.seq, second.seq) == (0, 1) and second.text == "x"
    assert seen == bus.events == [first, second]
    assert bus.next_seq == 2


def test_a_bus_continues_the_numbering_of_its_history_or_where_it_is_told() -> None:
    history = [ev.RunStarted(seq=0), ev.RunFinished(seq=1)]
    assert EventBus(history=history).publish(ev.RunStarted).seq == 2
    resumed = EventBus(keep=False, next_seq=41)  # a notebook's session carried on
    assert resumed.publish(ev.SessionRestored).seq == 41
    assert resumed.events == []  # keep=False: nothing kept for late subscribers


def test_a_late_subscriber_gets_the_backlog_then_live_events_once_each() -> None:
    bus = EventBus()
    for text in "abc":
        bus.publish(ev.TextDelta, text=text)
    late: list[ev.Event] = []
    bus.subscribe(late.append, since=1)
    bus.publish(ev.TextDelta, text="d")
    assert [(e.seq, e.text) for e in late] == [(1, "b"), (2, "c"), (3, "d")]


def test_a_failing_subscriber_is_logged_and_the_others_still_get_every_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: ev.Event) -> None:
        raise ValueError("display gone")

    good: list[ev.Event] = []
    bus = EventBus([broken, good.append])
    with caplog.at_level(logging.ERROR):
        bus.publish(ev.TextDelta, text="1")
        bus.publish(ev.TextDelta, text="2")
    assert [e.text for e in good] == ["1", "2"]
    failures = [r for r in caplog.records if "subscriber" in r.getMessage()]
    assert len(failures) == 2  # kept subscribed, logged each time


def test_first_puts_a_subscriber_ahead_and_unsubscribe_stops_delivery() -> None:
    order: list[str] = []
    bus = EventBus([lambda e: order.append("recorder")])

    def client(event: ev.Event) -> None:
        order.append("client")

    bus.subscribe(client, first=True)
    bus.publish(ev.TextDelta)
    bus.unsubscribe(client)
    bus.unsubscribe(client)  # twice is harmless
    bus.publish(ev.TextDelta)
    assert order == ["client", "recorder", "recorder"]


def test_close_tells_each_subscriber_that_asked_once() -> None:
    ends: list[str] = []
    bus = EventBus()
    bus.subscribe(lambda e: None, on_end=lambda: ends.append("ws"))
    gone = lambda e: None  # noqa: E731
    bus.subscribe(gone, on_end=lambda: ends.append("gone"))
    bus.unsubscribe(gone)
    bus.subscribe(lambda e: None, on_end=lambda: 1 / 0)  # a failing end is no one's problem
    bus.close()
    bus.close()
    assert ends == ["ws"] and bus.closed
