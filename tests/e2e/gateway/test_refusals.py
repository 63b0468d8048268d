"""A gateway's refusal is said where the user is, at once, and leaves no kernel behind.

Real ``jupyter-kernelgateway`` processes: one whose kernel spec has the operator's ceiling
(the module's), one whose spec has none, and one whose host cannot isolate a sandbox (no
bubblewrap on its PATH), a refusal the client cannot foresee. Each refusal must be one line
naming its reason, and the gateway must be left with no kernel (none restarting).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.errors import SandboxError
from codeagent_jupyter.sandbox import SandboxLimits
from codeagent_jupyter.sandbox.backend import make_backend
from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV
from tests.cli.test_cli import codeagent, one_line_error
from tests.e2e.gateway.conftest import Gateway, gateway_kernels, start_gateway, stop_gateway

REFUSED = "refused to start"
"""What the gateway's launcher logs when it refuses (nothing may be launched to refuse)."""


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[Gateway]:
    """A gateway whose kernel spec sets no ceiling."""
    gw = start_gateway(tmp_path, ceiling=None)
    try:
        yield gw
    finally:
        stop_gateway(gw)


@pytest.fixture
def unconfinable(tmp_path: Path) -> Iterator[Gateway]:
    """A gateway whose host cannot isolate a sandbox: bubblewrap is not on its PATH, and the
    bundled one is not allowed (the gateway passes the setting on to its kernels)."""
    env = {"PATH": str(Path(sys.executable).parent), BWRAP_ENV: "system"}
    env["KG_ENV_PROCESS_WHITELIST"] = BWRAP_ENV
    gw = start_gateway(tmp_path, env=env)
    try:
        yield gw
    finally:
        stop_gateway(gw)


async def _refusal(gateway: Gateway, workspace: Path, limits: SandboxLimits) -> str:
    box = make_backend("gateway", gateway.url, gateway.token).create(workspace, limits)
    with pytest.raises(SandboxError) as refused:
        await box.start()
    message = str(refused.value)
    assert "\n" not in message
    assert gateway_kernels(gateway) == []  # nothing left restarting on the gateway
    return message


async def test_limits_above_the_ceiling_are_refused_before_launch(
    gateway: Gateway, workspace: Path
) -> None:
    logged = len(gateway.log_text())
    message = await _refusal(gateway, workspace, SandboxLimits(memory_mb=4096))
    assert "sandbox refused before launch" in message
    assert "memory_mb=4096 (ceiling 2048)" in message
    assert REFUSED not in gateway.log_text()[logged:]  # refused here: nothing launched


async def test_a_spec_without_a_ceiling_is_refused_before_launch(
    bare: Gateway, tmp_path: Path
) -> None:
    workspace = bare.root / "w"
    workspace.mkdir()
    message = await _refusal(bare, workspace, SandboxLimits())
    assert "sets no CODEAGENT_SANDBOX_MAX_LIMITS ceiling" in message
    assert REFUSED not in bare.log_text()


async def test_a_launch_that_still_fails_is_one_line_with_the_reason(
    unconfinable: Gateway,
) -> None:
    workspace = unconfinable.root / "w"
    workspace.mkdir()
    started = time.monotonic()
    message = await _refusal(unconfinable, workspace, SandboxLimits())
    print(f"refusal reported after {time.monotonic() - started:.1f} s")  # bench, not a test
    assert message.startswith(f"gateway {unconfinable.url}: sandbox refused to start:")
    assert "isolation" in message  # the launcher's own reason, not "did not become ready"


def test_the_cli_says_a_refusal_in_one_line(
    gateway: Gateway, workspace: Path, scripted_model: Any
) -> None:
    result = codeagent(
        "run", "x", "--model", "m", "--base-url", scripted_model.url,
        "--workdir", str(workspace), "--memory-mb", "4096", "--gateway-url", gateway.url,
        env={"CODEAGENT_GATEWAY_TOKEN": gateway.token},
    )  # fmt: skip
    assert result.returncode == 1
    line = one_line_error(result)
    assert line.startswith("codeagent: error: gateway ") and "memory_mb=4096" in line
    assert scripted_model.requests == []
    assert gateway_kernels(gateway) == []
