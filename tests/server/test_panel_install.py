"""Installing packages from the panel, without the model: ``POST …/sessions/ID/packages``
on the real server (a real index on 127.0.0.1, real sandboxes, the scripted model, users
told apart by their tokens). The owner's request is the approval; the policy still holds;
the install is recorded in the session notebook outside any run, so a resume reinstalls it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.packages.index import Served, served_index
from tests.scripted_model import delay, text, tool_calls
from tests.security.server.conftest import TokenUsers, as_user
from tests.server.helpers import Api, of_type

ALICE, BOB = as_user("alice-token"), as_user("bob-token")


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_index(tmp_path_factory.mktemp("index")) as index:
        yield index


@pytest.fixture
def jp_server_config(jp_server_config: Any, served: Served) -> Any:
    """Installs on (deny: evilpkg) unless the test's ``codeagent`` marker says otherwise."""
    settings = jp_server_config["CodeAgent"]
    if "packages" not in settings:
        settings["packages"] = {
            "index_url": served.url,
            "deny": ["evilpkg"],
            "cache_dir": str(served.cache),
        }
    return jp_server_config


async def _call(api: Api, method: str, path: str, body: Any = None, who=ALICE) -> tuple:
    return await api.call(method, path, body, headers=who, request_timeout=240)


async def _idle(api: Api, sid: str, runs: int = 1) -> dict[str, Any]:
    """The session once ``runs`` runs have finished and it is idle (a generous bound)."""
    for _ in range(1200):
        code, detail = await _call(api, "GET", f"sessions/{sid}")
        assert code == 200, detail
        done = of_type(detail["events"], "run_finished")
        if len(done) >= runs and detail["state"] in ("idle", "closed"):
            return detail
        await asyncio.sleep(0.2)
    raise AssertionError(f"session {sid} did not finish: {detail['state']}")


def _printed(events: list[dict[str, Any]]) -> str:
    return "".join(
        "".join(o.get("text", ""))
        for e in of_type(events, "tool_call_finished")
        for o in e["outputs"]
        if o.get("output_type") == "stream"
    )


@pytest.mark.server_app(identity_provider_class=TokenUsers)
async def test_the_owner_installs_between_runs_and_a_resume_reinstalls(
    api: Api, scripted_model: Any, served: Served
) -> None:
    scripted_model.set_script([text("ready")])
    code, session = await _call(api, "POST", "sessions", {"prompt": "wait for me"})
    assert code == 201, session
    assert session["installs"] is True
    sid = session["id"]
    await _idle(api, sid)
    route = f"sessions/{sid}/packages"
    ask = {"packages": ["tinyapp"], "reason": "I want tinyapp for the next step."}

    code, body = await _call(api, "POST", route, ask, who=BOB)
    assert code == 404, body  # someone else's session: as if there were none
    for bad in (["--index-url=http://127.0.0.1:1/simple"], ["tinyapp @ http://x/y.whl"]):
        code, body = await _call(api, "POST", route, {"packages": bad, "reason": "x"})
        assert code == 400 and "\n" not in body["message"], body
    code, body = await _call(api, "POST", route, {"packages": [], "reason": "x"})
    assert code == 400, body
    code, body = await _call(api, "POST", route, {"packages": ["evilpkg"], "reason": "x"})
    assert code == 403 and "deny list" in body["message"], body
    code, body = await _call(api, "POST", route, {"packages": ["onlysrc"], "reason": "x"})
    assert code == 400 and "no wheel of onlysrc" in body["message"], body
    assert not served.marker.exists()

    code, body = await _call(api, "POST", route, ask)
    assert code == 200, body
    assert body["type"] == "packages_installed"
    assert {p["name"] for p in body["packages"]} == {"tinyapp", "tinydep"}
    assert body["reason"] == ask["reason"]
    assert "tinyapp 1.0" in body["summary"]
    code, notebook = await _call(api, "GET", f"sessions/{sid}/notebook")
    recorded = {p["name"]: p for p in notebook["metadata"]["codeagent"]["packages"]}
    assert set(recorded) == {"tinyapp", "tinydep"} and recorded["tinyapp"]["url"]
    assert recorded["tinyapp"]["run"] == 1  # as of the next run: outside every run
    [note] = [c for c in notebook["cells"] if c["metadata"]["codeagent"].get("kind") == "install"]
    assert "tinyapp 1.0" in "".join(note["source"])

    # While a run is going: 409.
    scripted_model.set_script([delay(60, text("slept"))])  # the run waits on the model
    code, _ = await _call(api, "POST", f"sessions/{sid}/messages", {"text": "sleep"})
    assert code == 202
    code, body = await _call(api, "POST", route, {"packages": ["bigpkg"], "reason": "x"})
    assert code == 409 and "running" in body["message"], body
    await _call(api, "POST", f"sessions/{sid}/cancel")
    await _idle(api, sid, runs=2)

    # The model sees it in the same sandbox; then a resume (new sandbox) reinstalls it.
    probe = "import tinyapp, tinydep\nprint('v', tinyapp.__version__, tinydep.__version__)"
    scripted_model.set_script([tool_calls(("run_cell", {"code": probe})), text("here")])
    await _call(api, "POST", f"sessions/{sid}/messages", {"text": "use it"})
    detail = await _idle(api, sid, runs=3)
    assert "v 1.0 1.0\n" in _printed(detail["events"])
    code, _ = await _call(api, "POST", f"sessions/{sid}/pause")
    assert code == 200
    again = "import tinyapp\nprint('again', tinyapp.__version__)"
    scripted_model.set_script([tool_calls(("run_cell", {"code": again})), text("resumed")])
    code, _ = await _call(api, "POST", f"sessions/{sid}/messages", {"text": "go on"})
    assert code == 202
    detail = await _idle(api, sid, runs=4)
    finished = of_type(detail["events"], "run_finished")[-1]
    assert finished["status"] == "answered", finished
    assert "again 1.0\n" in _printed(detail["events"])
    assert json.dumps(detail["restored"]["problems"]) == "[]"


@pytest.mark.codeagent(packages=None)
async def test_installs_off_on_the_server_answer_403(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script([text("ready")])
    code, session = await api.call("POST", "sessions", {"prompt": "hi"}, request_timeout=240)
    assert code == 201, session
    assert session["installs"] is False  # the panel leaves its install section out
    sid = session["id"]
    await _idle_default(api, sid)
    code, body = await api.call(
        "POST", f"sessions/{sid}/packages", {"packages": ["tinyapp"], "reason": "x"}
    )
    assert code == 403 and "installs are off" in body["message"], body


async def _idle_default(api: Api, sid: str) -> None:
    for _ in range(1200):
        detail = await api.ok("GET", f"sessions/{sid}")
        if detail["state"] == "idle" and of_type(detail["events"], "run_finished"):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"session {sid} did not finish")
