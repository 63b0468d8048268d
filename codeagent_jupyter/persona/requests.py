"""What a chat message asks of ``@codeagent``: a request, a command, and the notebook it
names (pure, no Jupyter AI import).

Jupyter AI 3.2 routes a message to the persona the chat input addresses (the persona
picker, or an ``@``-mention, which selects it), and the mention stays in the body; it is
taken off here, so the agent gets the request alone.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

REQUEST, NEW, STOP, APPROVE, DENY, HELP = "request", "new", "stop", "approve", "deny", "help"


@dataclasses.dataclass(frozen=True)
class Asked:
    """One message to the persona: what to do, and the text that goes with it."""

    kind: str
    text: str = ""
    remember: str = ""
    """``"session"`` with ``APPROVE``: allow the tool (or the host) for the rest of the
    session."""
    host: str = ""
    """For an answer about the network: the host it answers (``approve data.example.org``),
    named by the user, so an answer never lands on a host they did not read."""


def parse(body: str, mention: str) -> Asked:
    """The command in ``body`` once leading ``@mention``s of this persona are taken off.

    ``new REQUEST`` starts over; ``stop``, ``approve`` (``approve for session``), ``deny``
    and ``help`` are commands only as the whole message, as are the answers about a host
    the sandbox asks to reach: ``approve HOST`` (once), ``approve HOST for session``,
    ``deny HOST``; anything else is a request.
    """
    text = _strip_mentions(body, mention)
    words = text.split()
    first = words[0].lower() if words else ""
    whole = " ".join(w.lower() for w in words)
    if not words or whole in ("help", "/help", "?"):
        return Asked(HELP)
    if whole in ("stop", "cancel"):
        return Asked(STOP)
    if whole in ("approve", "yes", "approve for session", "approve for the session"):
        return Asked(APPROVE, remember="session" if "session" in whole else "")
    if whole in ("deny", "no", "reject"):
        return Asked(DENY)
    network = _NETWORK.match(whole)
    if network:
        kind = DENY if network["verb"] in ("deny", "block") else APPROVE
        remember = "session" if network["session"] and kind == APPROVE else ""
        return Asked(kind, remember=remember, host=network["host"].rstrip("."))
    if first == "new" and len(words) > 1:
        return Asked(NEW, text.split(None, 1)[1].strip())
    return Asked(REQUEST, text)


_NETWORK = re.compile(  # a host has a dot (or is an IPv6 literal): "approve it" is a request
    r"^(?P<verb>approve|allow|deny|block) (?P<host>\[[0-9a-f:.]+\]|[a-z0-9_-]+(\.[a-z0-9_-]+)+\.?)"
    r"(?P<session> for (the )?session)?$"
)


def _strip_mentions(body: str, mention: str) -> str:
    pattern = re.compile(rf"^\s*@{re.escape(mention)}\b:?", re.IGNORECASE)
    text = body
    while True:
        stripped = pattern.sub("", text, count=1)
        if stripped == text:
            return text.strip()
        text = stripped


def notebook_of(attachment_ids: list[str] | None, attachments: dict[str, Any]) -> str | None:
    """The first notebook attached to the message (its path from the server root), or None.

    ``attachments`` maps ids to jupyterlab_chat's attachment objects (a
    ``NotebookAttachment``, or a ``FileAttachment`` of an ``.ipynb``)."""
    for attachment_id in attachment_ids or []:
        found = attachments.get(attachment_id)
        path = getattr(found, "value", None)
        if isinstance(path, str) and path.endswith(".ipynb"):
            return path
    return None
