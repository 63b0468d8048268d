"""Driving a built loop from the command line: its prompts in order, Ctrl-C and SIGTERM as a
clean stop, and the last lines (the answer, where the session notebook is, the exit code).

Shared by ``run``, ``replay --model recorded`` and ``resume``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from . import events as ev
from .loop import AgentLoop


async def drive(loop: AgentLoop, prompts: list[str]) -> ev.RunFinished:
    """Run the prompts in order; Ctrl-C or SIGTERM stops the run cleanly (still recorded)."""
    aio = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        aio.add_signal_handler(sig, loop.cancel, f"stopped by {sig.name}")
    try:
        finished = None
        for prompt in prompts:
            finished = await loop.run(prompt)
            if finished.status != ev.ANSWERED:
                break
        assert finished is not None
        return finished
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            aio.remove_signal_handler(sig)


def report(finished: ev.RunFinished, out: Path) -> int:
    if finished.answer:
        print(finished.answer)
    print(f"Session: {out}")
    if finished.status != ev.ANSWERED:
        print(f"codeagent: stopped: {finished.reason}", file=sys.stderr)
        return 1
    return 0
