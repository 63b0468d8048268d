"""The broker on its own: a real unix socket, a real origin on 127.0.0.2, raw requests.

What needs no sandbox is tested here, fast: slow clients, the rate, the session budget,
the connection cap, methods. ``test_rules.py`` has the refusals that need no socket.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from codeagent_jupyter.egress import EgressPolicy
from codeagent_jupyter.egress.broker import Broker
from tests.egress.origin import CSV, files, origin

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with origin(files(tmp_path_factory.mktemp("www"), big_mib=1)) as port:
        yield port


def _policy(port: int, **more: Any) -> EgressPolicy:
    return EgressPolicy.from_dict(
        {
            "allow": ["data.test"],
            "default": "deny",
            "ports": [port],
            "allow_ranges": ["127.0.0.2/32"],
            "hosts": {"data.test": "127.0.0.2"},
            **more,
        }
    )


@pytest_asyncio.fixture(loop_scope="module")
async def broker(
    tmp_path: Path, port: int, request: pytest.FixtureRequest
) -> AsyncIterator[Broker]:
    marker = request.node.get_closest_marker("broker_options")
    options = dict(marker.kwargs) if marker else {}
    timeouts = {k: options.pop(k) for k in ("head_timeout", "max_connections") if k in options}
    broker = Broker(_policy(port, **options), tmp_path / "b.sock", **timeouts)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.close()


async def _ask(broker: Broker, data: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(broker.path))
    writer.write(data)
    await writer.drain()
    out = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    return out


def _get(port: int, path: str = "/data.csv", host: str = "data.test") -> bytes:
    return f"GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()


async def test_an_allowed_get_is_relayed_and_recorded(broker: Broker, port: int) -> None:
    out = await _ask(broker, _get(port))
    assert out.startswith(b"HTTP/1.0 200") and out.endswith(CSV.encode())
    [rec] = broker.records
    assert rec["rule"] == "allow data.test" and rec["allowed"] and rec["status"] == 200


async def test_the_socket_is_for_its_owner_only(broker: Broker) -> None:
    assert broker.path.stat().st_mode & 0o777 == 0o600


@pytest.mark.broker_options(head_timeout=1)
async def test_a_slow_client_is_answered_408(broker: Broker, port: int) -> None:
    reader, writer = await asyncio.open_unix_connection(str(broker.path))
    writer.write(f"GET http://data.test:{port}/ HTTP/1.1\r\n".encode())  # and then nothing
    out = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    assert out.startswith(b"HTTP/1.1 408") and b"not sent in time" in out
    assert broker.records[-1]["status"] == 408


@pytest.mark.broker_options(rate_per_minute=2)
async def test_the_rate_is_capped(broker: Broker, port: int) -> None:
    answers = [await _ask(broker, _get(port)) for _ in range(3)]
    assert [a[:12] for a in answers] == [b"HTTP/1.0 200", b"HTTP/1.0 200", b"HTTP/1.1 429"]
    assert b"rate_per_minute 2" in answers[-1]


@pytest.mark.broker_options(max_session_mb=0.5)
async def test_the_session_budget_is_spent_then_refused(broker: Broker, port: int) -> None:
    first = await _ask(broker, _get(port, "/big.bin"))
    assert len(first) < 1024 * 1024
    second = await _ask(broker, _get(port))
    assert second.startswith(b"HTTP/1.1 403") and b"max_session_mb 0.5 used up" in second


@pytest.mark.broker_options(max_connections=1, head_timeout=5)
async def test_connections_beyond_the_cap_get_503(broker: Broker, port: int) -> None:
    _reader, writer = await asyncio.open_unix_connection(str(broker.path))
    writer.write(b"GET ")  # holds the one slot
    await writer.drain()
    await asyncio.sleep(0.2)
    out = await _ask(broker, _get(port))
    writer.close()
    assert out.startswith(b"HTTP/1.1 503")


@pytest.mark.broker_options(methods=["GET", "HEAD"])
async def test_methods_outside_the_list_are_refused(broker: Broker, port: int) -> None:
    body = b"x=1"
    request = (
        f"POST http://data.test:{port}/ HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    out = await _ask(broker, request + body)
    assert out.startswith(b"HTTP/1.1 403") and b"methods GET, HEAD" in out
    out = await _ask(broker, f"CONNECT data.test:{port} HTTP/1.1\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 403")  # a tunnel's method cannot be seen: no CONNECT


async def test_answers_bind_to_the_host_asked_about(tmp_path: Path, port: int) -> None:
    """``default: ask``: the approver is asked by host; "session" is remembered for that
    host only, "once" is not, "deny" refuses; with no approver nobody is asked."""
    asked: list[str] = []
    answers = {"data.test": "session", "once.test": "once", "no.test": "deny"}

    async def approve(host: str, **_: object) -> str | None:
        asked.append(host)
        return answers.get(host)

    pinned = {name: "127.0.0.2" for name in answers}
    policy = EgressPolicy.from_dict(
        {"ports": [port], "allow_ranges": ["127.0.0.2/32"], "hosts": pinned}
    )
    broker = Broker(policy, tmp_path / "a.sock", approve=approve)
    await broker.start()
    try:
        for host in ("data.test", "data.test", "once.test", "once.test", "no.test", "no.test"):
            await _ask(broker, _get(port, host=host))
    finally:
        await broker.close()
    assert asked == ["data.test", "once.test", "once.test", "no.test"]
    rules = [r["rule"] for r in broker.records]
    assert rules == [
        "approved data.test for this session",
        "approved data.test for this session",
        "approved once.test once",
        "approved once.test once",
        "denied no.test by the user",
        "denied no.test by the user",
    ]
    assert [r["status"] for r in broker.records] == [200, 200, 200, 200, 403, 403]


class _Rebinding(dict):  # type: ignore[type-arg]
    """A name whose first answer is public and every later one our origin on loopback: what
    a DNS rebinding server does between a proxy's check and its connect."""

    def __init__(self) -> None:
        super().__init__({"rebind.test": ""})
        self.lookups = 0

    def __getitem__(self, name: str) -> str:
        self.lookups += 1
        return "93.184.216.34" if self.lookups == 1 else "127.0.0.2"


