"""The panel under ``network: policy`` with ``default: ask``: the card asks about the host
the sandbox wants, its buttons answer the server, the "Network" section lists the requests.

And the attack on it, run for real: the sandbox's requests carry markup in their URL (an
allowed host, so they are recorded and shown) and in a host name sent raw to its proxy. The
section shows the URL as text; the host never reaches a card (the broker's host syntax
refuses it before anyone is asked). Real server, real sandbox and broker, a real HTTP server
on 127.0.0.2; the scripted model is the only stand-in.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from traitlets.config import Config

from codeagent_jupyter.sandbox import bubblewrap
from codeagent_jupyter.widget.actions import Inserter
from codeagent_jupyter.widget.client import AgentClient
from codeagent_jupyter.widget.panel import AgentPanel
from tests.egress.origin import files, origin
from tests.scripted_model import text, tool_calls
from tests.widget.test_panel import until

PAYLOAD = "<img src=x onerror=alert(1)>"


@pytest.fixture
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no network namespace for network: policy")
    with origin(files(tmp_path_factory.mktemp("www"), big_mib=1)) as port:
        yield port


@pytest.fixture
def jp_server_config(jp_server_config: Config, port: int) -> Config:
    settings = jp_server_config["CodeAgent"]
    settings["limits"] = {**settings["limits"], "network": "policy"}
    settings["egress"] = {
        "default": "ask",
        "ports": [port],
        "ask_timeout_s": 120,
        "allow_ranges": ["127.0.0.2/32"],  # test-only: the data server's loopback address
        "hosts": {"data.test": "127.0.0.2"},
    }
    return jp_server_config


def _code(port: int) -> str:
    return (
        "import socket, urllib.request, urllib.error\n"
        "def get(url):\n"
        "    try:\n"
        "        with urllib.request.urlopen(url, timeout=120) as r:\n"
        "            return r.status, len(r.read())\n"
        "    except urllib.error.HTTPError as e:\n"
        "        return e.code, e.read().decode()\n"
        f"print(get('http://data.test:{port}/data.csv'))\n"
        f"print(get('http://data.test:{port}/x?q=' + {PAYLOAD!r}.replace(' ', '%20')))\n"
        "s = socket.create_connection(('127.0.0.1', 3128))\n"
        f"s.sendall(b'GET http://{PAYLOAD.replace(' ', '')}.test:{port}/ HTTP/1.1\\r\\n"
        f"Host: {PAYLOAD.replace(' ', '')}.test:{port}\\r\\n\\r\\n')\n"
        "print(s.recv(200).decode().splitlines()[0])\n"
    )


def test_the_card_asks_and_the_section_lists(
    run: Any, client: AgentClient, scripted_model: Any, port: int
) -> None:
    run(_card_and_section(client, scripted_model, port))


async def _card_and_section(client: AgentClient, scripted_model: Any, port: int) -> None:
    scripted_model.set_script([tool_calls(("run_cell", {"code": _code(port)})), text("done")])
    panel = AgentPanel(client, inserter=Inserter(None, None))
    panel.prompt.value = "fetch"
    panel.send.click()
    card = panel.header.network
    await until(lambda: card.widget.layout.display == "", timeout=240)
    assert card.host == "data.test"
    assert "<code>data.test</code>" in card.html.value and "GET to port" in card.html.value
    card.session.click()  # allowed for the session: the second fetch is not asked

    await until(lambda: panel.state.status == "answered", timeout=240)
    assert card.widget.layout.display == "none"
    network = panel.state.network
    assert network.answers == (("data.test", "session"),)
    # recorded as each request ends: a refusal at once, an allowed GET after its body, so the
    # raw request may be listed before the 404 it followed
    assert sorted((r.status, r.allowed) for r in network.rows) == [
        (200, True),
        (400, False),
        (404, True),
    ]
    assert network.refused == 1 and network.hosts[0] == "data.test"
    section = card.table.value
    assert "&lt;img" in section and "<img" not in section  # the URL is text, clipped
    assert card.section.layout.display == "" and "3 request(s), 1 refused" in (
        card.section.get_title(0)
    )
    printed = str([c.outputs for c in panel.state.cells])
    assert "400" in printed  # the raw request with markup for a host: refused, never asked
    summary = await client.session(panel.session_id)
    assert summary["allowed_hosts"] == ["data.test"]
    asked = [e for e in summary["events"] if e["type"] == "network_approval_requested"]
    assert [e["host"] for e in asked] == ["data.test"]
    panel.close()
