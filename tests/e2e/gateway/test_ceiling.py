"""Limits are the server's to set and the launcher's to clamp: direct POSTs to the gateway.

The module's gateway is configured the careless way the issue found (the launcher's own
variables whitelisted for clients), so the only thing standing between a client and a
``network: true`` kernel writing ``/`` is the ceiling in the kernel spec.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeagent_jupyter.sandbox.gateway_ceiling import (
    KERNEL_LIMITS_ENV,
    KERNEL_WORKDIR_ENV,
    MAX_LIMITS_ENV,
    Refused,
    resolve,
)
from codeagent_jupyter.sandbox.isolation import LIMITS_ENV, WORKDIR_ENV
from tests.e2e.gateway.conftest import Gateway, start_gateway, stop_gateway

WHITELIST = (LIMITS_ENV, WORKDIR_ENV, MAX_LIMITS_ENV)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    flags = [f"--JupyterWebsocketPersonality.env_whitelist={name}" for name in WHITELIST]
    gw = start_gateway(tmp_path_factory.mktemp("careless-gateway"), *flags)
    try:
        yield gw
    finally:
        stop_gateway(gw)


def _call(gateway: Gateway, method: str, path: str, body: object = None) -> object:
    request = urllib.request.Request(
        f"{gateway.url}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {gateway.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


def _refusal_logged(gateway: Gateway, env: dict[str, str]) -> str:
    """POST a kernel straight to the gateway; return the launcher's refusal from its log."""
    before = len(gateway.log_text())
    kernel = _call(gateway, "POST", "/api/kernels", {"name": "codeagent-sandbox", "env": env})
    assert isinstance(kernel, dict)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            new = gateway.log_text()[before:]
            if "refused to start" in new:
                return next(line for line in new.splitlines() if "refused to start" in line)
            time.sleep(0.2)
        raise AssertionError(f"the kernel was not refused: {gateway.log_text()[before:]}")
    finally:
        _call(gateway, "DELETE", f"/api/kernels/{kernel['id']}")


def test_inflated_kernel_limits_are_refused(gateway: Gateway) -> None:
    asked = {"memory_mb": 100_000, "network": True}
    line = _refusal_logged(gateway, {KERNEL_LIMITS_ENV: json.dumps(asked)})
    assert "memory_mb=100000 (ceiling 2048)" in line and "network=True" in line


def test_whitelisted_launcher_variables_cannot_lift_the_ceiling(gateway: Gateway) -> None:
    env = {
        MAX_LIMITS_ENV: json.dumps({"memory_mb": 100_000, "network": True}),
        LIMITS_ENV: json.dumps({"memory_mb": 100_000, "network": True}),
    }
    line = _refusal_logged(gateway, env)
    assert "limits above the ceiling" in line and "memory_mb=100000" in line


@pytest.mark.parametrize("workdir", ["/", "/etc"])
def test_a_workspace_outside_the_root_is_refused(gateway: Gateway, workdir: str) -> None:
    for name in (KERNEL_WORKDIR_ENV, WORKDIR_ENV):
        line = _refusal_logged(gateway, {name: workdir})
        assert f"workspace {workdir} is outside the allowed root" in line


def test_requests_may_only_tighten(tmp_path: Path) -> None:
    ceiling = {"memory_mb": 1024, "network": False, "workspace_root": str(tmp_path)}
    env = {MAX_LIMITS_ENV: json.dumps(ceiling), KERNEL_LIMITS_ENV: '{"memory_mb": 300}'}
    limits, workdir, unconfined = resolve(env, str(tmp_path))
    assert limits.memory_mb == 300 and workdir == tmp_path and not unconfined
    absent = resolve({MAX_LIMITS_ENV: json.dumps(ceiling)}, str(tmp_path))[0]
    assert absent.memory_mb == 1024  # nothing asked: the ceiling itself
    for asked in ('{"network": true}', '{"allow_unconfined": true}', '{"memory_mb": -1}'):
        with pytest.raises(Refused):
            resolve({**env, KERNEL_LIMITS_ENV: asked}, str(tmp_path))


def test_gateway_variables_without_a_ceiling_are_refused(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="no CODEAGENT_SANDBOX_MAX_LIMITS ceiling"):
        resolve({KERNEL_LIMITS_ENV: '{"memory_mb": 300}'}, str(tmp_path))
    local = resolve({LIMITS_ENV: '{"memory_mb": 300}'}, str(tmp_path))
    assert local[0].memory_mb == 300  # our own server, locally: unchanged


def test_only_the_ceiling_allows_an_unconfined_kernel(tmp_path: Path) -> None:
    strict = {MAX_LIMITS_ENV: json.dumps({"workspace_root": str(tmp_path)})}
    asked = {**strict, "CODEAGENT_SANDBOX_ALLOW_UNCONFINED": "1"}
    assert resolve(asked, str(tmp_path))[2] is False  # a request cannot choose it
    pod = {MAX_LIMITS_ENV: json.dumps({"workspace_root": str(tmp_path), "allow_unconfined": True})}
    assert resolve(pod, str(tmp_path))[2] is True  # the operator can (the pod isolates)
