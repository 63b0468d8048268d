"""A full server session (REST + WebSocket, scripted model) on the gateway backend.

The session's kernel must be the gateway's (listed there as ``codeagent-sandbox``), not a
child of the Jupyter server, and health must say so with the limits really applied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.e2e.gateway.conftest import Gateway, gateway_kernels, server_config
from tests.scripted_model import text, tool_calls
from tests.server.conftest import *  # noqa: F403  (the real Jupyter server's fixtures)
from tests.server.helpers import Api, of_type


@pytest.fixture
def jp_root_dir(gateway: Gateway, tmp_path: Path) -> Path:
    """The server root is on the volume the gateway shares (below its allowed root)."""
    root = gateway.root / f"server-{tmp_path.name}"
    root.mkdir()
    return root


@pytest.fixture
def jp_server_config(gateway: Gateway, scripted_model: Any) -> Config:
    return server_config(gateway, scripted_model.url, {"cell_timeout": 30, "memory_mb": 300})


def _children(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found.update(kids)
            todo.extend(kids)
    return found


async def test_session_runs_on_the_gateway(
    api: Api, gateway: Gateway, scripted_model: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    code = "import os; print(os.getcwd()); open('from_kernel.txt', 'w').write('hi')"
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("Done.")])
    before = {k["id"] for k in gateway_kernels(gateway)}
    session = await api.start("make a file")
    events = await api.run_to_end(session["id"])
    results = of_type(events, "tool_call_finished")
    assert results and str(jp_root_dir) in str(results[0]), results
    assert (jp_root_dir / "from_kernel.txt").read_text() == "hi"
    new = [k for k in gateway_kernels(gateway) if k["id"] not in before]
    assert [k["name"] for k in new] == ["codeagent-sandbox"]
    assert _children(gateway.process.pid), "the session's kernel is not the gateway's"
    assert jp_serverapp.kernel_manager.list_kernel_ids() == []  # none of the server's own
    health = await api.ok("GET", "health")
    sandbox = health["sandbox"]
    assert sandbox["backend"] == {"name": "gateway", "gateway_url": gateway.url, "token": True}
    assert sandbox["effective_limits"]["memory_mb"] == 300
    assert gateway.token not in str(health)
    closed = await api.ok("DELETE", f"sessions/{session['id']}")
    assert closed["state"] == "closed"
    assert not {k["id"] for k in new} & {k["id"] for k in gateway_kernels(gateway)}
