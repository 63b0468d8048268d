"""Forty uploads at once against the documented cap of twenty waiting uploads per user.

The attack, for real: forty connections to the real server each send their headers and
half their body, so forty uploads are under way together, then finish. The cap counted
only finished uploads, so every one of them was stored (26 of 26 when it was found):
the disk bound of twenty times ``max_upload_mb`` per user did not hold. A slot is now taken when an
upload begins and given back when it fails.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from typing import Any

import pytest

from tests.security.server.conftest import TokenUsers

CAP = 20
SIZE = 64 << 10
users = pytest.mark.server_app(identity_provider_class=TokenUsers)


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, Any]:
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return status, json.loads(body) if body else None


async def _upload(
    port: int, base: str, token: str, name: str, go: asyncio.Event, sent: list[str], *, sha=None
) -> tuple[int, Any]:
    """One upload over its own connection: headers and half the body, then the rest once
    ``go`` is set (a refused upload is answered before that)."""
    body = os.urandom(SIZE)
    digest = sha or hashlib.sha256(body).hexdigest()
    path = f"{base}codeagent/api/uploads?name={name}&format=pickle&sha256={digest}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: token {token}\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Length: {SIZE}\r\n\r\n"
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head.encode() + body[: SIZE // 2])
        await writer.drain()
        answer = asyncio.ensure_future(_read_response(reader))
        sent.append(name)
        await go.wait()
        if not answer.done():
            try:
                writer.write(body[SIZE // 2 :])
                await writer.drain()
            except ConnectionError:
                pass
        return await asyncio.wait_for(answer, 120)
    finally:
        writer.close()


@users
async def test_forty_uploads_at_once_hold_the_cap_of_twenty(
    jp_serverapp: Any, http_server: Any, http_server_port: Any, jp_base_url: str
) -> None:
    port = http_server_port[-1]  # the real server listens there (``http_server``)
    go = asyncio.Event()
    go.set()
    # Uploads that fail (a wrong checksum) give their slots back.
    failed = [
        await _upload(port, jp_base_url, "alice-token", f"bad{i}", go, [], sha="0" * 64)
        for i in range(5)
    ]
    assert [code for code, _ in failed] == [400] * 5

    go = asyncio.Event()
    sent: list[str] = []
    flood = [
        asyncio.ensure_future(_upload(port, jp_base_url, "alice-token", f"v{i}", go, sent))
        for i in range(40)
    ]
    for _ in range(600):  # every connection has sent its headers and half its body
        if len(sent) == 40:
            break
        await asyncio.sleep(0.05)
    assert len(sent) == 40
    await asyncio.sleep(1.0)  # and the server has seen every one of them begin
    go.set()
    answers = await asyncio.gather(*flood)
    codes = sorted(code for code, _ in answers)
    assert codes == [201] * CAP + [429] * (40 - CAP), codes
    refusal = next(reply for code, reply in answers if code == 429)
    assert f"{CAP} uploads are already waiting" in refusal["message"]
    assert "\n" not in refusal["message"]

    go.set()
    assert (await _upload(port, jp_base_url, "alice-token", "more", go, []))[0] == 429
    assert (await _upload(port, jp_base_url, "bob-token", "bobs", go, []))[0] == 201  # per user
    stored = list(_uploads_dir(jp_serverapp).iterdir())
    assert len(stored) == CAP + 1  # alice's twenty and bob's one: nothing else on disk


def _uploads_dir(serverapp: Any) -> Any:
    manager = serverapp.web_app.settings["codeagent_manager"]
    return manager.uploads.directory
