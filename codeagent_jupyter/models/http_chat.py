"""Chat requests through the HTTP client ``openai`` itself uses, without importing ``openai``.

``import openai`` takes about two seconds (its typed API surface); its HTTP client alone a
tenth of that. The CLI sends its first request through this transport so that it leaves at
once, while ``openai`` is imported in the background for the requests after it
(``early``). Everything ``openai`` would send is sent the same: the URL under the base URL,
the key, the headers (its user agent and platform headers, ``OpenAI-Organization`` and
``OpenAI-Project`` from the environment), the timeout, redirects and proxies from the
environment, the JSON body with ``extra_body`` merged in, and a reply read into the same
message, usage and finish reason (server-sent events for a streamed one). Errors become
``failures`` types the way ``openai``'s own would, so the retry loop reads them alike.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import platform
from collections.abc import AsyncIterator, Callable
from typing import Any

try:  # the client openai uses: httpx2 for openai 2 and later, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover - an environment with an older openai
    import httpx  # type: ignore[no-redef]

from ._replies import plain_reply, streamed_reply
from .chat import ChatModel, Reply, Transport
from .failures import ConnectionFailure, EndpointFailure, StatusFailure, TimeoutFailure
from .loop_clients import LoopClients

FIRST_SEND_MODULES = ("anyio._backends._asyncio", "anyio.streams.stapled", "encodings.idna")
"""What the client imports during its first request (``prepare`` imports them ahead)."""

LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
"""``openai``'s own connection limits."""

ORG_HEADERS = (("OpenAI-Organization", "OPENAI_ORG_ID"), ("OpenAI-Project", "OPENAI_PROJECT_ID"))
"""Headers ``openai`` fills from the environment when they are set there."""

_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64", "i386": "x32"}
_OS = {"linux": "Linux", "darwin": "MacOS", "windows": "Windows", "freebsd": "FreeBSD"}


def _openai_version() -> str:
    """The installed ``openai``'s version, read from its metadata (no import)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openai")
    except PackageNotFoundError:  # pragma: no cover - openai is a dependency
        return "unknown"


def openai_headers(key: str, timeout: float) -> dict[str, str]:
    """The headers ``openai.AsyncOpenAI`` sends with a chat request (retries off)."""
    release = _openai_version()
    system = platform.system().lower()
    machine = platform.machine().lower()
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": f"AsyncOpenAI/Python {release}",
        "X-Stainless-Lang": "python",
        "X-Stainless-Package-Version": release,
        "X-Stainless-OS": _OS.get(system, f"Other:{system}"),
        "X-Stainless-Arch": _ARCH.get(machine, f"other:{machine}"),
        "X-Stainless-Runtime": platform.python_implementation(),
        "X-Stainless-Runtime-Version": platform.python_version(),
        "X-Stainless-Async": "async:asyncio",
        "X-Stainless-Retry-Count": "0",
        "X-Stainless-Read-Timeout": str(float(timeout)),
    }
    for header, variable in ORG_HEADERS:
        if os.environ.get(variable):
            headers[header] = os.environ[variable]
    return headers


class _View:
    """A JSON object read as ``openai``'s reply objects are: fields as attributes, a
    missing one None, so ``_replies`` reads both alike."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        return _view(self._data.get(name))


def _view(value: Any) -> Any:
    if isinstance(value, dict):
        return _View(value)
    if isinstance(value, list):
        return [_view(v) for v in value]
    return value


def _status_failure(response: Any) -> StatusFailure:
    """``openai``'s status error, read from a response whose body has been read."""
    text = response.text.strip()
    body: Any = text
    message = f"Error code: {response.status_code}"
    try:
        body = json.loads(text)
    except ValueError:
        pass
    else:
        inner = body.get("error", body) if isinstance(body, dict) else None
        said = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(said, str) and said:
            message += f" - {said}"
    return StatusFailure(response.status_code, body, response.text, response.headers, message)


