"""Sandbox fixtures: real kernels with small limits so adversarial cells finish fast."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits
from tests.zygotes import lane_start

SECRETS = {
    "OPENAI_API_KEY": "sk-codeagent-test-secret-1",
    "MY_SERVICE_TOKEN": "codeagent-test-secret-2",
    "JUPYTER_TOKEN": "codeagent-test-secret-3",
}
SMALL = SandboxLimits(
    memory_mb=512,
    cpu_seconds=600,
    cell_timeout=3,
    output_bytes=100_000,
    file_size_mb=5,
    max_processes=64,
    network=False,
)


def needs(sandbox: Sandbox, key: str) -> None:
    """Skip unless the sandbox reports ``key`` as enforced on this machine."""
    how = sandbox.enforcement.get(key, "none")
    if how in ("none", "allowed"):
        pytest.skip(f"{key} is not enforced here ({how}); install bubblewrap / run as root")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sandbox]:
    """One sandbox shared by the tests of a module that leave it usable.

    The server's environment gets fake secrets first, so tests can check they are
    not visible inside. In ``.ci/run``'s zygote passes it is a fork (``lane_start``).
    """
    saved = {name: os.environ.get(name) for name in SECRETS}
    os.environ.update(SECRETS)
    try:
        workdir = tmp_path_factory.mktemp("workspace")
        async with Sandbox(
            workdir=workdir, limits=SMALL, interrupt_grace=1.5, **lane_start(workdir)
        ) as sb:
            yield sb
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
