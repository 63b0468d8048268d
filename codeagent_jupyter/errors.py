"""Typed errors that say what happened, so edges can turn them into one-line messages."""

from __future__ import annotations


class CodeAgentError(Exception):
    """Base class: its message is meant to be shown to a person as it is, on one line."""


class ConfigError(CodeAgentError):
    """Bad settings or input from the user (exit code 2 / HTTP 400)."""


class ModelError(CodeAgentError):
    """The model endpoint failed for good (after retries) or answered nonsense."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class SandboxError(CodeAgentError):
    """The sandbox kernel could not be started or used."""


class IsolationUnavailable(SandboxError):
    """The machine cannot isolate the sandbox (no bubblewrap, no namespaces) and an unconfined
    sandbox was not chosen. ``reason`` says what is missing; each edge names its own way to
    choose an unconfined sandbox (``explain``), the message itself names the Python option."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(self.explain("allow_unconfined=True"))

    def explain(self, option: str, meaning: str = "") -> str:
        """The one-line message naming ``option`` (e.g. ``--isolation none``) as the choice."""
        then = f": {meaning}" if meaning else ""
        # The launcher's reason says what to do after "to isolate it here:"; an older one does not.
        fix = "or" if "to isolate it here:" in self.reason else "install bubblewrap, or"
        return f"{self.reason}; {fix} choose an unconfined sandbox explicitly ({option}){then}"


class ToolError(CodeAgentError):
    """A tool refused its input; the message goes back to the model as the result."""


class ReplayError(CodeAgentError):
    """A recorded session cannot be replayed (no transcript, or the run diverged)."""


class ToolArgumentError(ToolError):
    """A tool call's arguments do not match the tool's schema (counts as a malformed call)."""
