"""Reading a sandbox kernel's replies: shell replies, leftover output, the enforcement report,
and what a process exit or an execute reply means, in words.

Kept apart from ``kernel.py`` (the kernel's lifecycle and the timeout ladder) because these
are plain functions of the messages, with no state of their own.
"""

from __future__ import annotations

import ast
import json
import queue
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..config import SandboxLimits
from .cpu import EXCEEDED_NAME as CPU_EXCEEDED
from .isolation import ENFORCEMENT_ENV
from .outputs import OutputCollector

ENFORCED_BY_CLIENT = {
    "cell_timeout": "interrupt, then restart",
    "output_bytes": "truncate",
    "stdin": "disabled",
    "disk": "workspace and kernel folder guarded for the sandbox's life (file lengths)",
}
"""Limits this client enforces itself, whatever the launcher could apply."""


def describe_exit(returncode: int | None, limits: SandboxLimits) -> str:
    """Why the kernel process ended, in words (bwrap reports a signal as 128 + n)."""
    if returncode is None:
        return "kernel died"
    sig = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if sig == signal.SIGKILL:
        return "kernel died (SIGKILL: out of memory, or its lifetime CPU backstop reached)"
    if sig == signal.SIGXCPU:
        return (
            f"kernel died (SIGXCPU: CPU budget of {limits.cpu_seconds} s used up "
            "between cells, e.g. by a thread a cell left running)"
        )
    if sig == signal.SIGSEGV:
        return "kernel died (SIGSEGV, segmentation fault)"
    if sig > 0:
        try:
            return f"kernel died ({signal.Signals(sig).name})"
        except ValueError:
            pass
    return f"kernel exited with code {returncode}"


async def shell_reply(kc: Any, msg_id: str, timeout: float) -> dict[str, Any] | None:
    """The shell reply to ``msg_id``, or None when none came within ``timeout`` seconds."""
    return await _first(kc.get_shell_msg, lambda msg: _parent(msg) == msg_id, timeout)


async def _first(
    get: Callable[..., Awaitable[dict[str, Any]]],
    match: Callable[[dict[str, Any]], bool],
    timeout: float,
) -> dict[str, Any] | None:
    """The first message from ``get`` (a channel's) that ``match``es, the others skipped;
    None when none came within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            msg = await get(timeout=left)
        except queue.Empty:
            return None
        if match(msg):
            return msg
    return None


def _parent(msg: dict[str, Any]) -> Any:
    return msg["parent_header"].get("msg_id")


async def wait_ready(kc: Any, timeout: float, alive: Callable[[], Awaitable[bool]]) -> None:
    """Return once the kernel has answered ``kernel_info`` on shell and IOPub reaches us.

    jupyter_client's ``wait_for_ready`` ends with 0.2 s of IOPub silence on every start, and
    polls heartbeats every 0.2 s first for a client no manager made (a zygote's fork): half
    of a forked kernel's start. Here the proof that IOPub is connected is the ``idle`` status
    of our own request; older replies and statuses are skipped by their parent's id (what is
    left in the queues is skipped the same way by every later read). ``RuntimeError`` when the
    kernel dies or ``timeout`` seconds pass, with jupyter_client's words.
    """
    deadline = time.monotonic() + timeout
    msg_id = kc.kernel_info()
    while True:
        reply = await shell_reply(kc, msg_id, 1.0)  # queued until the kernel listens
        if reply is not None and await _idle_seen(kc, msg_id, 0.05):
            major = int(reply["content"].get("protocol_version", "5").split(".")[0])
            if major != 5:  # as jupyter_client adapts to an older kernel
                kc.session.adapt_version = major
            return
        if not await alive():
            raise RuntimeError("Kernel died before replying to kernel_info")
        if time.monotonic() > deadline:
            raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")
        msg_id = kc.kernel_info()  # IOPub was not connected yet, or the request was lost


async def _idle_seen(kc: Any, msg_id: str, timeout: float) -> bool:
    """Whether IOPub brought the ``idle`` status of ``msg_id`` within ``timeout`` seconds."""

    def idle(msg: dict[str, Any]) -> bool:
        status = msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"
        return status and _parent(msg) == msg_id

    return await _first(kc.get_iopub_msg, idle, timeout) is not None


async def drain(kc: Any, msg_id: str, collector: OutputCollector) -> None:
    """Keep the outputs a dead kernel managed to send before it went."""
    while True:
        try:
            msg = await kc.get_iopub_msg(timeout=0.05)
        except queue.Empty:
            return
        if msg["parent_header"].get("msg_id") == msg_id:
            collector.add(msg)


ENFORCEMENT_EXPR = f"__import__('os').environ.get({ENFORCEMENT_ENV!r}, '')"
"""A user expression that reads the launcher's report from inside the kernel."""


def parse_enforcement(content: dict[str, Any] | None) -> dict[str, Any]:
    """The launcher's report from the reply to ``ENFORCEMENT_EXPR`` (as user expression
    ``e``). A kernel that does not say (not started by our launcher) is reported as
    enforcing nothing: a guarantee is never assumed."""
    found: dict[str, Any] = {}
    try:
        value = content["user_expressions"]["e"]["data"]["text/plain"]  # type: ignore[index]
        found = json.loads(ast.literal_eval(value))
    except (TypeError, KeyError, ValueError, SyntaxError):
        found = {}
    if not isinstance(found, dict) or not found:
        found = dict.fromkeys((*SandboxLimits.enforced_keys(), "network", "filesystem"), "none")
    return found


async def read_enforcement(kc: Any, timeout: float) -> dict[str, Any]:
    """Ask the kernel what its launcher applied, before any user code has run."""
    user_expressions = {"e": ENFORCEMENT_EXPR}
    msg_id = kc.execute("", silent=True, store_history=False, user_expressions=user_expressions)
    reply = await shell_reply(kc, msg_id, timeout)
    return {**parse_enforcement(reply["content"] if reply else None), **ENFORCED_BY_CLIENT}


def reply_status(
    content: dict[str, Any], interrupted_after: float | None, limits: SandboxLimits
) -> tuple[str, str]:
    """The cell's status and note from its execute reply (``interrupted_after``: the
    timeout after which it was interrupted, or None)."""
    if interrupted_after is not None:
        return "timeout", f"interrupted after {interrupted_after:g} s (cell_timeout); state kept"
    if content.get("status") == "ok":
        return "ok", ""
    if content.get("ename") == CPU_EXCEEDED:
        return "error", (
            f"stopped after its CPU budget of {limits.cpu_seconds} s (cpu_seconds, per cell); "
            "state kept"
        )
    return "error", ""
