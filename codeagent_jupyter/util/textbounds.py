"""Bounding text for a model: keep the head and the tail, say how much was left out.

The end of an output (the last traceback line, the final result) matters as much as its
start, so long text keeps both and names the elided amount, instead of being cut off.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def strip_ansi(text: str) -> str:
    """Remove terminal colour and cursor codes (tracebacks from IPython carry many)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


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


def _png_size(b64: str) -> tuple[int, int] | None:
    try:
        head = base64.b64decode(b64[:44])
    except (binascii.Error, ValueError):
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n" or len(head) < 24:
        return None
    return struct.unpack(">II", head[16:24])


def _render_data(data: dict[str, Any], image_hint: str = "") -> str:
    hint = f": {image_hint}" if image_hint else ""
    for mime in data:
        if mime.startswith("image/"):
            size = _png_size(data[mime]) if mime == "image/png" else None
            shown = f"{mime} {size[0]}x{size[1]}" if size else f"{mime} output"
            return f"[{shown}{hint}]"
    if "text/plain" in data:
        return strip_ansi(str(data["text/plain"]))
    mime = next(iter(data), "unknown")
    return f"[{mime} output]"


def render_outputs(outputs: list[dict[str, Any]], *, image_hint: str = "") -> str:
    """Plain text of nbformat outputs for a model: streams, tracebacks and plain values as
    text (ANSI stripped), images and HTML as short placeholders (``image_hint`` after an
    image's). Unbounded: bound it with ``head_tail``."""
    parts: list[str] = []
    for out in outputs:
        kind = out["output_type"]
        if kind == "stream":
            parts.append(strip_ansi(out["text"]))
        elif kind == "error":
            lines = out.get("traceback") or [f"{out['ename']}: {out['evalue']}"]
            parts.append(strip_ansi("\n".join(lines)))
        else:
            parts.append(_render_data(out.get("data", {}), image_hint))
    text = "".join(p if p.endswith("\n") else p + "\n" for p in parts if p)
    return text.rstrip("\n")
