"""``install_packages`` through the real server: the approval over REST shows package,
version, size and index; a resumed session reinstalls what it had (a real index on
127.0.0.1, real sandboxes, the scripted model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.packages.index import Served, served_index
from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api, of_type


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_index(tmp_path_factory.mktemp("index")) as index:
        yield index


@pytest.fixture
def jp_server_config(jp_server_config: Any, served: Served) -> Any:
    jp_server_config["CodeAgent"]["packages"] = {
        "index_url": served.url,
        "deny": ["evilpkg"],
        "cache_dir": str(served.cache),
    }
    return jp_server_config


async def _start(api: Api, prompt: str) -> str:
    """A new session's id; a generous bound: a loaded machine starts sandboxes slowly."""
    code, session = await api.call("POST", "sessions", {"prompt": prompt}, request_timeout=240)
    assert code == 201, session
    return session["id"]


def _printed(events: list[dict[str, Any]]) -> str:
    return "".join(
        "".join(o.get("text", ""))
        for e in of_type(events, "tool_call_finished")
        for o in e["outputs"]
        if o.get("output_type") == "stream"
    )


async def test_install_waits_for_approval_over_rest_and_a_resume_reinstalls(
    api: Api, scripted_model: Any, served: Served
) -> None:
    install = {"packages": ["tinyapp"], "reason": "the analysis needs tinyapp"}
    scripted_model.set_script(
        [
            tool_calls(("install_packages", install)),
            tool_calls(("run_cell", {"code": "import tinyapp\nprint('v', tinyapp.__version__)"})),
            text("done"),
        ]
    )
    sid = await _start(api, "use tinyapp")
    ws = await api.connect(sid)
    asked = await api.read_until(ws, lambda e: e["type"] == "approval_requested")
    request = asked[-1]
    assert request["name"] == "install_packages"
    shown = {w["name"]: w for w in request["arguments"]["install"]}
    assert set(shown) == {"tinyapp", "tinydep"}
    assert shown["tinyapp"]["version"] == "1.0" and shown["tinyapp"]["index"] == served.url
    assert shown["tinyapp"]["size_bytes"] > 0
    assert request["arguments"]["reason"] == install["reason"]
    detail = await api.ok("GET", f"sessions/{sid}")
    assert detail["pending_approvals"] == [request["tool_call_id"]]
    await api.ok("POST", f"sessions/{sid}/approvals/{request['tool_call_id']}", {"approve": True})
    events = await api.read_until(ws, lambda e: e["type"] == "run_finished", into=asked)
    ws.close()
    assert events[-1]["status"] == "answered"
    assert "v 1.0\n" in _printed(events)

    detail = await api.ok("GET", f"sessions/{sid}")
    await api.ok("POST", f"sessions/{sid}/pause")
    scripted_model.set_script(
        [
            tool_calls(
                ("run_cell", {"code": "import tinydep\nprint('again', tinydep.__version__)"})
            ),
            text("resumed"),
        ]
    )
    await api.ok("POST", f"sessions/{sid}/messages", {"text": "go on"}, 202)
    events = await api.run_to_end(sid, since=detail["next_seq"])
    assert events[-1]["status"] == "answered", events[-1]
    assert "again 1.0\n" in _printed(events)
    restored = (await api.ok("GET", f"sessions/{sid}"))["restored"]
    assert restored["cells_rerun"] == 1 and restored["problems"] == []


async def test_a_denied_package_is_refused_without_asking(api: Api, scripted_model: Any) -> None:
    install = {"packages": ["evilpkg"], "reason": "x"}
    scripted_model.set_script([tool_calls(("install_packages", install)), text("ok")])
    sid = await _start(api, "go")
    events = await api.run_to_end(sid)
    assert not of_type(events, "approval_requested")
    [finished] = of_type(events, "tool_call_finished")
    assert finished["status"] == "refused"
    assert "evilpkg is on this server's deny list" in finished["result"]
