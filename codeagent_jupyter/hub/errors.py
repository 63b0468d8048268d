"""Refusals of the gateway, as OpenAI-style error bodies the ``openai`` client surfaces.

Each message is one line meant for the student, shown by the panel as it is.
"""

from __future__ import annotations

from typing import Any


class GatewayError(Exception):
    """A refusal: HTTP ``status``, OpenAI error ``kind`` (type) and ``code``, one-line message."""

    def __init__(self, status: int, message: str, *, kind: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.code = code

    @property
    def headers(self) -> dict[str, str]:
        """``x-should-retry: false`` (read by openai clients) unless waiting may help."""
        return (
            {}
            if self.code in ("rate_limit_exceeded", "upstream_timeout")
            else {"x-should-retry": "false"}
        )

    def body(self) -> dict[str, Any]:
        error = {"message": self.message, "type": self.kind, "param": None, "code": self.code}
        return {"error": error}


def ai_off() -> GatewayError:
    """The same words whether the class or the student's group was switched off."""
    return GatewayError(
        403,
        "AI is switched off for this class by the instructor",
        kind="permission_error",
        code="ai_switched_off",
    )


def model_not_allowed(model: str) -> GatewayError:
    return GatewayError(
        403,
        f"model {model} is not allowed in this class",
        kind="permission_error",
        code="model_not_allowed",
    )


def quota_used_up(what: str, limit: int, reset: str | None) -> GatewayError:
    """429 with type ``insufficient_quota`` (as OpenAI answers): waiting does not help."""
    tail = f" (resets at {reset})" if reset else ""
    return GatewayError(
        429,
        f"{what} token quota of {limit} used up{tail}",
        kind="insufficient_quota",
        code="insufficient_quota",
    )


def too_many_at_once(limit: int) -> GatewayError:
    return GatewayError(
        429,
        f"at most {limit} model request(s) at once per student; try again in a moment",
        kind="rate_limit_error",
        code="rate_limit_exceeded",
    )
