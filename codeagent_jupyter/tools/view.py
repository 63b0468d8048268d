"""Sight: the images a cell displays, and ``view_image``, as parts a seeing model receives.

A model that can see gets each image as an ``image_url`` part (a ``data:`` URL) of a user
message right after the step's tool results (``ToolOutcome.images``; the loop adds the
message). Images are bounded before they leave: at most ``MAX_PER_CALL`` per call (the loop
keeps ``MAX_PER_STEP`` per step), the longest side scaled down to ``MAX_SIDE`` pixels, PNG
whenever it fits ``MAX_IMAGE_BYTES`` (JPEG artefacts blur a chart's thin lines and small
text), JPEG otherwise, and none over ``MAX_IMAGE_BYTES``. A model that cannot see is
told, in the placeholder, what it can do instead.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

from ..core.outcome import ToolOutcome
from ..errors import ToolArgumentError, ToolError
from ..traits import ToolTraits
from ..util.confined import TooLargeError, Workspace
from ..util.textbounds import head_tail
from ._schema import Tool, obj

MAX_SIDE = 1024
MAX_PER_CALL = 3
MAX_PER_STEP = 4
MAX_IMAGE_BYTES = 150_000
"""Encoded bytes of one image part at most (before base64): about 200 KB in the request."""
MAX_SOURCE_BYTES = 30_000_000
IMAGE_MIMES = ("image/png", "image/jpeg")

SHOWN_HINT = "shown to you below"
BLIND_HINT = (
    "not shown: this model receives no images. Check a chart from its data (print the "
    "values plotted, axis limits, len of each series) rather than by looking"
)


def _part(mime: str, data: bytes) -> dict[str, Any]:
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def prepare(data: bytes) -> tuple[dict[str, Any], str] | None:
    """One ``image_url`` part for an image's bytes and a note of its size as sent
    (``800x600 PNG, 41 KB``); None when it cannot be read or stays too big."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            original = img.size
            scaled = img.copy()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    if max(scaled.size) > MAX_SIDE:
        scaled.thumbnail((MAX_SIDE, MAX_SIDE))
    png = _encode(scaled, "PNG")
    mime, body = ("image/png", png)
    if len(png) > MAX_IMAGE_BYTES:  # JPEG only when lossless does not fit
        mime, body = ("image/jpeg", _encode(scaled.convert("RGB"), "JPEG", quality=85))
    if len(body) > MAX_IMAGE_BYTES:
        return None
    w, h = scaled.size
    size = f"{w}x{h}" + (f", scaled from {original[0]}x{original[1]}" if original != (w, h) else "")
    return _part(mime, body), f"{size} {mime.split('/')[1].upper()}, {len(body) // 1024} KB"


def _encode(img: Any, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    if fmt == "PNG" and img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        img = img.convert("RGBA")
    img.save(out, fmt, optimize=True, **options)
    return out.getvalue()


def images_of(
    outputs: list[dict[str, Any]], limit: int = MAX_PER_CALL
) -> tuple[list[dict[str, Any]], int]:
    """The ``image_url`` parts of the first ``limit`` PNG/JPEG images in nbformat
    ``outputs``, and how many images there are."""
    parts: list[dict[str, Any]] = []
    total = 0
    for out in outputs:
        data = out.get("data") or {}
        mime = next((m for m in IMAGE_MIMES if m in data), None)
        if mime is None or out.get("output_type") not in ("display_data", "execute_result"):
            continue
        total += 1
        if len(parts) >= limit:
            continue
        value = data[mime]
        raw = "".join(value) if isinstance(value, list) else str(value)
        try:
            decoded = base64.b64decode(raw, validate=False)
        except (binascii.Error, ValueError):
            continue
        prepared = prepare(decoded)
        if prepared is not None:
            parts.append(prepared[0])
    return parts, total


def view_image(ws: Workspace, path: str) -> tuple[dict[str, Any], str]:
    """A workspace image, read through the confined workspace, as one part and its note."""
    if not path.strip():
        raise ToolArgumentError("view_image needs an image path relative to the workspace")
    try:
        data = ws.read_bytes(path, MAX_SOURCE_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory") from None
    except TooLargeError as e:
        raise ToolError(f"{path} is too big to view ({e.size} bytes)") from None
    prepared = prepare(data)
    if prepared is None:
        raise ToolError(
            f"{path} is not an image this tool can show (PNG, JPEG, GIF, BMP, WebP, TIFF), "
            f"or it stays over {MAX_IMAGE_BYTES // 1000} KB at {MAX_SIDE} px"
        )
    return prepared


async def handle_view_image(box: Any, *, path: str, on_output: Any, limit: int) -> ToolOutcome:
    """``view_image``'s handler (a ``ToolBox`` tool)."""
    part, note = await box.confined(view_image, path)
    rel = Workspace.relpath(path)
    return ToolOutcome(text=head_tail(f"{rel}: {note}; {SHOWN_HINT}", limit), images=[part])


SEEING_PROMPT = (
    "Images: the plots and images a cell displays are shown to you after the tool results "
    "(a few per step, scaled to at most 1024 px), and view_image shows an image file of the "
    "workspace. The user sees them too."
)
BLIND_PROMPT = (
    "Images: you do not receive images. A plot reaches you as a placeholder such as "
    "[image/png 640x480] while the user sees it; check a chart from its data (the values "
    "plotted, axis limits, series lengths), not by looking."
)
IMAGES_RANK = 1000
"""The images line comes last under "How to work", whichever it is."""

VIEW_IMAGE = Tool(
    "view_image",
    "Look at an image file of the workspace (PNG, JPEG, GIF, WebP…), e.g. a chart a script "
    "saved: it is shown to you after the tool results. Size cap: an image whose longer side "
    f"is over {MAX_SIDE} px is scaled down to {MAX_SIDE} px, so enlarging a crop "
    "shows no more detail; crop the region you need at its own pixels instead. Sent as PNG "
    "when it fits (lossless), else as JPEG.",
    obj(["path"], path={"type": "string", "description": "Path relative to the workspace root."}),
    handle_view_image,
    ToolTraits("workspace"),
    prompt=SEEING_PROMPT,
    prompt_rank=IMAGES_RANK,
)
"""Offered only to a model that sees (``vision``); its prompt line replaces ``BLIND_PROMPT``."""
