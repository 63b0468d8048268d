"""Helpers for the server tests: the JSON/WebSocket client and process inspection."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

SECRET = "sk-test-0123456789abcdefghijklmnop"
"""The configured API key: no response, event or notebook may ever contain it."""

EXTENSION = "codeagent_jupyter"
"""The extension point, as the package's jupyter-config file enables it."""


class Api:
    """JSON calls and event streams against the extension."""

    def __init__(self, fetch: Any, ws_fetch: Any) -> None:
        self.fetch = fetch
        self.ws_fetch = ws_fetch

    async def call(
        self, method: str, path: str, body: Any = None, *, raw: str | None = None, **kw: Any
    ) -> tuple[int, Any]:
        """``(status, json)`` for ``/codeagent/api/<path>``; errors are returned, not raised."""
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        data = ("{}" if data is None else data) if method in ("POST", "PUT") else None
        response = await self.fetch(
            "codeagent", "api", *path.split("/"), method=method, body=data, raise_error=False, **kw
        )
        text = response.body.decode() if response.body else ""
        try:
            return response.code, json.loads(text) if text else None
        except ValueError:
            return response.code, text

    async def ok(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        code, data = await self.call(method, path, body)
        assert code == status, f"{method} {path}: {code} {data}"
        return data

    async def start(self, prompt: str = "go", **fields: Any) -> dict[str, Any]:
        return await self.ok("POST", "sessions", {"prompt": prompt, **fields}, status=201)

    async def connect(self, session_id: str, since: int = 0) -> Any:
        return await self.ws_fetch(
            "codeagent", "api", "sessions", session_id, "events", params={"since": str(since)}
        )

    async def read_until(
        self, ws: Any, stop: Any, *, timeout: float = 60.0, into: list | None = None
    ) -> list[dict[str, Any]]:
        """Read events until ``stop(event)`` is true (that event included)."""
        events = into if into is not None else []

        async def _read() -> None:
            while True:
                message = await ws.read_message()
                assert message is not None, f"stream closed early after {events[-3:]}"
                event = json.loads(message)
                events.append(event)
                if stop(event):
                    return

        await asyncio.wait_for(_read(), timeout)
        return events

    async def run_to_end(self, session_id: str, since: int = 0) -> list[dict[str, Any]]:
        ws = await self.connect(session_id, since)
        try:
            return await self.read_until(ws, lambda e: e["type"] == "run_finished")
        finally:
            ws.close()


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def descendants(pid: int | None = None) -> dict[int, str]:
    """Live (non-zombie) descendant processes of ``pid`` as ``{pid: command line}``."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        parents[int(entry.name)] = int(fields[1])
        commands[int(entry.name)] = cmd
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in found:
                found[child] = commands[child]
                frontier.append(child)
    return found


def processes_in(directory: Path) -> list[int]:
    """Processes whose working directory is ``directory`` (a test's private root)."""
    target = directory.resolve()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if Path(os.readlink(entry / "cwd")) == target:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids
