"""The error the session layer raises for clients: tornado's ``HTTPError`` with a sentence.

``APIHandler.write_error`` sends it as ``{"message": <the sentence>, "reason": <the status's
phrase>}``; this subclass only fills the phrase in and keeps the sentence as written.
"""

from __future__ import annotations

from http.client import responses

from tornado.web import HTTPError


class ApiError(HTTPError):
    """A request the server refuses, with the status the caller can act on."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message, reason=responses.get(status, "Unknown"))

    @property
    def log_message(self) -> str:
        """The sentence as written (tornado would double a ``%`` in it for old formatters)."""
        return self._log_message or ""

    @property
    def status(self) -> int:
        return self.status_code

    @property
    def message(self) -> str:
        return self.log_message

    def __str__(self) -> str:
        return self.message
