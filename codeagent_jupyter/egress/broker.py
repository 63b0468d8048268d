"""The egress broker: an HTTP forward proxy and CONNECT tunnel on a unix socket.

An asyncio server of our own rather than a proxy library: what it must do is small (one
request per connection, no caching, no TLS interception) and what it must refuse is the
point: every decision (policy by name, addresses after our own resolution, ports,
methods, rate, approvals) sits in this file and the byte moving under limits in
``relay.py``, with nothing a library would do first on its own (keep-alive pipelining,
re-resolving a name, following redirects).

Every request, allowed or refused, is reported once to ``on_request`` as a dict with
``method``, ``url``, ``status``, ``bytes_up``, ``bytes_down``, ``sha256`` (of the response
body; empty for a tunnel, whose bytes are encrypted), ``rule`` and ``allowed`` (the
policy let it through; a cut at a cap is said in ``rule``), and for a plain ``GET`` the
``headers`` a replay needs and whether the body went into the content store (``stored``).
Refusals reach the sandbox as an HTTP status with one line saying which rule.

With a ``Recording`` (``replay.py``) the broker answers from it instead, and reaches no
network at all while the recording is playing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import http1
from .addresses import networks, refusal, resolve
from .bodies import BodyStore
from .policy import Approver, EgressPolicy, Verdict
from .relay import CHUNK, MIB, Refused, Relaying, answer, within
from .replay import Recording

log = logging.getLogger(__name__)
OnRequest = Callable[[dict[str, Any]], None]
RECORDS_KEPT = 1000


class Broker(Relaying):
    """One sandbox's broker: its policy, its socket, its byte and rate budgets.

    ``head_timeout``: seconds a client has to send its request head (a slow client is
    answered 408); ``idle_timeout``: seconds a transfer may stall either way before it is
    cut; at most ``max_connections`` at once (more are answered 503); ``ask_timeout``:
    seconds a question to ``approve`` waits before the request is denied (by default the
    policy's ``ask_timeout_s``); ``bodies``: the content store complete ``GET`` bodies are
    written to; ``replay``: a recording to answer from instead of the network, as long as
    it is playing.
    """

    def __init__(
        self,
        policy: EgressPolicy,
        path: Path,
        on_request: OnRequest | None = None,
        *,
        approve: Approver | None = None,
        head_timeout: float = 10.0,
        idle_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_connections: int = 32,
        ask_timeout: float | None = None,
        bodies: BodyStore | None = None,
        replay: Recording | None = None,
    ) -> None:
        self.policy = policy
        self.bodies = bodies
        self.replay = replay
        self.path = Path(path)
        self.on_request = on_request
        self.approve = approve
        self.head_timeout = head_timeout
        self.idle_timeout = idle_timeout
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.ask_timeout = policy.ask_timeout_s if ask_timeout is None else ask_timeout
        """Seconds a ``default: ask`` question waits (the policy's ``ask_timeout_s``)."""
        self._answers: dict[str, Verdict] = {}
        """Answers given "for this session" (and denials), by host name."""
        self._asking = asyncio.Lock()
        self.session_bytes = 0
        self.records: deque[dict[str, Any]] = deque(maxlen=RECORDS_KEPT)
        """The latest records (the full record went to ``on_request``)."""
        self._ranges = networks(policy.allow_ranges)
        self._tokens = float(policy.rate_per_minute)
        self._refilled = time.monotonic()
        self._active = 0
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen on ``path`` (mode 0600: only the sandbox's bind and this process reach it)."""
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.path), limit=http1.MAX_HEAD
        )
        os.chmod(self.path, 0o600)

    async def start_tcp(self) -> int:
        """Listen on a free port of 127.0.0.1 instead (for a program on the host that
        takes an HTTP proxy URL only: pip); the port."""
        self._server = await asyncio.start_server(
            self._serve, host="127.0.0.1", port=0, limit=http1.MAX_HEAD
        )
        self.path = Path()
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and cut every open connection."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self.path != Path():
            with contextlib.suppress(OSError):
                self.path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        writer.transport.set_write_buffer_limits(high=CHUNK * 4)
        self._active += 1
        try:
            if self._active > self.max_connections:
                await answer(writer, 503, f"more than {self.max_connections} connections at once")
            else:
                await self._handle(reader, writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("egress broker failed on a request")
        finally:
            self._active -= 1
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        record: dict[str, Any] = {"method": "", "url": "", "status": 0, "bytes_up": 0}
        record.update(bytes_down=0, sha256="", rule="", allowed=False)
        try:
            head = await within(reader.readuntil(b"\r\n\r\n"), self.head_timeout)
        except TimeoutError:
            return await self._refuse(writer, record, 408, "request head not sent in time")
        except asyncio.LimitOverrunError:
            return await self._refuse(writer, record, 431, "request head too large")
        except asyncio.IncompleteReadError:
            return
        try:
            request = http1.parse(head)
        except http1.BadRequest as e:
            return await self._refuse(writer, record, e.status, e.reason)
        record.update(method=request.method, url=request.url)
        if self.replay is not None and self.replay.playing:
            try:
                await self.replay.answer(request, writer, record)
            finally:
                self._report(record)
            return
        try:
            verdict = self.policy.decide(request.host, request.port, request.method)
            if verdict.ask:
                verdict = await self._asked(request.host, verdict, request.port, request.method)
            if not verdict.allowed:
                raise Refused(verdict.status, verdict.rule)
            self._spend_token()
            upstream = await self._connect(request.host, request.port)
        except Refused as e:
            return await self._refuse(writer, record, e.status, e.rule)
        record.update(rule=verdict.rule, allowed=True)
        up_reader, up_writer = upstream
        try:
            if request.method == "CONNECT":
                await self._tunnel(reader, writer, up_reader, up_writer, record)
            else:
                await self._forward(request, head, reader, writer, up_reader, up_writer, record)
        except Refused as e:
            record["rule"] += f"; cut: {e.rule}"
            record["status"] = record["status"] or e.status
        finally:
            up_writer.close()
            self._report(record)

    async def _asked(self, host: str, verdict: Verdict, port: int, method: str) -> Verdict:
        """The user's answer for ``host`` (remembered for the session when they say so);
        one question at a time; no approver, no answer in time: the verdict as it was."""
        host = host.lower().rstrip(".")
        if host in self._answers:
            return self._answers[host]
        if self.approve is None:
            return verdict
        async with self._asking:
            if host in self._answers:
                return self._answers[host]
            try:
                answer = await asyncio.wait_for(
                    self.approve(host, port=port, method=method), self.ask_timeout
                )
            except TimeoutError:
                waited = f"{self.ask_timeout:g} s"
                return Verdict(False, f"default ask: no answer about {host} within {waited}", 403)
        if answer == "once":
            return Verdict(True, f"approved {host} once")
        if answer == "session":
            self._answers[host] = Verdict(True, f"approved {host} for this session")
            return self._answers[host]
        if answer == "deny":
            self._answers[host] = Verdict(False, f"denied {host} by the user", 403)
            return self._answers[host]
        return verdict

    def _spend_token(self) -> None:
        now = time.monotonic()
        rate = self.policy.rate_per_minute
        self._tokens = min(rate, self._tokens + (now - self._refilled) * rate / 60)
        self._refilled = now
        if self._tokens < 1:
            raise Refused(429, f"rate_per_minute {rate}")
        self._tokens -= 1
        if self.session_bytes >= self.policy.max_session_mb * MIB:
            raise Refused(403, f"max_session_mb {self.policy.max_session_mb:g} used up")

    async def _connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Resolve once, refuse any private answer, connect to the address checked."""
        try:
            addresses = await resolve(host.strip("[]"), port, self.policy.hosts)
        except (OSError, ValueError) as e:
            raise Refused(502, f"cannot resolve {host}: {e}") from None
        for address in addresses:
            why = refusal(address, self._ranges)
            if why:
                raise Refused(403, f"address refused: {why}")
        try:
            return await within(
                asyncio.open_connection(str(addresses[0]), port, limit=CHUNK * 4),
                self.connect_timeout,
            )
        except (OSError, TimeoutError) as e:
            raise Refused(502, f"cannot connect to {host}:{port}: {e or 'timed out'}") from None

    async def _refuse(
        self, writer: asyncio.StreamWriter, record: dict[str, Any], status: int, rule: str
    ) -> None:
        record.update(status=status, rule=rule)
        self._report(record)
        with contextlib.suppress(ConnectionError, TimeoutError):
            await answer(writer, status, rule)

    def _report(self, record: dict[str, Any]) -> None:
        self.records.append(dict(record))
        if self.on_request is not None:
            try:
                self.on_request(dict(record))
            except Exception:
                log.exception("egress record sink failed")
