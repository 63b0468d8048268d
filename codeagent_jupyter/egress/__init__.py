"""The sandbox's one way out under ``--network policy``: an egress broker outside it.

The sandbox keeps its own, empty network namespace. Its only route out is a unix socket
bound into it, served by a ``Broker`` on the host that applies an ``EgressPolicy`` (hosts,
methods, ports, bytes, rate), resolves names itself, refuses private and metadata
addresses, and reports every request, allowed or denied, to its caller. Inside, a tiny
``forwarder`` turns the socket into a proxy on the sandbox's own loopback, which the
standard proxy variables name. A program that ignores them simply has no network.
"""

from __future__ import annotations

from .policy import EgressPolicy, PolicyError, Verdict

__all__ = ["EgressPolicy", "PolicyError", "Verdict"]
