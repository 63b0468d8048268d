"""A server session's answers about hosts its sandbox asks to reach (``default: ask``).

The session's egress broker calls a ``NetworkApprovals`` as its approver when the sandbox
names a host the policy does not list. The question becomes a
``network_approval_requested`` event on the session's stream (so the panel, the persona
and any client see it) and waits until the session's owner answers over REST
(``POST …/approvals/network/<host>``) or the broker's time limit ends it. What waits is
keyed by the host the broker checked (lower case, its strict host syntax), never by an id
the model or the sandbox chose: an answer about one host can never let another through.

"For this session" is remembered by the broker of this session's sandbox, so it lasts as
long as that sandbox and reaches no other session; the hosts are also kept here for the
session's summary.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .. import events as ev
from ..core.bus import EventBus
from .errors import ApiError

ANSWERS = ("once", "session", "deny")
ASK_RULE = "default ask"
HOST_CHARS = 255


def answer_of(approve: bool, remember: str = "") -> str:
    """The tool approvals' body shape read as a network answer: ``approve`` false denies
    (for the session), true allows once, or for the session with ``remember: "session"``."""
    if not approve:
        return "deny"
    return "session" if remember == "session" else "once"


class NetworkApprovals:
    """The approver of one session's broker, and what its owner decided."""

    def __init__(self, bus: EventBus, timeout_s: float = 0.0) -> None:
        self.bus = bus
        self.timeout_s = timeout_s
        """What the broker waits for an answer (shown with the question)."""
        self._waiting: dict[str, asyncio.Future[str]] = {}
        self.allowed: set[str] = set()
        """Hosts the user allowed for the rest of the session."""
        self.denied: set[str] = set()

    def attach(self, egress: Any) -> None:
        """Become the approver of the session sandbox's broker (``EgressLink``); nothing
        for a sandbox without one (its network is ``none`` or ``host``)."""
        self.allowed.clear()  # a new sandbox's broker remembers nothing (a resume, a fork)
        self.denied.clear()
        if egress is None:
            return
        self.timeout_s = egress.policy.ask_timeout_s
        egress.set_approver(self)

    @property
    def pending(self) -> list[str]:
        return sorted(self._waiting)

    async def __call__(self, host: str, *, port: int = 0, method: str = "") -> str | None:
        """Ask about ``host`` and wait for the answer (the broker bounds the wait: when it
        gives up, this is cancelled and the question ends as ``timeout``)."""
        host = host.lower().rstrip(".")[:HOST_CHARS]
        if host in self._waiting:  # the broker asks one question at a time; never rebind
            return None
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[host] = future
        answer = "timeout"
        try:
            self.bus.publish(
                ev.NetworkApprovalRequested,
                host=host,
                port=port,
                method=method,
                rule=ASK_RULE,
                timeout_s=self.timeout_s,
            )
            answer = await future
            return answer
        finally:
            self._waiting.pop(host, None)
            if not self.bus.closed:
                self.bus.publish(ev.NetworkApprovalDecided, host=host, answer=answer)

    def decide(self, host: str, answer: str) -> dict[str, Any]:
        """Answer the question waiting about ``host``: 404 when none waits, 400 for an
        answer that is not ``once``/``session``/``deny``."""
        if answer not in ANSWERS:
            raise ApiError(400, f"a network answer is one of {', '.join(ANSWERS)}")
        host = host.lower().rstrip(".")
        future = self._waiting.get(host)
        if future is None or future.done():
            raise ApiError(404, f"no network approval is waiting for {host[:HOST_CHARS]!r}")
        if answer == "session":
            self.allowed.add(host)
        elif answer == "deny":
            self.denied.add(host)
        future.set_result(answer)
        return {"host": host, "answer": answer}
