"""``c.CodeAgent.limits = {"network": "policy"}`` with ``c.CodeAgent.egress``: a session's
sandbox reaches an allowed host through its broker and a denied one gets 403, and both
requests arrive as ``network_request`` events on the session's stream (real server, real
sandbox, a real HTTP server on 127.0.0.2, the scripted model)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.sandbox import bubblewrap
from tests.egress.origin import CSV, files, origin
from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api, of_type


@pytest.fixture
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no network namespace for network: policy")
    with origin(files(tmp_path_factory.mktemp("www"), big_mib=1)) as port:
        yield port


@pytest.fixture
def jp_server_config(jp_server_config: Any, port: int) -> Any:
    settings = jp_server_config["CodeAgent"]
    settings["limits"] = {**settings["limits"], "network": "policy"}
    settings["egress"] = {
        "allow": ["data.test"],
        "default": "deny",
        "ports": [port],
        "allow_ranges": ["127.0.0.2/32"],  # test-only: the data server's loopback address
        "hosts": {"data.test": "127.0.0.2", "other.test": "127.0.0.2"},
    }
    return jp_server_config


async def test_a_session_fetches_through_the_policy_and_the_stream_records_it(
    api: Api, scripted_model: Any, port: int, tmp_path: Path
) -> None:
    code = (
        "import urllib.request, urllib.error\n"
        f"print(urllib.request.urlopen('http://data.test:{port}/data.csv').read().decode())\n"
        "try:\n"
        f"    urllib.request.urlopen('http://other.test:{port}/data.csv')\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code, e.read().decode())\n"
    )
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("done")])
    code_, session = await api.call("POST", "sessions", {"prompt": "fetch"}, request_timeout=240)
    assert code_ == 201, session
    events = await api.run_to_end(session["id"])
    assert events[-1]["status"] == "answered"
    printed = "".join(
        "".join(o.get("text", ""))
        for e in of_type(events, "tool_call_finished")
        for o in e["outputs"]
        if o.get("output_type") == "stream"
    )
    assert CSV in printed and "403 codeagent egress broker: 403 default deny" in printed
    requests = of_type(events, "network_request")
    requests.sort(key=lambda r: r["url"])  # records come as requests end: any order
    assert [(r["url"], r["status"], r["allowed"]) for r in requests] == [
        (f"http://data.test:{port}/data.csv", 200, True),
        (f"http://other.test:{port}/data.csv", 403, False),
    ]
    assert requests[0]["rule"] == "allow data.test" and len(requests[0]["sha256"]) == 64


async def test_a_fork_reruns_its_fetches_from_the_owners_store(
    api: Api, scripted_model: Any, port: int, jp_data_dir: Path
) -> None:
    """The body goes into the owner's store (by digest); a fork's cells fetch from the
    recording (the refusal too, word for word), then the new run reaches the network live."""
    url = f"http://data.test:{port}/data.csv"
    code = (
        "import urllib.request, urllib.error\n"
        f"text = urllib.request.urlopen('{url}').read().decode()\n"
        "try:\n"
        f"    urllib.request.urlopen('http://other.test:{port}/data.csv')\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code)\n"
    )
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("done")])
    sid = (await api.start("fetch"))["id"]
    first = of_type(await api.run_to_end(sid), "network_request")
    first.sort(key=lambda r: r["url"])  # data.test before other.test; they come as they end
    digest = first[0]["sha256"]
    assert first[0]["stored"] is True and first[1]["stored"] is False
    [kept] = (jp_data_dir / "codeagent" / "fetched" / "users").glob(f"*/{digest}")
    assert kept.read_text() == CSV
    health = await api.ok("GET", "health")
    assert health["snapshots"]["fetched_bytes"] == len(CSV)  # inside the owner's quota

    again = f"print(text == urllib.request.urlopen('{url}').read().decode())"
    scripted_model.set_script([tool_calls(("run_cell", {"code": again})), text("ok")])
    fork = await api.ok("POST", f"sessions/{sid}/fork", {"prompt": "again"}, 201)
    events = await api.run_to_end(fork["id"])
    rules = [e["rule"] for e in of_type(events, "network_request")][-3:]
    assert sorted(rules[:2]) == ["replayed from the recording", "replayed refusal: default deny"]
    assert rules[2] == "allow data.test"  # the new run: live, under the policy
    assert "True" in "".join(
        "".join(o.get("text", ""))
        for e in of_type(events, "tool_call_finished")
        for o in e["outputs"]
    )
