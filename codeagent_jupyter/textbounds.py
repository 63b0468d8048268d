"""Bounding text for a model: keep the head and the tail, say how much was left out.

The end of an output (the last traceback line, the final result) matters as much as its
start, so long text keeps both and names the elided amount, instead of being cut off.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def strip_ansi(text: str) -> str:
    """Remove terminal colour and cursor codes (tracebacks from IPython carry many)."""
    return _ANSI.sub("", text)


def head_tail(text: str, limit: int, *, unit: str = "characters") -> str:
    """Return ``text`` if it fits in ``limit`` characters, else head + marker + tail.

    The result is at most ``limit`` characters plus the one marker line.
    """
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    elided = len(text) - head - tail
    return f"{text[:head]}\n[… {elided} {unit} elided …]\n{text[-tail:] if tail else ''}"
