"""The one error type the session layer raises for clients: an HTTP status and a sentence."""

from __future__ import annotations


class ApiError(Exception):
    """A request the server refuses; handlers send it as ``{"message": ...}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
