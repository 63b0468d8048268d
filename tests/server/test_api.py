"""The HTTP surface: authentication and authorization, input errors, model and limit policy."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from jupyter_server.auth import Authorizer
from tornado.httpclient import HTTPClientError

from tests.scripted_model import text, tool_calls
from tests.server.helpers import SECRET, Api

ROUTES = [
    ("GET", "health"),
    ("POST", "warm"),
    ("GET", "sessions"),
    ("POST", "sessions"),
    ("GET", "sessions/abc"),
    ("DELETE", "sessions/abc"),
    ("POST", "sessions/abc/messages"),
    ("POST", "sessions/abc/cancel"),
    ("POST", "sessions/abc/approvals/call_1"),
    ("POST", "sessions/abc/cells/call_1/accept"),
    ("POST", "sessions/abc/cells/call_1/reject"),
    ("GET", "sessions/abc/notebook"),
]


class NoAgentAuthorizer(Authorizer):
    """Allows everything except the agent's own resource."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return resource != "codeagent"


async def _ws_status(api: Api, **kw: Any) -> int:
    with pytest.raises(HTTPClientError) as info:
        await api.ws_fetch("codeagent", "api", "sessions", "abc", "events", **kw)
    return info.value.code


async def test_no_token_is_refused_on_every_route(api: Api) -> None:
    no_token = {"Authorization": ""}
    for method, path in ROUTES:
        code, body = await api.call(method, path, {"prompt": "x"}, headers=no_token)
        assert code == 403, f"{method} {path} without a token answered {code}: {body}"
    assert await _ws_status(api, headers=no_token) == 403


@pytest.mark.server_app(authorizer_class=NoAgentAuthorizer)
async def test_authorizer_is_asked_for_the_codeagent_resource(api: Api, jp_fetch: Any) -> None:
    response = await jp_fetch("api", "status")  # the server itself is still allowed
    assert response.code == 200
    for method, path in ROUTES:
        code, _ = await api.call(method, path, {"prompt": "x"})
        assert code == 403, f"{method} {path} was not authorized against 'codeagent'"
    assert await _ws_status(api) == 403


async def test_bad_input_and_unknown_ids(api: Api, scripted_model: Any, jp_root_dir: Any) -> None:
    for raw, why in [
        ("{not json", "Invalid JSON"),
        ("[1, 2]", "JSON object"),
        ("{}", "missing field: prompt"),
        ('{"prompt": ""}', "must not be empty"),
        ('{"prompt": 3}', "wrong type"),
        ('{"prompt": "x", "colour": "red"}', "unknown field(s): colour"),
        ('{"prompt": "x", "limits": {"memory_mb": -1}}', "positive"),
        ('{"prompt": "x", "limits": {"gpus": 1}}', "unknown limit"),
        ('{"prompt": "x", "notebook_path": "../outside.ipynb"}', "outside the server root"),
        ('{"prompt": "x", "notebook_path": "notes.txt"}', "not a .ipynb"),
        ('{"prompt": "x", "max_steps": 0}', "max_steps must be between 1 and"),
        ('{"prompt": "x", "max_steps": 100000}', "max_steps must be between 1 and"),
        ('{"prompt": "x", "title": 3}', "wrong type"),
        ('{"prompt": "x", "title": "%s"}' % ("t" * 201), "title"),
    ]:
        code, body = await api.call("POST", "sessions", raw=raw)
        assert code == 400, f"{raw!r} answered {code}: {body}"
        assert why in body["message"], body
    code, body = await api.call("POST", "sessions", {"prompt": "x", "notebook_path": "nope.ipynb"})
    assert code == 404, body

    for method, path in ROUTES[4:]:
        code, body = await api.call(method, path, {"text": "x", "approve": True})
        assert code == 404, f"{method} {path} answered {code}"
        assert body["message"] == "no session abc"
    assert await _ws_status(api) == 404

    # Unknown ids inside a real session; bad bodies on its routes.
    scripted_model.set_script([tool_calls(("run_cell", {"code": "1 + 1"})), text("2")])
    session = await api.start("add")
    sid = session["id"]
    await api.run_to_end(sid)
    code, body = await api.call("POST", f"sessions/{sid}/cells/call_x/accept")
    assert (code, body["message"]) == (404, f"session {sid} has no cell call_x")
    code, body = await api.call("POST", f"sessions/{sid}/approvals/call_x", {"approve": True})
    assert (code, body["message"]) == (404, "no approval is waiting for tool call call_x")
    code, body = await api.call("POST", f"sessions/{sid}/approvals/call_x", {"approve": "yes"})
    assert code == 400
    code, body = await api.call("POST", f"sessions/{sid}/messages", raw="{oops")
    assert code == 400
    code, body = await api.call("POST", f"sessions/{sid}/messages", {})
    assert (code, body["message"]) == (400, "missing field: text")
    with pytest.raises(HTTPClientError) as info:
        await api.connect(sid, since=-1)
    assert info.value.code == 400


@pytest.mark.codeagent(allowed_models=["scripted-large"], limits={"memory_mb": 1024})
async def test_allowed_models_and_limit_ceilings(api: Api, scripted_model: Any) -> None:
    code, body = await api.call("POST", "sessions", {"prompt": "x", "model": "gpt-other"})
    assert code == 403
    assert body["message"] == "model 'gpt-other' is not allowed on this server"
    code, body = await api.call("POST", "sessions", {"prompt": "x", "limits": {"memory_mb": 4096}})
    assert code == 400
    assert "memory_mb" in body["message"]
    code, body = await api.call("POST", "sessions", {"prompt": "x", "limits": {"network": True}})
    assert code == 400
    assert len(scripted_model.requests) == 0  # nothing reached the model

    scripted_model.set_script([text("hello")])
    session = await api.start("hi", model="scripted-large", limits={"cell_timeout": 5})
    assert session["model"] == "scripted-large"
    events = await api.run_to_end(session["id"])
    started = events[0]
    assert started["type"] == "run_started"
    assert started["model"] == "scripted-large"
    assert started["limits"]["cell_timeout"] == 5
    assert started["limits"]["memory_mb"] == 1024
    assert scripted_model.requests[-1]["model"] == "scripted-large"
    assert scripted_model.headers[-1]["authorization"] == f"Bearer {SECRET}"

    health = await api.ok("GET", "health")
    assert health["model"]["name"] == "scripted"
    assert health["model"]["allowed_models"] == ["scripted-large"]
    assert health["model"]["api_key_configured"] is True
    assert isinstance(health["sandbox"]["enforcement"], dict)
    assert SECRET not in json.dumps(health)
    notebook = await api.ok("GET", f"sessions/{session['id']}/notebook")
    nbformat.validate(nbformat.from_dict(notebook))
    assert SECRET not in json.dumps(notebook)


@pytest.mark.codeagent(model=None)
async def test_no_model_configured(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEAGENT_MODEL", raising=False)
    code, body = await api.call("POST", "sessions", {"prompt": "x"})
    assert code == 503
    assert body["message"].startswith("no model configured: set c.CodeAgent.model")
    health = await api.ok("GET", "health")
    assert health["model"]["configured"] is False
