"""Runs inside the sandbox kernel: a shell command with live output, for ``run_command``.

Imported by a one-line cell rather than pasted as code so the user's namespace stays
untouched; the exit code is read back through ``user_expressions``.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import signal
import subprocess
import sys

last_exit_code: int | None = None


def run(command: str) -> None:
    """Run ``command`` in a shell, streaming its output; an interrupt kills its whole group."""
    global last_exit_code
    last_exit_code = None
    proc = subprocess.Popen(
        command,
        shell=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    try:
        while chunk := os.read(proc.stdout.fileno(), 65536):
            sys.stdout.write(decoder.decode(chunk))
            sys.stdout.flush()
        sys.stdout.write(decoder.decode(b"", final=True))
        last_exit_code = proc.wait()
    except BaseException:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        proc.stdout.close()
