"""The content store and the replaying broker: a real unix socket, a real origin on
127.0.0.2, raw requests; hostile recordings (an edited store, a digest that is a path)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.egress import EgressPolicy
from codeagent_jupyter.egress.bodies import BodyStore
from codeagent_jupyter.egress.broker import Broker
from codeagent_jupyter.egress.replay import Recording
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


async def _ask(path: Path, data: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(data)
    await writer.drain()
    out = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    return out


def _get(port: int, path: str = "/data.csv", method: str = "GET") -> bytes:
    target = f"data.test:{port}" if method == "CONNECT" else f"http://data.test:{port}{path}"
    return f"{method} {target} HTTP/1.1\r\nHost: data.test:{port}\r\n\r\n".encode()


async def _record(tmp_path: Path, port: int, requests: list[bytes], **policy: Any) -> tuple:
    """Run ``requests`` through a recording broker; its records, answers and store."""
    store = BodyStore(tmp_path / "fetched", int(policy.pop("store_mib", 16) * 1024 * 1024))
    broker = Broker(_policy(port, **policy), tmp_path / "rec.sock", bodies=store, idle_timeout=2)
    await broker.start()
    try:
        answers = [await _ask(broker.path, r) for r in requests]
    finally:
        await broker.close()
    return list(broker.records), answers, store


async def _replay(tmp_path: Path, port: int, recording: Recording, request: bytes) -> bytes:
    # A policy that would allow the origin: only the recording keeps the network out.
    broker = Broker(_policy(port), tmp_path / "play.sock", replay=recording)
    await broker.start()
    try:
        return await _ask(broker.path, request)
    finally:
        await broker.close()


async def test_a_get_body_is_stored_by_its_digest_and_replayed_byte_identical(
    tmp_path: Path, port: int
) -> None:
    records, [live], store = await _record(tmp_path, port, [_get(port)])
    [record] = records
    assert record["stored"] is True
    assert (store.root / record["sha256"]).read_text() == CSV
    assert ["content-type", "text/csv"] in record["headers"]
    assert [p.name for p in store.root.iterdir()] == [record["sha256"]]  # no temp file left
    recording = Recording(records, store)
    played = await _replay(tmp_path, port, recording, _get(port))
    assert played.split(b"\r\n\r\n", 1)[1] == live.split(b"\r\n\r\n", 1)[1] == CSV.encode()
    assert played.startswith(b"HTTP/1.1 200 OK\r\n") and b"text/csv" in played
    # Asked again: the recording held one, so the second is not in it, and no network is used.
    again = await _replay(tmp_path, port, recording, _get(port))
    assert again.startswith(b"HTTP/1.1 502")
    assert f"not in the recording: GET http://data.test:{port}/data.csv".encode() in again
    assert recording.served == 1 and len(recording.missed) == 1


async def test_a_body_over_the_store_cap_is_recorded_as_not_stored(
    tmp_path: Path, port: int
) -> None:
    records, [live], store = await _record(tmp_path, port, [_get(port, "/big.bin")], store_mib=0.5)
    assert len(live) > 1024 * 1024  # the sandbox got it all the same
    assert records[0]["stored"] is False and records[0]["sha256"]
    assert not any(store.root.iterdir())
    played = await _replay(tmp_path, port, Recording(records, store), _get(port, "/big.bin"))
    assert b"502" in played.split(b"\r\n")[0]
    assert b"(its body was not stored)" in played


async def test_an_edited_store_is_refused_not_served(tmp_path: Path, port: int) -> None:
    records, _, store = await _record(tmp_path, port, [_get(port)])
    (store.root / records[0]["sha256"]).write_text("city,sales\nOslo,999999\n")
    played = await _replay(tmp_path, port, Recording(records, store), _get(port))
    assert played.startswith(b"HTTP/1.1 502")
    assert b"does not match its sha256" in played and b"999999" not in played


@pytest.mark.parametrize(
    "digest", ["../../../etc/passwd", "/etc/passwd", "..", "A" * 64, "0" * 63 + "/", ""]
)
async def test_a_recorded_digest_is_never_a_path(tmp_path: Path, port: int, digest: str) -> None:
    secret = tmp_path / "fetched" / ".." / "secret"
    (tmp_path / "fetched").mkdir()
    secret.write_text("not for the sandbox")
    store = BodyStore(tmp_path / "fetched")
    url = f"http://data.test:{port}/data.csv"
    forged = {"method": "GET", "url": url, "status": 200, "allowed": True, "stored": True}
    played = await _replay(
        tmp_path, port, Recording([{**forged, "sha256": digest}], store), _get(port)
    )
    assert played.startswith(b"HTTP/1.1 502") and b"not for the sandbox" not in played
    assert store.path_of(digest) is None


async def test_refusals_replay_word_for_word_and_tls_is_not_recorded(
    tmp_path: Path, port: int
) -> None:
    requests = [_get(port, "/x", method="DELETE"), _get(port, method="CONNECT")]
    records, live, store = await _record(tmp_path, port, requests, methods=["GET", "CONNECT"])
    recording = Recording(records, store)
    assert await _replay(tmp_path, port, recording, requests[0]) == live[0]
    tunnel = await _replay(tmp_path, port, recording, requests[1])
    assert tunnel.startswith(b"HTTP/1.1 502")
    assert f"not recorded (TLS): CONNECT data.test:{port}".encode() in tunnel


async def test_a_stopped_recording_hands_over_to_the_policy(tmp_path: Path, port: int) -> None:
    recording = Recording([], BodyStore(tmp_path / "fetched"))
    recording.stop()
    played = await _replay(tmp_path, port, recording, _get(port))
    assert played.endswith(CSV.encode())  # live, through the policy


async def test_recorded_headers_and_statuses_are_checked_before_use(
    tmp_path: Path, port: int
) -> None:
    """An edited notebook cannot split the replayed response or make up a status."""
    records, _, store = await _record(tmp_path, port, [_get(port)])
    forged = dict(records[0])
    forged["headers"] = [
        ["content-type", "text/csv\r\nSet-Cookie: session=stolen"],
        ["set-cookie", "session=stolen"],
        ["location", "x" * 5000],
        "not a pair",
        ["content-type", "text/plain"],
    ]
    played = await _replay(tmp_path, port, Recording([forged], store), _get(port))
    head = played.split(b"\r\n\r\n", 1)[0]
    assert b"Set-Cookie" not in played and b"stolen" not in played and b"xxxx" not in head
    assert head.split(b"\r\n")[1:] == [
        b"content-type: text/plain",
        f"Content-Length: {len(CSV)}".encode(),
        b"Connection: close",
    ]
    for status in (999, "200", True, None):
        bad = Recording([{**records[0], "status": status}], store)
        assert (await _replay(tmp_path, port, bad, _get(port))).startswith(b"HTTP/1.1 502")


async def test_an_origin_that_closes_without_answering_gets_a_502_and_nothing_is_kept(
    tmp_path: Path,
) -> None:
    """A server that hangs up before its response head: the sandbox gets the broker's 502
    (not a dropped connection), and no partial body file stays in the store."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.2", 0)
    mute = server.sockets[0].getsockname()[1]
    try:
        records, [got], store = await _record(tmp_path, mute, [_get(mute)])
    finally:
        server.close()
    assert got.startswith(b"HTTP/1.1 502") and b"no valid response from data.test" in got
    assert records[0]["status"] == 502 and not records[0].get("stored")
    assert not store.root.exists() or not any(store.root.iterdir())
