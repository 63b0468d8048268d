"""``default: ask`` on the server: the sandbox's request to an unlisted host waits for its
owner's answer over REST, keyed by the host the broker checked.

One real server (alice and bob by token), one session under ``network: policy``, one cell
whose fetches the test answers as they come: once, for the session (then no question),
deny, and no answer until the time limit. An answer about one host never lets another
through; bob cannot answer alice's question; bad bodies are 4xx; the change set lists the
requests; a second session asks again (what one session allowed is that session's only).
Real sandbox, real broker, a real HTTP server on 127.0.0.2; the scripted model is the only
stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.sandbox import bubblewrap
from tests.egress.origin import CSV, files, origin
from tests.scripted_model import text, tool_calls
from tests.security.server.conftest import TokenUsers, as_user
from tests.server.helpers import Api, of_type

ALICE, BOB = as_user("alice-token"), as_user("bob-token")
ASK_TIMEOUT_S = 15  # long enough to answer under a loaded CI, short for the timeout part
HOSTS = ("data.test", "other.test", "third.test", "never.test")


@pytest.fixture
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no network namespace for network: policy")
    with origin(files(tmp_path_factory.mktemp("www"), big_mib=1)) as port:
        yield port


@pytest.fixture
def jp_server_config(jp_server_config: Any, port: int) -> Any:
    jp_server_config["ServerApp"]["identity_provider_class"] = TokenUsers
    settings = jp_server_config["CodeAgent"]
    settings["limits"] = {**settings["limits"], "network": "policy"}
    settings["egress"] = {
        "default": "ask",
        "ports": [port],
        "ask_timeout_s": ASK_TIMEOUT_S,
        "allow_ranges": ["127.0.0.2/32"],  # test-only: the data server's loopback address
        "hosts": {host: "127.0.0.2" for host in HOSTS},
    }
    return jp_server_config


def _fetches(port: int) -> str:
    urls = [f"http://{h}:{port}/data.csv" for h in ("data.test",) * 3 + HOSTS[1:3]]
    return (
        "import urllib.request, urllib.error\n"
        "def get(url):\n"
        "    try:\n"
        "        with urllib.request.urlopen(url, timeout=120) as r:\n"
        "            return r.status, r.read().decode()\n"
        "    except urllib.error.HTTPError as e:\n"
        "        return e.code, e.read().decode()\n"
        f"for url in {urls!r}:\n"
        "    print(repr(get(url)))\n"
    )


async def _answer(api: Api, sid: str, host: str, body: Any, headers: dict[str, str]) -> Any:
    return await api.call("POST", f"sessions/{sid}/approvals/network/{host}", body, headers=headers)


async def test_the_owner_answers_each_host_over_rest(
    api: Api, scripted_model: Any, port: int, tmp_path: Path
) -> None:
    scripted_model.set_script([tool_calls(("run_cell", {"code": _fetches(port)})), text("ok")])
    code, session = await api.call("POST", "sessions", {"prompt": "fetch"}, headers=ALICE)
    assert code == 201, session
    sid = session["id"]
    ws = await api.ws_fetch("codeagent", "api", "sessions", sid, "events", headers=ALICE)
    seen: list[dict[str, Any]] = []

    async def asked() -> dict[str, Any]:
        events = await api.read_until(
            ws, lambda e: e["type"] == "network_approval_requested", timeout=240, into=seen
        )
        return events[-1]

    # 1. data.test once: the question names host, port, method, rule and the time limit
    question = await asked()
    assert (question["host"], question["port"], question["method"]) == ("data.test", port, "GET")
    assert question["rule"] == "default ask" and question["timeout_s"] == ASK_TIMEOUT_S
    code, state = await api.call("GET", f"sessions/{sid}", headers=ALICE)
    assert state["pending_network_approvals"] == ["data.test"]
    # bad bodies and bad answers are 4xx and leave the question waiting
    for raw in ("not json", json.dumps({"approve": "yes"}), json.dumps({"remember": "session"})):
        code, reply = await api.call(
            "POST", f"sessions/{sid}/approvals/network/data.test", raw=raw, headers=ALICE
        )
        assert code == 400, (raw, reply)
    bad = {"approve": True, "remember": "forever"}
    assert (await _answer(api, sid, "data.test", bad, ALICE))[0] == 400
    # bob cannot answer alice's question (her session is not his: 404, as for any route)
    assert (await _answer(api, sid, "data.test", {"approve": True}, BOB))[0] == 404
    # an answer about another host answers nothing: 404 naming that host
    code, reply = await _answer(api, sid, "other.test", {"approve": True}, ALICE)
    assert code == 404 and "other.test" in reply["message"], reply
    code, reply = await _answer(api, sid, "DATA.test", {"approve": True}, ALICE)
    assert code == 200 and reply == {"host": "data.test", "answer": "once", "approved": True}
    # 2. once is not remembered: asked again; this time for the session
    question = await asked()
    assert question["host"] == "data.test"
    body = {"approve": True, "remember": "session"}
    code, reply = await _answer(api, sid, "data.test", body, ALICE)
    assert code == 200 and reply["answer"] == "session" and reply["remember"] == "session"
    # 3. the third fetch of data.test is not asked; other.test is (session answers bind
    #    to their host): denied
    question = await asked()
    assert question["host"] == "other.test"
    code, reply = await _answer(api, sid, "data.test", {"approve": True}, ALICE)
    assert code == 404, reply  # nothing waits for data.test: no answer about it lands here
    assert (await _answer(api, sid, "other.test", {"approve": False}, ALICE))[0] == 200
    # 4. third.test: nobody answers; after the time limit the request is denied
    question = await asked()
    assert question["host"] == "third.test"
    events = await api.read_until(ws, lambda e: e["type"] == "run_finished", timeout=240)
    ws.close()
    seen += events
    code, state = await api.call("GET", f"sessions/{sid}", headers=ALICE)
    assert state["pending_network_approvals"] == [] and state["allowed_hosts"] == ["data.test"]
    late = await _answer(api, sid, "third.test", {"approve": True}, ALICE)
    assert late[0] == 404, late  # an answer after the time limit finds nothing waiting

    decided = [(e["host"], e["answer"]) for e in of_type(seen, "network_approval_decided")]
    assert decided == [
        ("data.test", "once"),
        ("data.test", "session"),
        ("other.test", "deny"),
        ("third.test", "timeout"),
    ]
    printed = "".join(
        "".join(o.get("text", ""))
        for e in of_type(seen, "tool_call_finished")
        for o in e["outputs"]
        if o.get("output_type") == "stream"
    )
    lines = printed.strip().splitlines()
    assert len(lines) == 5, printed
    for line in lines[:3]:
        assert line == repr((200, CSV)), printed
    assert "403" in lines[3] and "denied other.test by the user" in lines[3], printed
    timed_out = f"no answer about third.test within {ASK_TIMEOUT_S} s"
    assert "403" in lines[4] and timed_out in lines[4], printed
    # the change set lists the requests: count, hosts, bytes, denials (API and notebook)
    code, changes = await api.call("GET", f"sessions/{sid}/changes", headers=ALICE)
    assert code == 200 and changes["available"], changes
    network = changes["network"]
    assert (network["requests"], network["refused"]) == (5, 2)
    assert network["hosts"] == ["data.test", "other.test", "third.test"]
    assert network["denied"] == ["other.test", "third.test"]
    assert network["bytes_down"] >= 3 * len(CSV) and network["bytes_up"] > 0
    code, notebook = await api.call("GET", f"sessions/{sid}/notebook", headers=ALICE)
    last = notebook["cells"][-1]
    assert last["metadata"]["codeagent"]["kind"] == "changes"
    assert "Network: 5 requests (2 refused) to data.test, other.test, third.test" in "".join(
        last["source"]
    )
    rules = [(r["url"].split("/")[2], r["rule"]) for r in of_type(seen, "network_request")]
    assert rules == [
        (f"data.test:{port}", "approved data.test once"),
        (f"data.test:{port}", "approved data.test for this session"),
        (f"data.test:{port}", "approved data.test for this session"),
        (f"other.test:{port}", "denied other.test by the user"),
        (f"third.test:{port}", f"default ask: {timed_out}"),
    ]

    # "for this session" is that session's only: a new session of alice's asks again, and
    # an answer sent to the first session does not reach the second's question
    fetch = f"import urllib.request; urllib.request.urlopen('http://data.test:{port}/data.csv')"
    scripted_model.set_script([tool_calls(("run_cell", {"code": fetch})), text("ok")])
    code, second = await api.call("POST", "sessions", {"prompt": "again"}, headers=ALICE)
    assert code == 201, second
    ws = await api.ws_fetch("codeagent", "api", "sessions", second["id"], "events", headers=ALICE)
    events = await api.read_until(
        ws, lambda e: e["type"] == "network_approval_requested", timeout=240
    )
    assert events[-1]["host"] == "data.test"
    assert (await _answer(api, sid, "data.test", {"approve": True}, ALICE))[0] == 404
    assert (await _answer(api, second["id"], "data.test", {"approve": True}, ALICE))[0] == 200
    events = await api.read_until(ws, lambda e: e["type"] == "run_finished", timeout=240)
    ws.close()
    assert [r["rule"] for r in of_type(events, "network_request")] == ["approved data.test once"]
