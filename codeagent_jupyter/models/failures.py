"""A failed model request, said the same whichever HTTP client sent it.

The chat adapter sends its requests through ``openai`` or, before ``openai`` is imported,
through the HTTP client ``openai`` itself uses (``http_chat``). Each transport turns its own
errors into these, so one retry loop (``chat.ChatModel``) classifies them and every error
reads the same line whichever transport met it. No ``openai`` import.
"""

from __future__ import annotations

from typing import Any

from ._compat import readable


class StatusFailure(Exception):
    """The server answered an error status (4xx, 5xx).

    ``body``: the answer parsed as JSON, else its text; ``text``: the text as it came;
    ``message``: what ``openai`` says of it when the text is empty (``Error code: 503``).
    """

    def __init__(
        self, status_code: int, body: Any, text: str, headers: Any, message: str = ""
    ) -> None:
        super().__init__(message or f"Error code: {status_code}")
        self.status_code = status_code
        self.body = body
        self.text = text
        self.headers = headers
        self.message = message or f"Error code: {status_code}"

    def detail(self) -> str:
        """The server's own message, from an OpenAI-style body when there is one, made
        readable (a validation report keeps the line that names the bad field)."""
        body = self.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            if isinstance(inner, dict) and inner.get("message"):
                return readable(inner["message"])
            if isinstance(inner, str):
                return readable(inner)
            if isinstance(body.get("detail"), (str, list)):  # FastAPI's own error form
                return readable(str(body["detail"]))
        return readable(self.text or self.message)


class ConnectionFailure(Exception):
    """No answer came: the connection could not be made, or broke. ``cause``: the HTTP
    library's own words for it (``""`` when it had none)."""

    def __init__(self, cause: str = "") -> None:
        super().__init__(cause or "Connection error.")
        self.cause = cause


class TimeoutFailure(ConnectionFailure):
    """No answer within the timeout (a connection failure, as ``openai`` counts it)."""


class EndpointFailure(Exception):
    """The endpoint said something that is not a chat reply (an error event inside a
    stream, a body that is not a completion): not retried."""
