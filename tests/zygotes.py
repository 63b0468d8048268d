"""A started zygote for a test, or a one-line skip where none can start here; and the start
a security test's sandbox gets in the run's zygote pass."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.config import START_ENV
from codeagent_jupyter.sandbox import bubblewrap
from codeagent_jupyter.sandbox.zygote_host import Zygote, ZygoteUnavailable
from codeagent_jupyter.sandbox.zygote_manager import shared_manager_class


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


def lane_start(workdir: str | os.PathLike[str]) -> dict[str, Any]:
    """``Sandbox`` options for the start this run's environment asks for (``$CODEAGENT_START``,
    as the CLI and the server take it): ``.ci/run``'s zygote pass forks every sandbox a
    security test starts through this; other runs start them cold. With ``auto``, a sandbox
    no fork can be (a network, no bubblewrap on the test's PATH) starts cold."""
    start = os.environ.get(START_ENV, "cold")
    if start == "cold":
        return {}
    manager = shared_manager_class(Path(workdir), cold_fallback=start == "auto")
    return {"kernel_manager_class": manager}
