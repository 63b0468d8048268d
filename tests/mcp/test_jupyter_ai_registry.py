"""Jupyter AI's tool registry: with Jupyter AI 3.2 installed as released (its
``jupyter-server-mcp`` and the ``mcp`` SDK it pins), a real Jupyter server starts with every
extension, its MCP server lists our sandbox tools, and they run in a sandbox of our
extension: state kept across calls, an error with its traceback as an error result, a plot
as an image. With the configuration docs/mcp.md shows, the agents get our ``run_cell`` and
no tool that runs code in the user's kernel.

The client is FastMCP's, which ``jupyter-server-mcp`` brings: it speaks whichever ``mcp``
SDK is installed. Skipped where Jupyter AI is not installed, except in the CI lane that
installs it (``CODEAGENT_JUPYTER_AI_TESTS=required``), where that fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.persona.server import jupyter_server

MISSING = [m for m in ("jupyter_server_mcp", "fastmcp") if importlib.util.find_spec(m) is None]
REQUIRED = os.environ.get("CODEAGENT_JUPYTER_AI_TESTS") == "required"
pytestmark = pytest.mark.skipif(
    bool(MISSING) and not REQUIRED,
    reason=f"{', '.join(MISSING)} not installed: pip install 'jupyter-ai==3.2.*'",
)
SANDBOX_TOOLS = {"run_cell", "run_command", "read_file", "write_file", "list_files", "search_files"}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
USER_KERNEL_TOOLS = {"run_all_cells", "execute_command", "insert_cell", "edit_cell"}
"""Jupyter AI's own tools that run or change code in the user's notebook and kernel."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def docs_configuration() -> str:
    """The ``jupyter_server_config.py`` docs/mcp.md tells users to write."""
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    (block,) = [b for b in blocks if "use_tool_discovery" in b]
    return block


@pytest.fixture
def registry_server(tmp_path: Path, request: Any) -> Iterator[tuple[str, Path]]:
    """A real ``jupyter server`` with every installed extension: ``(MCP URL, its log)``.
    ``request.param`` is a ``jupyter_server_config.py`` to add, or ``""``. Its sessions'
    notebooks are in ``tmp_path / "jupyter-data" / "codeagent" / "sessions"``."""
    if MISSING:
        pytest.fail(f"{', '.join(MISSING)} not installed", pytrace=False)
    mcp_port = free_port()
    config = {
        "CodeAgent": {"pool_size": 1, "model": "none"},
        "MCPExtensionApp": {"mcp_port": mcp_port},
    }
    with jupyter_server(tmp_path, config, getattr(request, "param", "")) as (_, _, _, log):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = log.read_text()
            if "codeagent: MCP sandboxes:" in text and "Registered tools" in text:
                break
            time.sleep(0.3)
        else:
            pytest.fail(f"the MCP server did not come up:\n{log.read_text()[-3000:]}")
        yield f"http://localhost:{mcp_port}/mcp", log


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def test_every_extension_and_our_tools_listed(registry_server: tuple[str, Path]) -> None:
    from fastmcp import Client

    url, log = registry_server
    async with Client(url) as c:
        names = {t.name for t in await c.list_tools()}
        assert names >= SANDBOX_TOOLS, names
        assert "read_notebook" in names  # Jupyter AI's own tools are there too
        done = await c.call_tool("run_command", {"command": "echo $((6 * 7))"})
        assert not done.is_error and "42" in text_of(done)
    assert "Registering tool: run_command" in log.read_text()


@pytest.mark.parametrize("registry_server", [docs_configuration()], indirect=True)
async def test_the_docs_configuration_gives_agents_our_run_cell(
    registry_server: tuple[str, Path],
) -> None:
    from fastmcp import Client

    url, log = registry_server
    async with Client(url, timeout=120) as c:
        tools = {t.name: t for t in await c.list_tools()}
        assert set(tools) == SANDBOX_TOOLS | {"read_notebook"}, set(tools)
        assert not USER_KERNEL_TOOLS & set(tools)
        run_cell = tools["run_cell"]  # ours, not JupyterLab's run_cell (which takes no code)
        schema = getattr(run_cell, "inputSchema", None) or run_cell.input_schema
        assert "sandbox" in (run_cell.description or "") and "code" in schema["properties"]

        done = await c.call_tool("run_cell", {"code": "import os\nx = 6 * 7\nx"})
        assert not done.is_error and "42" in text_of(done)
        kept = await c.call_tool("run_cell", {"code": "x + 1"})
        assert "43" in text_of(kept)  # one sandbox for the registry, its state kept
        failed = await c.call_tool("run_cell", {"code": "1 / 0"}, raise_on_error=False)
        assert failed.is_error
        assert "Traceback" in text_of(failed) and "ZeroDivisionError" in text_of(failed)
        plot = "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"
        shown = await c.call_tool("run_cell", {"code": plot})
        images = [b for b in shown.content if b.type == "image"]
        mimes = [getattr(b, "mimeType", None) or getattr(b, "mime_type", None) for b in images]
        assert mimes == ["image/png"] and images[0].data
        outside = await c.call_tool("read_file", {"path": "/etc/passwd"}, raise_on_error=False)
        assert outside.is_error and "root:" not in text_of(outside)
    text = log.read_text()
    assert "codeagent: MCP session" in text  # a session of the server's hub
    assert "unexpected_keyword_argument" not in text
    opened = re.search(r"MCP session (\w+) of ", text)
    assert opened, text[-3000:]
    notebook = log.parent / "jupyter-data" / "codeagent" / "sessions" / f"{opened[1]}.ipynb"
    assert wait_for(lambda: "x + 1" in read(notebook))
    nb = nbformat.reads(read(notebook), as_version=4)
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    assert sources[:3] == ["import os\nx = 6 * 7\nx", "x + 1", "1 / 0"]  # recorded, in order


def read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def wait_for(check: Any, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()
