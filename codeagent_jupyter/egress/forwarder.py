"""Inside the sandbox: a proxy address on its own loopback that leads to the broker.

The sandbox has its own network namespace with nothing but ``lo``; the broker's unix socket
is bound into it. Programs expect a proxy at a TCP address (``HTTP_PROXY``), so the launcher
binds ``127.0.0.1:PORT`` before the kernel starts and forks this relay: every connection
to it is carried, byte for byte, to the broker's socket. It decides nothing; the broker
outside does. Killing it only takes the sandbox's own network away.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import MutableMapping

PORT = 3128
"""The proxy port on the sandbox's loopback (its own network namespace: always free)."""
SOCKET = "/run/codeagent/egress.sock"
"""Where the launcher binds the broker's socket inside the sandbox."""
PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
CHUNK = 256 * 1024
"""Bytes carried per read, and the streams' buffer bound (a few loop turns per MiB)."""


def proxy_env(env: MutableMapping[str, str], port: int = PORT) -> None:
    """Point every common proxy setting at the forwarder: curl, urllib, requests, httpx,
    pip (``PIP_PROXY``); ``NO_PROXY`` empty, so not even loopback goes around the broker."""
    url = f"http://127.0.0.1:{port}"
    for name in PROXY_NAMES:
        env[name] = url
        env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = ""
    env["PIP_PROXY"] = url


def listen(port: int = PORT) -> socket.socket:
    """Bind the proxy address (before the kernel exists, so no cell can take it first)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


def spawn(listener: socket.socket, path: str = SOCKET) -> int:
    """Fork the relay; the parent (the kernel-to-be) closes its copy of the listener."""
    pid = os.fork()
    if pid == 0:
        try:
            asyncio.run(_relay(listener, path))
        finally:
            os._exit(0)
    listener.close()
    return pid


async def _relay(listener: socket.socket, path: str) -> None:
    async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            broker_reader, broker_writer = await asyncio.open_unix_connection(path, limit=CHUNK)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            _pipe(reader, broker_writer), _pipe(broker_reader, writer), return_exceptions=True
        )
        broker_writer.close()
        writer.close()

    server = await asyncio.start_server(carry, sock=listener, limit=CHUNK)
    async with server:
        await server.serve_forever()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while chunk := await src.read(CHUNK):
            dst.write(chunk)
            await dst.drain()
    finally:
        with contextlib.suppress(OSError):
            if dst.can_write_eof():
                dst.write_eof()
