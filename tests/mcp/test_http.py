"""``/codeagent/mcp``: the SDK's own client over streamable HTTP against a real Jupyter
server, authenticated with Jupyter tokens (one user per token)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import nbformat
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from tests.security.server.conftest import TokenUsers, as_user

users = pytest.mark.server_app(identity_provider_class=TokenUsers)
pooled = pytest.mark.codeagent(pool_size=1)  # the isolation is known from the pool
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
INFO = {"name": "raw", "version": "1"}


def url_of(port: int, base_url: str) -> str:
    """The endpoint; the tests take ``jp_fetch`` too, which starts the server listening."""
    return f"http://127.0.0.1:{port}{base_url}codeagent/mcp"


def client(url: str, token: str, name: str = "http-agent", mode: str = "legacy") -> Client:
    http = httpx2.AsyncClient(headers=as_user(token), timeout=120)
    transport = streamable_http_client(url, http_client=http)
    info = Implementation(name=name, version="0.9")
    return Client(transport, client_info=info, mode=mode, read_timeout_seconds=120)


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def value_of(result) -> str:
    """A cell's output without the ``[ran 0.01 s]`` line every cell result ends with."""
    body, ran, _ = text_of(result).rpartition("\n[ran ")
    assert ran, text_of(result)
    return body.strip()


def hub_of(serverapp: Any) -> Any:
    return serverapp.web_app.settings["codeagent_mcp"]


async def raw_post(url: str, body: dict, headers: dict[str, str]) -> httpx2.Response:
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(url, content=json.dumps(body), headers={**accept, **headers})


async def sessions_of(url: str, token: str) -> list[dict[str, Any]]:
    """The user's sessions, as the panel lists them (``GET /codeagent/api/sessions``)."""
    async with httpx2.AsyncClient(timeout=60) as http:
        response = await http.get(url.replace("/mcp", "/api/sessions"), headers=as_user(token))
    assert response.status_code == 200, response.text
    return response.json()


@users
@pooled
async def test_each_session_its_sandbox_and_no_one_elses(
    jp_serverapp, jp_http_port, jp_base_url, jp_fetch
):
    url = url_of(jp_http_port, jp_base_url)
    hub = hub_of(jp_serverapp)
    nobody = await raw_post(url, {**CALL, "params": {"name": "run_cell"}}, {})
    assert nobody.status_code in (401, 403)
    stranger = await raw_post(url, {**CALL, "params": {}}, as_user("mallory-token"))
    assert stranger.status_code in (401, 403)

    async with client(url, "alice-token") as alice, client(url, "bob-token", "other") as bob:
        assert alice.instructions is not None and "sandbox:" in alice.instructions
        assert "net off" in alice.instructions  # the isolation in force
        names = {t.name for t in (await alice.list_tools()).tools}
        assert {"run_cell", "run_command", "read_file", "write_file"} <= names
        await alice.call_tool("run_cell", {"code": "x = 41"})
        assert value_of(await alice.call_tool("run_cell", {"code": "x + 1"})) == "42"
        failed = await alice.call_tool("run_cell", {"code": "raise ValueError('bad input')"})
        assert failed.is_error and "ValueError: bad input" in text_of(failed)
        plot = "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"
        shown = await alice.call_tool("run_cell", {"code": plot})
        assert [b.mime_type for b in shown.content if b.type == "image"] == ["image/png"]
        seen = await bob.call_tool("run_cell", {"code": "print(x)"})
        assert seen.is_error and "NameError" in text_of(seen)  # a sandbox of his own

        (alice_key,) = [k for k in hub.sessions if k[0] == "alice"]
        mine = hub.sessions[alice_key]
        assert mine.acquire_s is not None and mine.sandbox is not None
        taken = await raw_post(
            url,
            {**CALL, "params": {"name": "run_cell", "arguments": {"code": "x"}}},
            {**as_user("bob-token"), "Mcp-Session-Id": alice_key[1]},
        )
        assert taken.status_code == 404 and "41" not in taken.text

        listed = await sessions_of(url, "alice-token")
        assert mine.id in [s["id"] for s in listed if s.get("kind") == "mcp"]
        assert mine.id not in [s["id"] for s in await sessions_of(url, "bob-token")]

    # the client's DELETE ends the session: its kernel goes
    assert await wait_for(lambda: mine.closed and mine.sandbox is None)
    nb = nbformat.read(mine.path, as_version=4)
    nbformat.validate(nb)
    assert "http-agent 0.9" in nb.metadata["codeagent"]["model"]
    assert [c.source for c in nb.cells if c.cell_type == "code"][:2] == ["x = 41", "x + 1"]


