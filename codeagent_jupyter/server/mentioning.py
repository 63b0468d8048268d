"""The server's side of ``@``-mentions: files and cells resolved beneath the notebook's
folder, off the event loop, before a session or a run starts; an unknown mention is a 400
with its one line (``core.mentioned``)."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from ..core.mentioned import UnknownMention, resolve
from .errors import ApiError


async def mentioned(
    text: str, workdir: Path, notebook: Any | None, variables: list[str], *, strict: bool = True
) -> str:
    """The request's ``## Mentioned`` section ("" without mentions); 400 for one that
    names nothing, or a path that leaves the folder or passes through a symlink (not
    ``strict``: such a mention stays text, as in a chat)."""
    try:
        return await asyncio.to_thread(
            functools.partial(resolve, strict=strict), text, workdir, notebook, variables
        )
    except UnknownMention as e:
        raise ApiError(400, f"unknown mention {e}") from None


def with_mentions(text: str, section: str) -> str:
    """The text the model is given: the user's, then what it mentions."""
    return f"{text}\n\n{section}" if section else text
