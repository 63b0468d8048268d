"""Inside the sandbox: a proxy address on its own loopback that leads to the broker.

The sandbox has its own network namespace with nothing but ``lo``; the broker's unix socket
is bound into it. Programs expect a proxy at a TCP address (``HTTP_PROXY``), so the launcher
binds ``127.0.0.1:PORT`` before the kernel starts and forks this relay: every connection
to it is carried, byte for byte, to the broker's socket. It decides nothing; the broker
outside does. Killing it only takes the sandbox's own network away.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import Any

PORT = 3128
"""The proxy port on the sandbox's loopback (its own network namespace: always free)."""
SOCKET = "/run/codeagent/egress.sock"
"""Where the launcher binds the broker's socket inside the sandbox."""
PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
CHUNK = 256 * 1024
"""Bytes carried per call (and the pipe's size, where ``splice`` carries them)."""
THREADS = 64
"""Threads at most: two per open connection, and the broker takes 32 at once (more wait)."""
IDLE_S = 10.0
"""Seconds a thread without work is kept."""
SPLICE = hasattr(os, "splice") and hasattr(fcntl, "F_SETPIPE_SZ")
"""Linux with Python 3.10 or later: bytes move socket to socket without a copy in Python."""


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
            _serve(listener, path)
        finally:
            os._exit(0)
    listener.close()
    return pid


def _serve(listener: socket.socket, path: str) -> None:
    """Accept forever; each direction of a connection carried by a pooled thread (blocking
    calls and, on Linux, ``splice``: the bytes never enter Python)."""
    pool = _Pool(THREADS)
    while True:
        try:
            client, _ = listener.accept()
        except OSError:  # out of descriptors: the connections open now end, then room again
            time.sleep(0.05)
            continue
        try:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            broker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError:
            client.close()
            continue
        link = _Link(client, broker)
        try:
            broker.connect(path)
        except OSError:
            link.close()
            continue
        try:
            pool.submit(_pipe, client, broker, link)
            pool.submit(_pipe, broker, client, link)
        except RuntimeError:  # no thread could be started: what is queued ends at once
            link.cut()


class _Pool:
    """Threads kept for the next connection (starting two per request cost more than the
    request), at most ``most`` of them, each gone after ``IDLE_S`` without work: every
    thread counts against the sandbox's ``max_processes``, so a burst of connections
    leaves none behind."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.jobs: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]]]
        self.jobs = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.threads = self.idle = self.waiting = 0

    def submit(self, job: Callable[..., None], *args: Any) -> None:
        """Queue ``job``; a thread is started when no idle one is there to take it
        (``RuntimeError`` when none can be: the job stays queued for a thread to come)."""
        with self.lock:
            self.jobs.put((job, args))
            self.waiting += 1
            if self.waiting <= self.idle or self.threads >= self.most:
                return
            self.threads += 1
            self.idle += 1
        try:
            threading.Thread(target=self._work, daemon=True).start()
        except RuntimeError:
            with self.lock:
                self.threads -= 1
                self.idle -= 1
            raise

    def _work(self) -> None:
        while True:
            try:
                job, args = self.jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self.lock:
                    if self.waiting == 0:
                        self.threads -= 1
                        self.idle -= 1
                        return
                continue
            with self.lock:
                self.waiting -= 1
                self.idle -= 1
            with contextlib.suppress(Exception):
                job(*args)
            with self.lock:
                self.idle += 1


class _Link:
    """Both sockets of one connection, closed when both directions have ended."""

    def __init__(self, client: socket.socket, broker: socket.socket) -> None:
        self.sockets = (client, broker)
        self.open = 2
        self.lock = threading.Lock()

    def ended(self) -> None:
        with self.lock:
            self.open -= 1
            last = self.open == 0
        if last:
            self.close()

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()

    def cut(self) -> None:
        """End both directions without closing (a thread may be in a call on them)."""
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _pipe(src: socket.socket, dst: socket.socket, link: _Link) -> None:
    """Bytes from ``src`` to ``dst`` until ``src`` ends, then the end passed on."""
    try:
        if not (SPLICE and _splice(src.fileno(), dst.fileno())):
            while chunk := src.recv(CHUNK):
                dst.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
        link.ended()


def _splice(src: int, dst: int) -> bool:
    """``src`` to ``dst`` through a pipe, in the kernel (socket to pipe to socket); False
    when this kernel cannot splice these sockets and nothing has moved yet."""
    read, write = os.pipe()
    try:
        with contextlib.suppress(OSError):
            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, CHUNK)
        try:
            moved = os.splice(src, write, CHUNK)
        except OSError as e:
            if e.errno in (errno.EINVAL, errno.ENOSYS):
                return False
            raise
        while moved:
            while moved:
                moved -= os.splice(read, dst, moved)
            moved = os.splice(src, write, CHUNK)
        return True
    finally:
        os.close(read)
        os.close(write)