class _EventStream:
    """A streamed reply's chunks from its server-sent events, as ``openai``'s stream gives
    them; an ``error`` object in an event ends it (``EndpointFailure``)."""

    def __init__(self, response: Any) -> None:
        self.response = response

    async def __aenter__(self) -> _EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.response.aclose()

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            async for data in self._events():
                if data.startswith("[DONE]"):
                    break
                chunk = json.loads(data)
                if isinstance(chunk, dict) and chunk.get("error"):
                    error = chunk["error"]
                    said = error.get("message") if isinstance(error, dict) else None
                    ok = isinstance(said, str) and said
                    raise EndpointFailure(said if ok else "An error occurred during streaming")
                yield _view(chunk)
        except httpx.TimeoutException as exc:
            raise TimeoutFailure(str(exc)) from exc
        except httpx.TransportError as exc:
            raise ConnectionFailure(str(exc)) from exc

    async def _events(self) -> AsyncIterator[str]:
        """The ``data`` of each event (its lines joined), as the SSE format defines it."""
        data: list[str] = []
        async for line in self.response.aiter_lines():
            if not line:
                if data:
                    yield "\n".join(data)
                data = []
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
        if data:
            yield "\n".join(data)


class HttpTransport:
    """Requests through an ``httpx`` client set as ``openai`` sets its own, one per event
    loop (a connection pool cannot be shared across loops)."""

    def __init__(self, key: str, base_url: str, timeout: float) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self._headers = openai_headers(key, timeout)
        self._clients: LoopClients[Any] = LoopClients(self._new_client)

    def prepare(self) -> None:
        """Make a client now, for the first event loop that sends: its TLS context loads
        the certificate store (a tenth of a second or more), which a thread can do while
        the event loop gets on with the rest. The modules its first request would import
        (the client's asyncio backend) are imported here too."""
        self._clients.prepare()
        for name in FIRST_SEND_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)

    def _new_client(self) -> Any:
        return httpx.AsyncClient(
            base_url=self.base_url + "/",
            timeout=httpx.Timeout(self.timeout),
            limits=LIMITS,
            follow_redirects=True,
        )

    def _client(self) -> Any:
        return self._clients.current()

    async def aclose(self) -> None:
        client = self._clients.pop()
        if client is not None:
            await client.aclose()

    def _build(self, kwargs: dict[str, Any], stream: bool) -> Any:
        body = {k: v for k, v in kwargs.items() if k not in ("extra_body", "extra_headers")}
        if stream:
            body["stream"] = True
        body.update(kwargs.get("extra_body") or {})
        headers = {**self._headers, **(kwargs.get("extra_headers") or {})}
        client = self._client()
        return client, client.build_request("POST", "chat/completions", json=body, headers=headers)

    async def send(
        self,
        kwargs: dict[str, Any],
        stream: bool,
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None,
    ) -> Reply:
        client, request = self._build(kwargs, stream)
        try:
            response = await client.send(request, stream=stream)
            if not response.is_success:
                await response.aread()
                await response.aclose()
                raise _status_failure(response)
        except httpx.TimeoutException as exc:
            raise TimeoutFailure(str(exc)) from exc
        except httpx.TransportError as exc:
            raise ConnectionFailure(str(exc)) from exc
        if stream:
            answer = _EventStream(response)
            return await streamed_reply(answer, tools, on_text, ConnectionFailure)
        try:
            data = response.json()
        except ValueError as exc:
            raise EndpointFailure(f"the answer is not JSON: {response.text[:200]!r}") from exc
        if not isinstance(data, dict):
            raise EndpointFailure("the answer is not a chat completion")
        return plain_reply(_view(data), self.base_url, on_text)


class HttpChatModel(ChatModel):
    """A ``ChatModel`` sending through ``HttpTransport``: no ``openai`` import."""

    def _make_transport(self, key: str) -> Transport:
        return HttpTransport(key, self.base_url, self.timeout)
