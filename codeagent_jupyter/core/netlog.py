"""``NetworkLog``: the egress broker's records, published as ``network_request`` events.

A sandbox (and its broker) starts before the session's bus exists, so the CLI and the
server can ask the model while the kernel boots. The log is handed to the sandbox first
and given its bus once there is one: records made meanwhile are kept and published then,
in order, so none is lost and each is numbered by the one bus.
"""

from __future__ import annotations

from typing import Any

from .. import events as ev
from .bus import EventBus

MAX_PENDING = 1000
"""Records kept while no bus is attached; more are counted, not kept."""


class NetworkLog:
    """Callable with one broker record (a dict with ``NetworkRequest``'s fields)."""

    def __init__(self) -> None:
        self.bus: EventBus | None = None
        self._pending: list[dict[str, Any]] = []
        self.dropped = 0

    def __call__(self, record: dict[str, Any]) -> None:
        fields = {k: record[k] for k in _FIELDS if k in record}
        if self.bus is not None:
            self.bus.publish(ev.NetworkRequest, **fields)
        elif len(self._pending) < MAX_PENDING:
            self._pending.append(fields)
        else:
            self.dropped += 1

    def attach(self, bus: EventBus) -> None:
        """Publish on ``bus`` from now on, the records made before it first."""
        self.bus = bus
        pending, self._pending = self._pending, []
        for fields in pending:
            bus.publish(ev.NetworkRequest, **fields)


_FIELDS = (
    "method",
    "url",
    "status",
    "bytes_up",
    "bytes_down",
    "sha256",
    "rule",
    "allowed",
    "stored",
    "headers",
)
