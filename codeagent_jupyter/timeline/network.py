"""What a session's sandbox did on the network, folded from its events (``--network policy``).

The panel's "Network" section and its approval card read this: the latest requests (method,
URL, status, bytes, rule), running totals, and the hosts waiting for the user's answer under
``default: ask``. Only the latest ``ROWS_KEPT`` requests are kept (the totals count them
all), so a session that fetched thousands of times folds in bounded time and memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import events as ev

ROWS_KEPT = 200


@dataclass(frozen=True)
class NetworkAsk:
    """A host the sandbox asked to reach, waiting for the user (keyed by ``host``)."""

    host: str
    port: int
    method: str
    rule: str
    timeout_s: float
    asked_at: float


@dataclass(frozen=True)
class NetworkView:
    """Requests (latest first is the reader's choice), totals, pending questions, answers."""

    rows: tuple[ev.NetworkRequest, ...] = ()
    requests: int = 0
    refused: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    asks: tuple[NetworkAsk, ...] = ()
    answers: tuple[tuple[str, str], ...] = ()
    """``(host, answer)`` in the order given: ``once``, ``session``, ``deny``, ``timeout``."""

    @property
    def hosts(self) -> list[str]:
        """The hosts of the kept requests, in the order first seen."""
        seen: dict[str, None] = {}
        for row in self.rows:
            seen.setdefault(host_of(row.url), None)
        return list(seen)

    def with_request(self, e: ev.NetworkRequest) -> NetworkView:
        return replace(
            self,
            rows=(*self.rows[-(ROWS_KEPT - 1) :], e),
            requests=self.requests + 1,
            refused=self.refused + (not e.allowed),
            bytes_up=self.bytes_up + max(0, e.bytes_up),
            bytes_down=self.bytes_down + max(0, e.bytes_down),
        )

    def with_ask(self, e: ev.NetworkApprovalRequested) -> NetworkView:
        ask = NetworkAsk(e.host, e.port, e.method, e.rule, e.timeout_s, e.time)
        asks = tuple(a for a in self.asks if a.host != e.host)
        return replace(self, asks=(*asks, ask))

    def with_answer(self, e: ev.NetworkApprovalDecided) -> NetworkView:
        asks = tuple(a for a in self.asks if a.host != e.host)
        return replace(self, asks=asks, answers=(*self.answers, (e.host, e.answer)))


def host_of(url: str) -> str:
    """``data.example.org`` of ``http://data.example.org:8080/x`` or ``data.example.org:443``."""
    rest = url.split("://", 1)[-1]
    authority = rest.split("/", 1)[0].split("?", 1)[0]
    if authority.startswith("["):
        return authority.split("]", 1)[0] + "]"
    return authority.rsplit(":", 1)[0] if ":" in authority else authority


ANSWER_WORDS = {
    "once": "allowed once",
    "session": "allowed for this session",
    "deny": "denied for this session",
    "timeout": "not answered in time: denied",
}


def answer_line(e: ev.NetworkApprovalDecided) -> str:
    """The timeline's line for an answer (the host is the broker's strict syntax)."""
    word = ANSWER_WORDS.get(e.answer, e.answer)
    return f"Network: {e.host} {word}"
