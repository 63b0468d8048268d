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


def head_tail(text: str, limit: int) -> str:
    """Return ``text`` if it fits in ``limit`` characters, else head + marker + tail.

    Head and tail are cut at line breaks where one is near, so the model sees whole lines;
    the marker line says how many characters were left out.
    """
    if len(text) <= limit:
        return text
    half = limit // 2
    head, tail = text[:half], text[-half:] if half else ""
    if "\n" in head[half // 2 :]:
        head = head[: head.rfind("\n")]
    if "\n" in tail[: half // 2]:
        tail = tail[tail.find("\n") + 1 :]
    elided = len(text) - len(head) - len(tail)
    return f"{head}\n[… {elided} characters elided …]\n{tail}"
