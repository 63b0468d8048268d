"""An egress policy under a ceiling: what the class allows bounds what a student's server asks.

The classroom gateway's policy file may set ``egress`` (the same JSON keys as
``c.CodeAgent.egress``): the most the students' sandboxes may reach. A student's server
applies ``under_ceiling(class_policy, its_own)``, which can only narrow: a host its own
``allow`` names stays allowed only where the class allows it too (the rest falls to the
class's ``default``), ``deny`` lists add up, ``default: deny`` wins, methods and ports are
the common ones, every size, rate and wait the smaller, and the address ranges and pinned
names are the class's alone (a student's server cannot open an internal range).
"""

from __future__ import annotations

from .addresses import Network, networks
from .policy import EgressPolicy, matches

NO_METHOD = "NONE"
"""What ``methods`` becomes when the two lists share none (an empty list means any)."""


def covers(ceiling: str, pattern: str) -> bool:
    """Whether every host ``pattern`` matches is matched by ``ceiling`` too."""
    ceiling, pattern = ceiling.lower().rstrip("."), pattern.lower().rstrip(".")
    if ceiling == "*":
        return True
    if pattern == "*":
        return False
    if pattern.startswith("*."):
        return ceiling.startswith("*.") and pattern[1:].endswith(ceiling[1:])
    return matches(ceiling, pattern)


def under_ceiling(ceiling: EgressPolicy, wanted: EgressPolicy | None) -> EgressPolicy:
    """``wanted`` narrowed to ``ceiling``; the ceiling itself when nothing else is wanted."""
    if wanted is None:
        return ceiling
    allow = tuple(p for p in wanted.allow if any(covers(c, p) for c in ceiling.allow))
    if ceiling.methods and wanted.methods:
        methods = tuple(m for m in wanted.methods if m in ceiling.methods) or (NO_METHOD,)
    else:
        methods = ceiling.methods or wanted.methods
    ranges = networks(ceiling.allow_ranges)
    allow_ranges = tuple(
        r for r in wanted.allow_ranges if any(_within(n, ranges) for n in networks((r,)))
    )
    return EgressPolicy(
        allow=allow,
        deny=tuple(dict.fromkeys((*ceiling.deny, *wanted.deny))),
        default="deny" if "deny" in (ceiling.default, wanted.default) else "ask",
        methods=methods,
        ports=tuple(p for p in wanted.ports if p in ceiling.ports),
        max_response_mb=min(ceiling.max_response_mb, wanted.max_response_mb),
        max_session_mb=min(ceiling.max_session_mb, wanted.max_session_mb),
        rate_per_minute=min(ceiling.rate_per_minute, wanted.rate_per_minute),
        allow_ranges=allow_ranges,
        ask_timeout_s=min(ceiling.ask_timeout_s, wanted.ask_timeout_s),
        hosts=dict(ceiling.hosts),
    )


def _within(network: Network, ranges: tuple[Network, ...]) -> bool:
    return any(network.version == r.version and network.subnet_of(r) for r in ranges)  # type: ignore[arg-type]
