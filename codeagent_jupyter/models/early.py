"""A chat model whose first requests need no ``openai`` import: the CLI's.

``import openai`` takes about two seconds (more on a busy machine): on the path of
``codeagent run``'s first request it made the model wait for the import rather than the
sandbox. ``EarlyChatModel`` sends through the HTTP client ``openai`` itself uses
(``http_chat``) until ``load_openai()`` has imported ``openai`` in a background thread, and
through ``openai`` from then on. The retry loop, the request and every error are
``ChatModel``'s either way, so nothing reads differently whichever transport sent a request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from .chat import ChatModel, Reply, Transport

log = logging.getLogger(__name__)


def warm_up() -> None:
    """Start importing the HTTP client now, in a daemon thread: the CLI calls this first
    thing, so the import overlaps the CLI's own set-up instead of following it (the
    transport's thread then finds it imported, or waits on the import lock)."""
    threading.Thread(
        target=importlib.import_module,
        args=("codeagent_jupyter.models.http_chat",),
        name="codeagent-http-import",
        daemon=True,
    ).start()


class EarlyTransport:
    """``HttpTransport`` until ``openai`` is loaded, ``OpenAITransport`` afterwards.

    The HTTP transport itself is made in a thread from the start (its client's import and
    its TLS context), while the caller builds what the first request needs."""

    def __init__(self, key: str, base_url: str, timeout: float) -> None:
        self._http: concurrent.futures.Future[Transport] = concurrent.futures.Future()
        threading.Thread(
            target=_prepare_http,
            args=(self._http, key, base_url, timeout),
            name="codeagent-http-client",
            daemon=True,
        ).start()
        self.openai: Transport | None = None
        """Set by the loading thread once ``openai`` is imported."""
        self._make_openai = lambda: _openai_transport(key, base_url, timeout)
        self._loading: threading.Thread | None = None

    def load_openai(self) -> None:
        """Import ``openai`` in a background thread (once); requests keep going out through
        the HTTP transport until it is done. A daemon thread: a run that ends first does
        not wait for it."""
        if self._loading is None:
            self._loading = threading.Thread(
                target=self._load, name="codeagent-import-openai", daemon=True
            )
            self._loading.start()

    def _load(self) -> None:
        try:
            self.openai = self._make_openai()
        except Exception as exc:  # the HTTP transport serves on: nothing is lost
            log.warning("openai could not be imported (%s); requests stay on httpx", exc)

    async def current(self) -> Transport:
        """``openai``'s transport once loaded, else the HTTP one (waiting for it if its
        thread has not finished)."""
        if self.openai is not None:
            return self.openai
        # shielded: a request given up while waiting must not cancel the transport itself
        return await asyncio.shield(asyncio.wrap_future(self._http))

    async def send(
        self,
        kwargs: dict[str, Any],
        stream: bool,
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None,
    ) -> Reply:
        transport = await self.current()
        return await transport.send(kwargs, stream, tools, on_text)

    async def aclose(self) -> None:
        if self._http.done() and self._http.exception() is None:
            await self._http.result().aclose()
        if self.openai is not None:
            await self.openai.aclose()


def _prepare_http(
    done: concurrent.futures.Future[Transport], key: str, base_url: str, timeout: float
) -> None:
    if not done.set_running_or_notify_cancel():
        return
    try:
        from .http_chat import HttpTransport

        transport = HttpTransport(key, base_url, timeout)
        transport.prepare()
    except BaseException as exc:  # said by the first request, as its own error would be
        done.set_exception(exc)
    else:
        done.set_result(transport)


def _openai_transport(key: str, base_url: str, timeout: float) -> Transport:
    from .openai_chat import OpenAITransport

    transport = OpenAITransport(key, base_url, timeout)
    transport.prepare()
    return transport


class EarlyChatModel(ChatModel):
    """A ``ChatModel`` on an ``EarlyTransport``: call ``load_openai()`` once the first
    request is under way (the CLI does when the sandbox is up)."""

    transport: EarlyTransport

    def _make_transport(self, key: str) -> Transport:
        return EarlyTransport(key, self.base_url, self.timeout)

    def load_openai(self) -> None:
        self.transport.load_openai()
