"""What a caller may see and ask for: per-owner access, and requests within the admin's caps.

Sessions belong to their owner. Another user is answered exactly as for an id that does
not exist (404), so ids cannot be probed; members of ``c.CodeAgent.read_groups`` may read
and watch every session but change none. Request fields that reach the sandbox or the
model are checked here: limits known, finite and no higher than the administrator's,
prompts no longer than ``max_prompt_chars``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..config import SandboxLimits
from .errors import ApiError


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who is asking: the name sessions are owned by, and the groups the identity gave."""

    name: str
    groups: frozenset[str] = frozenset()

    def may_read(self, owner: str, read_groups: Iterable[str]) -> bool:
        return owner == self.name or not self.groups.isdisjoint(read_groups)

    def may_change(self, owner: str) -> bool:
        return owner == self.name


def groups_of(user: Any) -> frozenset[str]:
    """Group names of a jupyter_server ``User``: its ``groups`` field where the identity
    provider sets one, else JupyterHub's ``hub_user["groups"]``; none otherwise."""
    groups = getattr(user, "groups", None)
    if groups is None:
        hub_user = getattr(user, "hub_user", None)
        groups = hub_user.get("groups") if isinstance(hub_user, dict) else None
    if not isinstance(groups, (list, tuple, set, frozenset)):
        return frozenset()
    return frozenset(str(g) for g in groups)


def check_text(text: str, cap: int, what: str) -> None:
    """A prompt or follow-up longer than ``cap`` characters is refused before any model call."""
    if len(text) > cap:
        raise ApiError(413, f"{what} is {len(text)} characters; this server accepts {cap} at most")


def check_max_steps(requested: int | None, cap: int) -> None:
    if requested is not None and not 0 < requested <= cap:
        raise ApiError(400, f"max_steps must be between 1 and {cap}")


def session_limits(base: SandboxLimits, requested: dict[str, Any] | None) -> SandboxLimits:
    """The administrator's limits, tightened by the request; 400 for anything else.

    Every requested field must be a known limit with a finite value no higher than the
    administrator's (``network: true`` only where the administrator allows network).
    """
    if not requested:
        return base
    try:
        wanted = SandboxLimits.from_dict(requested)  # unknown, NaN, inf, <= 0: one line
    except ValueError as e:
        raise ApiError(400, str(e)) from e
    ceilings = base.to_dict()
    merged = dict(ceilings)
    for name in requested:
        value, ceiling = getattr(wanted, name), ceilings[name]
        if value > ceiling:
            shown = str(value).lower() if isinstance(value, bool) else value
            raise ApiError(
                400, f"limit {name}={shown} is above this server's {str(ceiling).lower()}"
            )
        merged[name] = value
    return SandboxLimits(**merged)
