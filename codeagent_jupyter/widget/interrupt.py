"""JupyterLab's interrupt (■) stops the agent's runs started from this kernel.

``%agent`` returns at once and the run goes on in the server, so when the user presses ■
the kernel is usually idle. ipykernel delivers the interrupt as SIGINT either way (the
"signal" mode, or an ``interrupt_request`` it turns into SIGINT to itself), and between
cells it ignores SIGINT: the handler that ipykernel restores after each cell is the one it
saved before it (``Kernel.saved_sigint_handler``). That saved handler becomes ours, so:

- during a cell, ipykernel's own ``default_int_handler`` is in place as always: ■ raises
  ``KeyboardInterrupt`` in the running cell (the user's code, or ``%agent`` itself);
- between cells, ■ stops every run this kernel's panels are following (Stop, i.e.
  ``POST …/cancel``), and otherwise does nothing, as before.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any


class InterruptWatcher:
    """Installs itself as the kernel's idle SIGINT handler; calls ``on_interrupt`` on the
    event loop (never inside the signal handler) when the kernel is interrupted while idle."""

    def __init__(self, on_interrupt: Callable[[], Any]) -> None:
        self.on_interrupt = on_interrupt
        self.previous: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.installed = False

    def install(self, kernel: Any) -> bool:
        """Become ``kernel``'s handler between cells (call it while a cell runs: ipykernel
        puts the saved handler back when the cell ends). False outside ipykernel."""
        if self.installed:
            return True
        if kernel is None or not hasattr(kernel, "saved_sigint_handler"):
            return False
        self.previous = kernel.saved_sigint_handler
        self.loop = asyncio.get_event_loop()
        kernel.saved_sigint_handler = self.handle
        self.installed = True
        return True

    def handle(self, signum: int, frame: Any) -> None:
        """The SIGINT handler between cells: defer the work to the event loop."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.on_interrupt)
        previous = self.previous
        if callable(previous) and previous not in (signal.default_int_handler, self.handle):
            previous(signum, frame)
