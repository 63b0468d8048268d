"""``EgressPolicy``: which requests leave the sandbox, and the rule that decided each one.

Read from ``--allow-domain``/``--egress-policy FILE`` (JSON) on the CLI and from
``c.CodeAgent.egress`` on the server, in the same JSON shape::

    {"allow": ["data.example.org", "*.githubusercontent.com"], "deny": ["*.internal"],
     "default": "ask", "methods": ["GET", "HEAD"], "ports": [80, 443],
     "max_response_mb": 64, "max_session_mb": 512, "rate_per_minute": 600,
     "allow_ranges": ["10.20.0.0/16"], "ask_timeout_s": 300,
     "store_body_mb": 16}

A host matches ``example.org`` exactly, ``*.example.org`` for any name below it, ``*`` for
any. ``deny`` wins over ``allow``; an unlisted host gets ``default``: ``deny``, or ``ask``,
which a run with nobody to ask denies with that reason (and a question nobody answers
within ``ask_timeout_s`` is denied, saying so). Each verdict names its rule, so a
refusal tells the code in the sandbox (and the person reading the session) why.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .addresses import networks

DEFAULTS = ("ask", "deny")
NOBODY_TO_ASK = "default ask: nobody to ask in a non-interactive run"
_HOST = re.compile(r"^(\*|(\*\.)?[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?|\[?[0-9a-f:.]+\]?)$")
_METHOD = re.compile(r"^[A-Z]{1,16}$")
_KEYS = {
    "allow",
    "deny",
    "default",
    "methods",
    "ports",
    "max_response_mb",
    "max_session_mb",
    "rate_per_minute",
    "allow_ranges",
    "hosts",
    "ask_timeout_s",
    "store_body_mb",
}

Approver = Callable[..., Awaitable["str | None"]]
"""Asked about an unlisted host under ``default: ask`` as ``approve(host, port=…,
method=…)``: ``"once"``, ``"session"`` (allowed until the sandbox ends), ``"deny"``, or
None when nobody could answer. Keyed by the host the request names, as the broker checked
it: never by anything the model chose."""


class PolicyError(ValueError):
    """A policy that cannot be applied; the message is one line naming the bad key."""


@dataclass(frozen=True)
class Verdict:
    """What the policy says about one request: allowed or not, and the rule that decided."""

    allowed: bool
    rule: str
    status: int = 200
    ask: bool = False
    """Refused only because nobody was asked yet (``default: ask``): a broker with an
    approver asks, one without denies with this verdict's rule."""


@dataclass(frozen=True)
class EgressPolicy:
    """The administrator's and the user's rules for the broker of one sandbox."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default: str = "ask"
    methods: tuple[str, ...] = ()
    """Methods of plain HTTP requests; empty: any. HTTPS tunnels cannot be inspected, so a
    list without ``CONNECT`` refuses HTTPS altogether."""
    ports: tuple[int, ...] = (80, 443)
    max_response_mb: float = 64.0
    max_session_mb: float = 512.0
    rate_per_minute: int = 600
    allow_ranges: tuple[str, ...] = ()
    ask_timeout_s: float = 300.0
    """How long a ``default: ask`` question waits for the user before it is denied."""
    store_body_mb: float = 16.0
    """The largest ``GET`` body kept in the content store for replays (0: none kept)."""
    hosts: Mapping[str, str] = field(default_factory=dict)
    """Names pinned to addresses before any lookup. For tests (a test host name on
    loopback, with ``allow_ranges`` opening it); empty unless a policy sets it."""

    def __post_init__(self) -> None:
        for name in ("allow", "deny"):
            for pattern in getattr(self, name):
                if not isinstance(pattern, str) or not _HOST.match(pattern.lower()):
                    raise PolicyError(f"egress {name}: {pattern!r} is not a host pattern")
        if self.default not in DEFAULTS:
            raise PolicyError(f"egress default must be ask or deny, not {self.default!r}")
        for method in self.methods:
            if not isinstance(method, str) or not _METHOD.match(method):
                raise PolicyError(f"egress methods: {method!r} is not an HTTP method")
        for port in self.ports:
            if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
                raise PolicyError(f"egress ports: {port!r} is not a port")
        for name in ("max_response_mb", "max_session_mb", "rate_per_minute", "ask_timeout_s"):
            value = getattr(self, name)
            bad = isinstance(value, bool) or not isinstance(value, (int, float))
            if bad or not math.isfinite(value) or value <= 0:
                raise PolicyError(f"egress {name} must be a positive number")
        value = self.store_body_mb
        bad = isinstance(value, bool) or not isinstance(value, (int, float))
        if bad or not math.isfinite(value) or value < 0:
            raise PolicyError("egress store_body_mb must be a number, 0 or more")
        try:
            networks(self.allow_ranges)
        except (TypeError, ValueError) as e:
            raise PolicyError(f"egress allow_ranges: {e}") from None

    @classmethod
    def from_dict(cls, data: Any) -> EgressPolicy:
        """From the JSON shape above; unknown keys and wrong types raise ``PolicyError``."""
        if not isinstance(data, dict):
            raise PolicyError("an egress policy is a JSON object")
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise PolicyError(f"unknown egress policy key(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key == "hosts":
                if not isinstance(value, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in value.items()
                ):
                    raise PolicyError("egress hosts must map names to addresses")
                values[key] = {k.lower(): v for k, v in value.items()}
            elif key in ("allow", "deny", "methods", "ports", "allow_ranges"):
                if not isinstance(value, list):
                    raise PolicyError(f"egress {key} must be a list")
                values[key] = tuple(value)
            else:
                values[key] = value
        if "methods" in values:
            values["methods"] = tuple(str(m).upper() for m in values["methods"])
        return cls(**values)

    @classmethod
    def from_file(cls, path: Path) -> EgressPolicy:
        """Read a JSON policy file; ``PolicyError`` with the file's name when it is bad."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise PolicyError(f"cannot read egress policy {str(path)!r}: {e.strerror}") from None
        except ValueError as e:
            raise PolicyError(f"egress policy {str(path)!r} is not JSON: {e}") from None
        return cls.from_dict(data)

    def with_allowed(self, hosts: tuple[str, ...]) -> EgressPolicy:
        """This policy with ``hosts`` added to ``allow`` (the CLI's ``--allow-domain``)."""
        data = self.to_dict()
        data["allow"] = [*self.allow, *hosts]
        return EgressPolicy.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("allow", "deny", "methods", "ports", "allow_ranges"):
            data[key] = list(data[key])
        data["hosts"] = dict(self.hosts)
        return data

    def decide(self, host: str, port: int, method: str) -> Verdict:
        """The verdict for ``method`` to ``host:port`` by name (addresses are judged later)."""
        host = host.lower().rstrip(".")
        for pattern in self.deny:
            if matches(pattern, host):
                return Verdict(False, f"deny {pattern}", 403)
        if self.methods and method not in self.methods:
            return Verdict(False, f"methods {', '.join(self.methods)}", 403)
        if port not in self.ports:
            shown = ", ".join(str(p) for p in self.ports)
            return Verdict(False, f"ports {shown} (not {port})", 403)
        for pattern in self.allow:
            if matches(pattern, host):
                return Verdict(True, f"allow {pattern}")
        if self.default == "ask":
            return Verdict(False, NOBODY_TO_ASK, 403, ask=True)
        return Verdict(False, "default deny", 403)


def matches(pattern: str, host: str) -> bool:
    """``*`` any host; ``*.example.org`` names strictly below it; else the exact name."""
    pattern = pattern.lower().rstrip(".").strip("[]")
    host = host.strip("[]")
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return host == pattern