@users
@pooled
async def test_calls_keep_their_connection_alive(
    jp_serverapp, jp_http_port, jp_base_url, jp_fetch, caplog
):
    """A call's reply is one JSON body the client reads to its end, so the SDK's client
    sends its next call on the same connection (an SSE reply, which the client stops
    reading at its result, cost a new TCP connection per call)."""
    url = url_of(jp_http_port, jp_base_url)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": INFO}
    first = await raw_post(
        url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        as_user("alice-token"),
    )  # fmt: skip
    assert first.status_code == 200, first.text
    assert first.headers["content-type"].startswith("application/json")
    assert int(first.headers["content-length"]) == len(first.content)

    caplog.set_level(logging.DEBUG, logger="httpcore2.connection")
    calls = 6
    async with client(url, "alice-token") as alice:
        for i in range(calls):
            assert value_of(await alice.call_tool("run_cell", {"code": f"{i}+1"})) == str(i + 1)
    connects = [r for r in caplog.records if "connect_tcp.complete" in r.getMessage()]
    assert connects, "the client's connections were not seen"
    assert len(connects) <= 3, f"{len(connects)} connections for {calls} calls"


async def wait_for(check: Any, timeout: float = 60.0) -> bool:
    for _ in range(int(timeout * 10)):
        if check():
            return True
        await asyncio.sleep(0.1)
    return check()


@users
@pytest.mark.codeagent(max_sessions_per_user=1)
async def test_the_cap_closes_the_oldest_idle_mcp_session(
    jp_serverapp, jp_http_port, jp_base_url, jp_fetch
):
    url = url_of(jp_http_port, jp_base_url)
    hub = hub_of(jp_serverapp)
    async with client(url, "alice-token", "first") as first:
        await first.call_tool("run_cell", {"code": "1"})
        (older,) = hub.sessions.values()
        async with client(url, "alice-token", "second") as second:
            done = await second.call_tool("run_cell", {"code": "2 + 2"})
            assert value_of(done) == "4"
            assert older.closed and older.closed_reason == "session_cap"
            assert await wait_for(lambda: older.sandbox is None)  # its kernel is shut down
            open_now = [s for s in hub.sessions.values() if not s.closed]
            assert len(open_now) == 1 and open_now[0] is not older
        with pytest.raises(Exception):  # noqa: B017  its id now answers 404: start anew
            await first.call_tool("run_cell", {"code": "1"})


@users
@pytest.mark.codeagent(idle_timeout=1)
async def test_an_idle_mcp_session_is_culled(jp_serverapp, jp_http_port, jp_base_url, jp_fetch):
    url = url_of(jp_http_port, jp_base_url)
    hub = hub_of(jp_serverapp)
    async with client(url, "alice-token") as alice:
        await alice.call_tool("run_cell", {"code": "y = 1"})
        (session,) = hub.sessions.values()
        assert await wait_for(lambda: session.closed and session.sandbox is None)
        assert session.closed_reason == "idle_timeout" and session.sandbox is None
    meta = nbformat.read(session.path, as_version=4).metadata["codeagent"]
    assert meta["runs"][0]["reason"] == "idle"


@users
async def test_the_sessionless_protocol_gets_a_sandbox_per_client(
    jp_serverapp, jp_http_port, jp_base_url, jp_fetch
):
    url = url_of(jp_http_port, jp_base_url)
    async with client(url, "alice-token", "modern", mode="auto") as alice:
        await alice.call_tool("run_cell", {"code": "z = 5"})
        again = await alice.call_tool("run_cell", {"code": "z * 2"})
        assert value_of(again) == "10"
    keys = list(hub_of(jp_serverapp).sessions)
    assert keys == [("alice", "client:modern 0.9")]


@users
async def test_without_a_pool_the_isolation_is_told_once_the_first_sandbox_has_started(
    jp_serverapp, jp_http_port, jp_base_url, jp_fetch, caplog
):
    """No warm pool: the server knows what its sandboxes enforce only once one has
    started; its first line says so, and the real isolation follows in the log and in the
    next client's ``initialize``."""
    caplog.set_level(logging.INFO)
    url = url_of(jp_http_port, jp_base_url)

    def said() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.getMessage().startswith("codeagent: MCP at /codeagent/mcp:")
        ]

    async with client(url, "alice-token") as first:
        assert first.instructions is not None and "not started" in first.instructions
        assert value_of(await first.call_tool("run_cell", {"code": "6 * 7"})) == "42"
    async with client(url, "bob-token", "second") as second:
        assert second.instructions is not None and "net off" in second.instructions
        assert "not started" not in second.instructions
    lines = said()
    assert len(lines) == 2, lines
    assert "not started" in lines[0] and "net off" in lines[1]
