"""A started zygote for a test, or a one-line skip where none can start here."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeagent_jupyter.sandbox import bubblewrap
from codeagent_jupyter.sandbox.zygote_host import Zygote, ZygoteUnavailable


@contextlib.contextmanager
def running_zygote(root: Path) -> Iterator[Zygote]:
    """A zygote serving the workspaces under ``root``, ended afterwards with every fork.
    Without bubblewrap, or where it refuses (no user namespaces), the test skips with the
    zygote's own one-line reason: the lane that hides bubblewrap checks that refusal."""
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed")
    zygote = Zygote(root)
    try:
        zygote.start()
    except ZygoteUnavailable as e:
        pytest.skip(str(e))
    try:
        yield zygote
    finally:
        zygote.close()
