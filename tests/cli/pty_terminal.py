"""A real process on a real pseudo-terminal, and every byte it wrote to it: what a user's
terminal would receive, escape codes and all."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable
from pathlib import Path


class Terminal:
    """A process on a pseudo-terminal of 120 x 40, and everything it wrote to it."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(
            command,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.raw = b""

    @property
    def text(self) -> str:
        return self.raw.decode(errors="replace")

    def read(self, seconds: float) -> bool:
        """Read for up to ``seconds``; False once the process closed the terminal."""
        ready, _, _ = select.select([self.master], [], [], seconds)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side is closed
            return False
        self.raw += chunk
        return bool(chunk)

    def wait_for(self, done: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline or not self.read(0.2):
                return done()
        return True

    def finish(self, timeout: float = 180) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.read(0.5):
            pass
        try:
            return self.proc.wait(max(1.0, deadline - time.monotonic()))
        finally:
            os.close(self.master)


def run_on_terminal(
    command: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 240
) -> tuple[int, bytes]:
    """Runs ``command`` to its end on a pseudo-terminal: its exit status and raw bytes."""
    term = Terminal(command, env, cwd)
    code = term.finish(timeout)
    return code, term.raw
