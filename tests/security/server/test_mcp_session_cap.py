"""MCP sessions that never call a tool are counted too (issue 31, item 7).

The attack: one user opens 300 MCP sessions on ``/codeagent/mcp`` with plain JSON-RPC
``initialize`` POSTs and never calls a tool. The per-user cap used to apply only at a
session's first tool call, so all 300 stayed open in the SDK's session table. Now each
counts from its ``initialize``: the oldest idle one is closed to make room (as the cap
treats our own sessions), its id answers 404, and the idle reaper culls them like any
other idle session.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from tests.mcp.test_http import INFO, hub_of, raw_post, url_of, wait_for
from tests.security.server.conftest import TokenUsers, as_user

CAP = 3
ATTEMPTS = 300
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": INFO}
ALICE = as_user("alice-token")


async def _initialize(url: str) -> str:
    """A new MCP session that only says hello; its id."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
    reply = await raw_post(url, body, ALICE)
    assert reply.status_code == 200, reply.text
    return reply.headers["mcp-session-id"]


async def _ping(url: str, session_id: str) -> int:
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    headers = {**ALICE, "mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"}
    return (await raw_post(url, body, headers)).status_code


def _open_mcp(serverapp: Any) -> list[Any]:
    return [s for s in hub_of(serverapp).sessions.values() if not s.closed]


def _transports(serverapp: Any) -> int:
    endpoint = serverapp.web_app.settings["codeagent_mcp_endpoint"]
    return len(endpoint.http._server_instances)


@pytest.mark.server_app(identity_provider_class=TokenUsers)
@pytest.mark.codeagent(max_sessions_per_user=CAP)
async def test_initialize_only_sessions_are_held_to_the_cap(
    jp_serverapp: Any, jp_http_port: int, jp_base_url: str, jp_fetch: Any
) -> None:
    url = url_of(jp_http_port, jp_base_url)
    ids = [await _initialize(url) for _ in range(ATTEMPTS)]
    assert len(set(ids)) == ATTEMPTS
    # the oldest closed for room leave the SDK's table as their transports wind down
    assert await wait_for(lambda: _transports(jp_serverapp) <= CAP, 30), _transports(jp_serverapp)
    held = _open_mcp(jp_serverapp)
    assert len(held) <= CAP, f"{len(held)} MCP sessions open for a cap of {CAP}"
    assert len(jp_serverapp.web_app.settings["codeagent_mcp"].sessions) <= CAP
    assert {s.key[1] for s in held} == set(ids[-CAP:])
    assert await _ping(url, ids[0]) == 404  # closed for room: its client starts anew
    assert await _ping(url, ids[-1]) == 200  # the newest is alive


@pytest.mark.server_app(identity_provider_class=TokenUsers)
@pytest.mark.codeagent(idle_timeout=1)
async def test_an_initialize_only_session_is_culled_when_idle(
    jp_serverapp: Any, jp_http_port: int, jp_base_url: str, jp_fetch: Any
) -> None:
    url = url_of(jp_http_port, jp_base_url)
    session_id = await _initialize(url)
    assert len(_open_mcp(jp_serverapp)) == 1
    assert await wait_for(lambda: not hub_of(jp_serverapp).sessions, 30)
    await asyncio.sleep(0)
    assert await _ping(url, session_id) == 404
