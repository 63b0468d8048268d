"""Starting a sandbox on a kernel gateway: refuse before launching, fail in one line at once.

A gateway's launcher refuses a sandbox it must not start (limits above the operator's
ceiling, a spec with no ceiling, a workspace outside the allowed root, no isolation on the
gateway host) by exiting; the gateway then restarts it a few times, and by itself it only
writes the reason into its own log. So:

- ``preflight`` reads the operator's ceiling where the launcher does, the kernel spec's
  ``env`` (``GET /api/kernelspecs`` carries it), and refuses what the launcher would refuse
  before anything is launched, in one line naming the limit;
- ``launch_failure`` watches the kernel's model while it starts: our provisioner on the
  gateway marks a kernel whose launcher refused ``dead`` with the launcher's line as its
  ``reason``, and a kernel the gateway gave up on disappears; either ends the start at once
  (the caller then deletes the kernel, so the gateway stops restarting it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..config import SandboxLimits
from ..errors import SandboxError
from .gateway_ceiling import MAX_LIMITS_ENV, Refused, above, ceiling, outside
from .gateway_wire import GatewayError, GatewayWire

WATCH_S = 0.25
"""How often the kernel's model is read while it starts."""
GONE = "the gateway dropped the kernel while it started (the gateway's log has the reason)"
DIED = "the kernel died while it started (the gateway's log has the reason)"


async def preflight(
    wire: GatewayWire, kernel_name: str, limits: SandboxLimits, workdir: Path
) -> None:
    """``SandboxError`` (one line) for a request the gateway's launcher would refuse."""
    try:
        listing = await wire.rest("GET", "/api/kernelspecs")
    except GatewayError as e:
        if e.code == 404:  # a gateway without the listing: its launcher still decides
            return
        raise SandboxError(f"sandbox kernel failed to start: {e}") from None
    specs = (listing or {}).get("kernelspecs") if isinstance(listing, dict) else None
    if not isinstance(specs, dict):
        return
    where = f"gateway {wire.url}"
    if kernel_name not in specs:
        offered = ", ".join(sorted(specs)) or "none"
        raise SandboxError(f"{where} has no kernel spec {kernel_name!r} (it offers: {offered})")
    spec = (specs[kernel_name] or {}).get("spec") or {}
    env = spec.get("env") if isinstance(spec.get("env"), dict) else {}
    refused = f"{where}: sandbox refused before launch:"
    try:
        top = ceiling(env)
    except Refused as e:
        raise SandboxError(f"{refused} its kernel spec {kernel_name}: {e}") from None
    if top is None:
        raise SandboxError(
            f"{refused} its kernel spec {kernel_name} sets no {MAX_LIMITS_ENV} ceiling, so "
            "its launcher refuses every sandbox (the gateway's operator must set one)"
        )
    top_limits, root, _ = top
    over = above(limits, top_limits)
    if over:
        raise SandboxError(f"{refused} limits above the gateway's ceiling: {', '.join(over)}")
    if outside(workdir.resolve(), root):
        raise SandboxError(f"{refused} workspace {workdir} is outside its allowed root {root}")


async def launch_failure(wire: GatewayWire, kernel_id: str) -> str:
    """The one line, as soon as the gateway says the kernel it is starting has failed.

    Runs until cancelled (the kernel answered) or until the kernel is ``dead`` or gone.
    """
    while True:
        await asyncio.sleep(WATCH_S)
        try:
            model = await wire.rest("GET", f"/api/kernels/{kernel_id}", timeout=5.0)
        except GatewayError as e:
            if e.code == 404:
                return GONE
            continue  # unreachable for a moment: the socket's own wait decides
        except ValueError:  # not JSON: not a model to judge by
            continue
        if isinstance(model, dict) and model.get("execution_state") == "dead":
            reason = " ".join(str(model.get("reason") or "").split())[:500]
            return reason or DIED
