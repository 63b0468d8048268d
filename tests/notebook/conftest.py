"""The user's notebook side: a real user kernel (python3) with ``%agent``, a real Jupyter
server with the extension and real sandboxes; only the model is scripted."""

from __future__ import annotations

import os
from typing import Any

import pytest
from jupyter_client.manager import AsyncKernelManager

from codeagent_jupyter.widget.client import TOKEN_ENV, URL_ENV, ServerInfo
from tests.widget.conftest import *  # noqa: F403  (server, client, run, agent_settings marker)
from tests.widget.test_magic import Kernel


@pytest.fixture
def kernel(run: Any, server_info: ServerInfo) -> Any:
    """A user kernel that finds the test server (CODEAGENT_SERVER_URL/TOKEN), with %agent."""
    env = {**os.environ, URL_ENV: server_info.url, TOKEN_ENV: server_info.token}
    manager = AsyncKernelManager(kernel_name="python3")
    run(manager.start_kernel(env=env))
    client = manager.client()
    client.start_channels()
    run(client.wait_for_ready(timeout=60))
    k = Kernel(client)
    run(k.run("%load_ext codeagent_jupyter"))
    yield k
    client.stop_channels()
    run(manager.shutdown_kernel(now=True))
