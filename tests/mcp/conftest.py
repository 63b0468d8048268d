"""The MCP tests over HTTP run the real server (the fixtures of ``tests/server``) with the
real identity provider of the security tests (users named by their tokens)."""

from __future__ import annotations

from typing import Any

from tests.server.conftest import (  # noqa: F401  (fixtures used by the tests here)
    api,
    echo_kernel_spec,
    http_server,
    http_server_client,
    http_server_port,
    jp_argv,
    jp_asyncio_loop,
    jp_auth_header,
    jp_base_url,
    jp_config_dir,
    jp_configurable_serverapp,
    jp_data_dir,
    jp_env_config_path,
    jp_env_jupyter_path,
    jp_environ,
    jp_fetch,
    jp_home_dir,
    jp_http_port,
    jp_kernel_dir,
    jp_logging_stream,
    jp_nbconvert_templates,
    jp_root_dir,
    jp_runtime_dir,
    jp_server_cleanup,
    jp_server_config,
    jp_serverapp,
    jp_system_config_path,
    jp_system_jupyter_path,
    jp_web_app,
    jp_ws_fetch,
)
from tests.server.conftest import pytest_configure as _server_markers


def pytest_configure(config: Any) -> None:
    _server_markers(config)
