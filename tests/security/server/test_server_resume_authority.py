"""Resume and fork through the REST API never take authority from a session notebook.

The server's notebooks are signed (``server/signing.py``): one edited on disk to ask for the
network, 64 GiB and a day per cell is refused, for a resume and for a fork, before any
sandbox or model call. A genuine one is resumed under today's ``c.CodeAgent.limits``,
lowered where the session ran under less: its own request's tightening survives even when
the administrator has lowered another limit since, and the network stays off (a cell
trying the host's 127.0.0.1 is refused).
"""

from __future__ import annotations

import json
import signal
import urllib.error
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.scripted_model import text, tool_calls
from tests.security.test_session_authority import GREEDY, Listener, listener  # noqa: F401
from tests.server.helpers import Api, processes_in
from tests.server.test_lifecycle import ServerProcess, servers  # noqa: F401  (fixture)


def _cell(code: str) -> dict[str, Any]:
    return tool_calls(("run_cell", {"code": code}))


def _probe(port: int) -> str:
    return (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
        "    print('REACHED')\n"
        "except OSError as e:\n"
        "    print('REFUSED', type(e).__name__)\n"
    )


@pytest.mark.codeagent(allow_unconfined=True)
async def test_an_edited_notebook_is_neither_resumed_nor_forked(
    api: Api, scripted_model: Any, jp_data_dir: Path, jp_root_dir: Path
) -> None:
    scripted_model.set_script([_cell("x = 1"), text("done")])
    sid = (await api.start("set up"))["id"]
    await api.run_to_end(sid)
    await api.ok("POST", f"sessions/{sid}/pause")
    path = jp_data_dir / "codeagent" / "sessions" / f"{sid}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.metadata.codeagent.limits = GREEDY
    nbformat.write(nb, path)
    asked = len(scripted_model.requests)

    scripted_model.set_script([text("never")])
    for route, body in (
        (f"sessions/{sid}/messages", {"text": "go"}),
        (f"sessions/{sid}/fork", {"prompt": "go"}),
    ):
        code, error = await api.call("POST", route, body)
        assert code == 409, (route, code, error)
        assert "not signed by this server" in error["message"]
    assert len(scripted_model.requests) == asked  # no model call
    assert processes_in(jp_root_dir) == []  # no sandbox


def _printed(server: ServerProcess, sid: str) -> str:
    """What the session's cells printed (not their code, which names both outcomes)."""
    events = server.call("GET", f"sessions/{sid}")["events"]
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    return json.dumps([e.get("outputs", []) for e in finished])


def _probed(server: ServerProcess, sid: str) -> bool:
    """The probe's run has finished (a resumed session's status is its last run's before)."""
    events = server.call("GET", f"sessions/{sid}")["events"]
    finished = [e for e in events if e["type"] == "run_finished"]
    return bool(finished) and finished[-1].get("answer") == "probed"


def test_resume_and_fork_keep_the_request_tightening_under_todays_ceiling(
    tmp_path: Path,
    scripted_model: Any,
    servers: list[ServerProcess],  # noqa: F811
    listener: Listener,  # noqa: F811
) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    settings = {"pool_size": 0, "max_sessions_per_user": 4, "allow_unconfined": True}
    first = ServerProcess(root, home, scripted_model.url, settings).start()
    servers.append(first)
    scripted_model.set_script([_cell("x = 1"), text("done")])
    sid = first.call("POST", "sessions", {"prompt": "go", "limits": {"memory_mb": 512}})["id"]
    first.wait_for(lambda: first.call("GET", f"sessions/{sid}")["status"] == "answered")
    first.proc.send_signal(signal.SIGTERM)
    first.proc.wait(30)

    # The administrator lowers cell_timeout below what the session recorded (300).
    second = ServerProcess(root, home, scripted_model.url, settings, "{'cell_timeout': 100}")
    servers.append(second.start())
    notebook = home / "data" / "codeagent" / "sessions" / f"{sid}.ipynb"
    for route, body in (
        (f"sessions/{sid}/messages", {"text": "probe"}),
        (f"sessions/{sid}/fork", {"prompt": "probe"}),
    ):
        scripted_model.set_script([_cell(_probe(listener.port)), text("probed")])
        try:
            target = second.call("POST", route, body)["id"]
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{route}: {e.code} {e.read()!r}") from None
        second.wait_for(lambda t=target: _probed(second, t), 120)
        path = notebook if target == sid else notebook.with_name(f"{target}.ipynb")
        limits = nbformat.read(path, as_version=4).metadata.codeagent.limits
        assert limits["memory_mb"] == 512  # the session's own request, still in force
        assert limits["cell_timeout"] == 100  # today's ceiling, not the recorded 300
        assert limits["network"] is False
        printed = _printed(second, target)
        assert "REACHED" not in printed and "REFUSED" in printed
    assert listener.reached == 0
