"""The ``codeagent`` entry point called in the test's own process, for refusals.

A command's process contract (its exit status, one line on stderr) is proven by one real
process per command; the other refusals of that command go through the same
``codeagent_jupyter.cli.main.main(argv)`` here, without the second of imports each process
start costs. The status is ``main``'s return value, or the code of the ``SystemExit`` the
argument parser raises: what the process would exit with.
"""

from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4


@contextmanager
def _dumpable_kept() -> Iterator[None]:
    """``main`` clears the process's dumpable flag (it holds the API key); the test process
    gets its flag back, so no later test in it runs with a protection it did not ask for."""
    libc = ctypes.CDLL(None, use_errno=True)
    before = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    try:
        yield
    finally:
        if before >= 0:
            libc.prctl(_PR_SET_DUMPABLE, before, 0, 0, 0)


def codeagent_here(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``codeagent ARGS`` in this process, with the environment the process helper gives."""
    from codeagent_jupyter.cli.main import main

    for name, value in {"OPENAI_API_KEY": "test-key", **(env or {})}.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()  # what the test printed before is not the command's
    with _dumpable_kept():
        try:
            status = main(list(args))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), status, out, err)
