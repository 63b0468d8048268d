"""The backend settings, declared once: server traits and the CLI say the same; bad ones fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from traitlets import TraitError

from codeagent_jupyter.errors import ConfigError
from codeagent_jupyter.sandbox.backend import SETTINGS_HELP, GatewayBackend, LocalBackend
from codeagent_jupyter.server.app import CodeAgent


def test_local_is_the_default_and_keeps_the_kernel_manager_class() -> None:
    backend = CodeAgent().sandbox_backend_of()
    assert isinstance(backend, LocalBackend)
    assert backend.describe()["kernel_manager_class"].endswith("AsyncKernelManager")


def test_gateway_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEAGENT_GATEWAY_TOKEN", "from-env")
    settings = CodeAgent(sandbox_backend="gateway", gateway_url="http://gw:8888/")
    backend = settings.sandbox_backend_of()
    assert isinstance(backend, GatewayBackend) and backend.token == "from-env"
    assert backend.describe() == {"name": "gateway", "gateway_url": "http://gw:8888", "token": True}
    assert CodeAgent.class_traits()["gateway_url"].help == SETTINGS_HELP["gateway_url"]


def test_bad_backend_settings_are_one_line() -> None:
    with pytest.raises(ConfigError, match="needs a gateway URL"):
        CodeAgent(sandbox_backend="gateway").sandbox_backend_of()
    with pytest.raises(ConfigError, match="must start with http"):
        CodeAgent(sandbox_backend="gateway", gateway_url="gw:8888").sandbox_backend_of()
    with pytest.raises(TraitError):
        CodeAgent(sandbox_backend="remote")


def test_start_zygote_is_local_only(tmp_path: Path) -> None:
    """A zygote serves the local backend's own kernels: elsewhere ``zygote`` is refused in one
    line and ``auto`` starts cold; a cold start (the default) has none."""
    assert CodeAgent().sandbox_backend_of(tmp_path).describe()["start"] == "cold"
    gateway = {"sandbox_backend": "gateway", "gateway_url": "http://gw:8888"}
    with pytest.raises(ConfigError, match="start zygote needs the local backend"):
        CodeAgent(start="zygote", **gateway).sandbox_backend_of(tmp_path)
    auto = CodeAgent(start="auto", **gateway).sandbox_backend_of(tmp_path)
    assert isinstance(auto, GatewayBackend)
    local = CodeAgent(start="zygote").sandbox_backend_of(tmp_path)
    assert isinstance(local, LocalBackend) and local.describe()["start"] == "zygote"
    assert local.zygote is not None and local.zygote.process is None  # started at the first fork
