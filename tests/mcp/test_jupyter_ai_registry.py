"""Jupyter AI's tool registry: with ``jupyter-server-mcp`` installed, a real Jupyter server
starts with every extension and its MCP server lists our sandbox tools, which run in a
sandbox of our extension. Skipped where the package is not installed, except in the CI lane
that installs Jupyter AI (``CODEAGENT_JUPYTER_AI_TESTS=required``), where that fails."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

MISSING = [m for m in ("jupyter_server_mcp", "mcp") if importlib.util.find_spec(m) is None]
REQUIRED = os.environ.get("CODEAGENT_JUPYTER_AI_TESTS") == "required"
pytestmark = pytest.mark.skipif(
    bool(MISSING) and not REQUIRED,
    reason=f"{', '.join(MISSING)} not installed: pip install 'jupyter-ai==3.2.*'",
)
SANDBOX_TOOLS = {"run_cell", "run_command", "read_file", "write_file", "list_files", "search_files"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[int]:
    """A real ``jupyter server`` with every installed extension; the registry's MCP port."""
    if MISSING:
        pytest.fail(f"{', '.join(MISSING)} not installed", pytrace=False)
    port, mcp_port = free_port(), free_port()
    root = tmp_path / "root"
    root.mkdir()
    log = tmp_path / "server.log"
    argv = [
        sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1",
        "--IdentityProvider.token=t0ken", f"--ServerApp.root_dir={root}",
        "--ServerApp.open_browser=False", "--allow-root", "--CodeAgent.pool_size=1",
        "--CodeAgent.model=none", f"--MCPExtensionApp.mcp_port={mcp_port}",
    ]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = log.read_text()
            if "MCP at /codeagent/mcp" in text and "Registered tools" in text:
                break
            assert proc.poll() is None, text
            time.sleep(0.3)
        else:
            pytest.fail(f"the server did not come up:\n{log.read_text()[-3000:]}")
        assert "Registering tool: run_cell" in log.read_text()
        yield mcp_port
    finally:
        proc.terminate()
        proc.wait(60)


async def test_jupyter_ai_agents_get_our_sandbox_tools(server: int) -> None:
    from mcp import Client
    from mcp.types import Implementation

    url = f"http://localhost:{server}/mcp"
    async with Client(url, client_info=Implementation(name="acp-agent", version="1")) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert names >= SANDBOX_TOOLS
        done = await c.call_tool("run_cell", {"code": "import os\nx = 6 * 7\nx"})
        assert not done.is_error and "42" in done.content[0].text
        kept = await c.call_tool("run_cell", {"code": "x + 1"})
        assert "43" in kept.content[0].text  # one sandbox per registry session, state kept
        failed = await c.call_tool("run_cell", {"code": "1 / 0"})
        assert failed.is_error and "ZeroDivisionError" in failed.content[0].text
        outside = await c.call_tool("read_file", {"path": "/etc/passwd"})
        assert outside.is_error
