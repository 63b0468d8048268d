"""The user's notebook side: a real user kernel (python3) with ``%agent``, a real Jupyter
server with the extension and real sandboxes; only the model is scripted."""

from __future__ import annotations

from typing import Any

import pytest

from codeagent_jupyter.widget.client import ServerInfo
from tests.widget.conftest import *  # noqa: F403  (server, client, run, agent_settings marker)
from tests.widget.test_magic import user_kernel


@pytest.fixture
def kernel(run: Any, server_info: ServerInfo) -> Any:
    """A user kernel that finds the test server (CODEAGENT_SERVER_URL/TOKEN), with %agent."""
    with user_kernel(run, server_info) as k:
        run(k.run("%load_ext codeagent_jupyter"))
        yield k
