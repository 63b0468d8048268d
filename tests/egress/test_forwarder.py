"""The forwarder on its own: a real TCP listener, a real unix socket behind it.

It carries bytes and decides nothing, so what is tested is that it carries them whole,
both ways, many connections at once, and passes each side's end on (a client that has
sent everything shuts its side, and still gets every byte of the answer).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import socketserver
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codeagent_jupyter.egress import forwarder


class _Echo(socketserver.StreamRequestHandler):
    """Reads until the client's end, then answers with all it read, reversed (so a byte
    lost, added or carried out of order cannot pass)."""

    def handle(self) -> None:
        data = self.rfile.read()
        self.wfile.write(data[::-1])


def _spawned(path: Path) -> Iterator[tuple[int, int]]:
    """A forwarder (a forked process, as in the sandbox) on a free port, toward ``path``."""
    listener = forwarder.listen(0)
    port = listener.getsockname()[1]
    pid = forwarder.spawn(listener, str(path))  # forked before any thread of the test
    try:
        yield port, pid
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A forwarder on a free port of 127.0.0.1 in front of an echo server's socket."""
    path = tmp_path / "echo.sock"
    for spawned in _spawned(path):
        server = socketserver.ThreadingUnixStreamServer(str(path), _Echo)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield spawned
        finally:
            server.shutdown()
            server.server_close()


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1 << 20):
            chunks.append(chunk)
    return b"".join(chunks)


def test_bytes_cross_whole_both_ways_on_many_connections(relay: tuple[int, int]) -> None:
    """More connections at once than the forwarder has threads: some wait, none is lost,
    and its threads stay within ``THREADS`` (each counts against ``max_processes``)."""
    port, pid = relay
    count = forwarder.THREADS // 2 + 8
    bodies = [os.urandom(512 * 1024 + n) for n in range(count)]
    with ThreadPoolExecutor(count) as pool:
        answers = list(pool.map(lambda body: _exchange(port, body), bodies))
    assert answers == [body[::-1] for body in bodies]
    status = Path(f"/proc/{pid}/status").read_text()
    threads = int(status.split("Threads:")[1].split()[0])
    assert 2 < threads <= forwarder.THREADS + 1


def test_a_client_is_let_go_when_the_broker_is_not_there(tmp_path: Path) -> None:
    for port, _ in _spawned(tmp_path / "absent.sock"):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"GET http://example.org/ HTTP/1.1\r\n\r\n")
            with contextlib.suppress(ConnectionResetError):  # closed with the request unread
                assert sock.recv(1024) == b""  # closed at once, not left to hang (timeout)
