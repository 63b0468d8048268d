"""What a session did on the network, for its change set (``--network policy``).

A change set says what a session did to the world outside the sandbox: its files, and the
requests it sent through the egress broker. These are read from the session notebook's
event log (``network_request`` entries, allowed or refused): how many, to which hosts, the
bytes each way, and which were refused. Hosts and URLs are the sandbox's text; readers
escape them (``changes_text``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..timeline.network import host_of

HOSTS_NAMED = 5


@dataclass
class NetworkSummary:
    """Totals of the session's requests through its broker."""

    requests: int = 0
    refused: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    hosts: list[str] = field(default_factory=list)
    """Hosts reached or asked for, in the order first seen."""
    denied: list[str] = field(default_factory=list)
    """Hosts with at least one refused request."""

    def line(self) -> str:
        """``Network: 3 requests (1 refused) to data.test, other.test; 4.1 kB in, 300 bytes
        out; refused: other.test``."""
        refused = f" ({self.refused} refused)" if self.refused else ""
        noun = "request" if self.requests == 1 else "requests"
        line = f"Network: {self.requests} {noun}{refused} to {_named(self.hosts)}; "
        line += f"{_size(self.bytes_down)} in, {_size(self.bytes_up)} out"
        return line + (f"; refused: {_named(self.denied)}" if self.denied else "")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "summary": self.line()}


def network_of(meta: dict[str, Any]) -> NetworkSummary | None:
    """The summary of the ``network_request`` events in ``meta["events"]``; None when the
    session sent none."""
    summary = NetworkSummary()
    for entry in meta.get("events") or []:
        if not isinstance(entry, dict) or entry.get("type") != "network_request":
            continue
        host = host_of(str(entry.get("url", "")))[:255]
        summary.requests += 1
        summary.bytes_up += _int(entry.get("bytes_up"))
        summary.bytes_down += _int(entry.get("bytes_down"))
        if host and host not in summary.hosts:
            summary.hosts.append(host)
        if not entry.get("allowed"):
            summary.refused += 1
            if host and host not in summary.denied:
                summary.denied.append(host)
    return summary if summary.requests else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _named(hosts: list[str]) -> str:
    more = f" and {len(hosts) - HOSTS_NAMED} more" if len(hosts) > HOSTS_NAMED else ""
    return (", ".join(hosts[:HOSTS_NAMED]) or "no host") + more


def _size(count: int) -> str:
    """``300 bytes``, ``4.1 kB``, ``12.0 MB`` (decimal, as the file sizes of a change set)."""
    if count < 1000:
        return f"{count} bytes"
    return f"{count / 1000:.1f} kB" if count < 1_000_000 else f"{count / 1_000_000:.1f} MB"