async def test_a_name_is_resolved_once_and_the_checked_address_is_used(
    tmp_path: Path, port: int
) -> None:
    hosts = _Rebinding()
    policy = EgressPolicy(allow=("rebind.test",), ports=(port,), hosts=hosts)
    broker = Broker(policy, tmp_path / "r.sock", connect_timeout=3)
    await broker.start()
    try:
        out = await _ask(broker, _get(port, host="rebind.test"))
    finally:
        await broker.close()
    assert hosts.lookups == 1
    assert CSV.encode() not in out and out.startswith(b"HTTP/1.1 502"), out
    assert b"cannot connect to rebind.test" in out


@pytest.mark.parametrize("cap_mb", [None, 1.5])
async def test_a_large_body_is_recorded_by_the_digest_of_what_was_sent(
    tmp_path: Path, cap_mb: float | None
) -> None:
    """Each chunk is hashed after it is sent: in order, every byte, and only the bytes
    the client got when the body is cut at ``max_response_mb``."""
    body = os.urandom(5 * 1024 * 1024 + 12345)  # many chunks, none alike
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "random.bin").write_bytes(body)
    with origin(tmp_path / "www") as port:
        more = {} if cap_mb is None else {"max_response_mb": cap_mb}
        broker = Broker(_policy(port, **more), tmp_path / "b.sock")
        await broker.start()
        try:
            out = await _ask(broker, _get(port, "/random.bin"))
        finally:
            await broker.close()
    got = out.partition(b"\r\n\r\n")[2]
    [rec] = broker.records
    assert got == (body if cap_mb is None else body[: int(cap_mb * 1024 * 1024)])
    assert rec["sha256"] == hashlib.sha256(got).hexdigest() and rec["bytes_down"] > len(got)
