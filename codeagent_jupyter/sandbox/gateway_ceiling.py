"""Which limits and workspace a launching kernel gets: the request, within the ceiling.

A kernel gateway passes a client's ``KERNEL_*`` variables (and whatever else its operator
allowed) to the kernel, so on a gateway anyone who can POST ``/api/kernels`` chooses the
requested limits. The ceiling therefore comes from where only the operator writes: the
kernel spec's ``env`` (which jupyter_client applies over the request's variables), as
``CODEAGENT_SANDBOX_MAX_LIMITS``, e.g.
``{"memory_mb": 2048, "network": false, "workspace_root": "/srv/workspaces"}``.

Under a ceiling a request may only tighten: a missing limit takes the ceiling's value, a
larger one (or ``network: true`` where the ceiling says false, or a workspace outside
``workspace_root``) is refused at launch with one clear line. Without a ceiling the
``KERNEL_CODEAGENT_*`` variables are refused outright: a gateway client must not pick its
own limits. Locally (no ceiling, our own server's ``CODEAGENT_SANDBOX_*``) nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from .isolation import ALLOW_UNCONFINED_ENV, LIMITS_ENV, WORKDIR_ENV

MAX_LIMITS_ENV = "CODEAGENT_SANDBOX_MAX_LIMITS"
"""JSON ceiling (``SandboxLimits`` fields, ``workspace_root``, ``allow_unconfined``)."""
KERNEL_LIMITS_ENV = "KERNEL_CODEAGENT_LIMITS"
"""Requested limits as a gateway client sends them (gateways forward ``KERNEL_*``)."""
KERNEL_WORKDIR_ENV = "KERNEL_CODEAGENT_WORKDIR"
"""Requested workspace as a gateway client sends it."""
_CEILING_ONLY = ("workspace_root", "allow_unconfined")


class Refused(ValueError):
    """The request asks for more than the ceiling allows (one line, for the operator's log)."""


def _parse(raw: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise Refused(f"{what} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise Refused(f"{what} must be a JSON object")
    return data


def ceiling(env: Mapping[str, str]) -> tuple[SandboxLimits, Path | None, bool] | None:
    """The operator's ceiling, its workspace root and whether unconfined is allowed."""
    raw = env.get(MAX_LIMITS_ENV)
    if not raw:
        return None
    data = _parse(raw, MAX_LIMITS_ENV)
    root = data.pop("workspace_root", None)
    unconfined = data.pop("allow_unconfined", False) is True
    try:
        limits = SandboxLimits.from_dict(data)
    except ValueError as e:
        raise Refused(f"{MAX_LIMITS_ENV}: {e}") from None
    return limits, (Path(root).resolve() if root else None), unconfined


def resolve(env: Mapping[str, str], cwd: str) -> tuple[SandboxLimits, Path, bool]:
    """Limits, workspace and unconfined choice for this launch; ``Refused`` if not allowed.

    The third value is True only when the ceiling (or, without one, the local server)
    explicitly allows an unconfined sandbox.
    """
    raw_limits = env.get(KERNEL_LIMITS_ENV) or env.get(LIMITS_ENV)
    raw_workdir = env.get(KERNEL_WORKDIR_ENV) or env.get(WORKDIR_ENV)
    top = ceiling(env)
    if top is None:
        if env.get(KERNEL_LIMITS_ENV) or env.get(KERNEL_WORKDIR_ENV):
            raise Refused(
                f"sandbox refused to start: {KERNEL_LIMITS_ENV}/{KERNEL_WORKDIR_ENV} were sent "
                f"but the kernel spec sets no {MAX_LIMITS_ENV} ceiling"
            )
        limits = (
            SandboxLimits.from_dict(_parse(raw_limits, LIMITS_ENV))
            if raw_limits
            else (SandboxLimits())
        )
        unconfined = env.get(ALLOW_UNCONFINED_ENV) == "1"
        return limits, Path(raw_workdir or cwd).resolve(), unconfined
    top_limits, root, unconfined = top
    asked = _parse(raw_limits, "requested limits") if raw_limits else {}
    for key in _CEILING_ONLY:
        if key in asked:
            raise Refused(f"sandbox refused to start: {key} is the operator's to set")
    try:
        requested = SandboxLimits.from_dict({**top_limits.to_dict(), **asked})
    except ValueError as e:
        raise Refused(f"sandbox refused to start: requested limits: {e}") from None
    over = above(requested, top_limits)
    if over:
        raise Refused(f"sandbox refused to start: limits above the ceiling: {', '.join(over)}")
    workdir = Path(raw_workdir or root or cwd).resolve()
    if outside(workdir, root):
        raise Refused(
            f"sandbox refused to start: workspace {workdir} is outside the allowed root {root}"
        )
    return requested, workdir, unconfined


def above(requested: SandboxLimits, top: SandboxLimits) -> list[str]:
    """``name=value (ceiling c)`` for each requested limit above the ceiling's.

    The launcher refuses on these; the gateway client checks the same before it asks.
    """
    return [
        f"{f.name}={getattr(requested, f.name)} (ceiling {getattr(top, f.name)})"
        for f in fields(SandboxLimits)
        if getattr(requested, f.name) > getattr(top, f.name)
    ]


def outside(workdir: Path, root: Path | None) -> bool:
    """Whether ``workdir`` (resolved) is outside the ceiling's ``workspace_root``."""
    return root is not None and workdir != root and root not in workdir.parents


def applied_env(limits: SandboxLimits, workdir: Path) -> dict[str, str]:
    """What the outer stage hands the inner one: the resolved values, nothing requested."""
    return {LIMITS_ENV: json.dumps(limits.to_dict()), WORKDIR_ENV: str(workdir)}
