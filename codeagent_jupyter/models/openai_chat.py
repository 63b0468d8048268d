"""The model adapter for any OpenAI-compatible chat endpoint, sending through ``openai``.

This is the only module that imports ``openai``. The client's own retries are switched off so
that every retry is reported to the caller (``on_retry``) and ends in one clear ``ModelError``
(the retry loop is ``chat.ChatModel``'s; this module is the transport and its errors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai

from ._replies import plain_reply, streamed_reply
from .chat import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    SESSION_HEADER,
    ChatModel,
    Reply,
    Transport,
    current_session,
)
from .failures import ConnectionFailure, EndpointFailure, StatusFailure, TimeoutFailure
from .loop_clients import LoopClients
from .settings import resolve_settings

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "SESSION_HEADER",
    "OpenAIChatModel",
    "OpenAITransport",
    "current_session",
    "resolve_settings",
]


class OpenAITransport:
    """Requests through ``openai.AsyncOpenAI`` (its retries off), one client per event loop:
    a connection pool cannot be shared across loops."""

    def __init__(self, key: str, base_url: str, timeout: float) -> None:
        self.base_url = base_url
        self._clients: LoopClients[openai.AsyncOpenAI] = LoopClients(
            lambda: openai.AsyncOpenAI(
                api_key=key, base_url=base_url, timeout=timeout, max_retries=0
            )
        )

    def prepare(self) -> None:
        """Make a client now (its TLS context loads the certificate store), for the first
        event loop that sends: called by the thread that imported ``openai``."""
        self._clients.prepare()

    def _client(self) -> openai.AsyncOpenAI:
        return self._clients.current()

    async def aclose(self) -> None:
        client = self._clients.pop()
        if client is not None:
            await client.close()

    async def send(
        self,
        kwargs: dict[str, Any],
        stream: bool,
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None,
    ) -> Reply:
        client = self._client()
        try:
            if not stream:
                response = await client.chat.completions.create(**kwargs)
                return plain_reply(response, self.base_url, on_text)
            answer = await client.chat.completions.create(stream=True, **kwargs)
            return await streamed_reply(answer, tools, on_text, openai.APIConnectionError)
        except openai.APIStatusError as exc:
            raise StatusFailure(
                exc.status_code, exc.body, exc.response.text, exc.response.headers, exc.message
            ) from exc
        except openai.APITimeoutError as exc:
            raise TimeoutFailure() from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc.__context__
            raise ConnectionFailure(str(cause) if cause else "") from exc
        except openai.OpenAIError as exc:
            raise EndpointFailure(str(exc)) from exc


class OpenAIChatModel(ChatModel):
    """A ``ChatModel`` sending through ``openai`` (see ``ChatModel`` for its behaviour)."""

    def _make_transport(self, key: str) -> Transport:
        return OpenAITransport(key, self.base_url, self.timeout)
