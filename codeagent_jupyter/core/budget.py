"""What the loop adds to a request beyond the tools' own results: the budget left, and the
images a seeing model is shown.

Both go where the conversation grows (ahead of the run's request in its user message, at
the end of the step's last tool message, a user message after the step's results), before
those are first sent, and are never rewritten, so every
request still starts with the previous one byte for byte and the provider's prompt cache
holds. A model that knows its budget can plan how much to do per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import AgentConfig

MAX_IMAGES_PER_STEP = 4
"""Images one step may show the model, whatever its tools produced."""
MAX_IMAGE_CHARS_PER_STEP = 190_000
"""Characters of image data (base64 URLs) one step may add to the request (~200 KB)."""


def bounded(parts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first images of ``parts`` that fit ``MAX_IMAGES_PER_STEP`` and
    ``MAX_IMAGE_CHARS_PER_STEP`` (the first one always, the tools bound each)."""
    kept: list[dict[str, Any]] = []
    used = 0
    for part in parts[:MAX_IMAGES_PER_STEP]:
        size = len(str(part.get("image_url", {}).get("url", "")))
        if kept and used + size > MAX_IMAGE_CHARS_PER_STEP:
            break
        kept.append(part)
        used += size
    return kept


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2g}M"
    return f"{n / 1000:.3g}k" if n >= 1000 else str(n)


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def budget_line(config: AgentConfig, steps_taken: int, elapsed_s: float, tokens: int) -> str:
    """``[budget left: 27 of 30 steps, 28 min, 1.9M tokens]``: what the run may still use
    after ``steps_taken`` model calls, ``elapsed_s`` seconds and ``tokens`` tokens."""
    steps = max(0, config.max_steps - steps_taken)
    wall = _duration(config.max_wall_s - elapsed_s)
    left = _tokens(max(0, config.max_tokens - tokens))
    return f"[budget left: {steps} of {config.max_steps} steps, {wall}, {left} tokens]"


def images_message(parts: Sequence[dict[str, Any]], offered: int) -> dict[str, Any] | None:
    """The user message that shows a seeing model this step's images (``parts``, already
    bounded to ``MAX_IMAGES_PER_STEP``); ``offered`` is how many the tools produced."""
    if not parts:
        return None
    more = f" (the first {len(parts)} of {offered})" if offered > len(parts) else ""
    noun = "image" if len(parts) == 1 else "images"
    text = f"The {noun} displayed by the tool results above{more}, in order:"
    return {"role": "user", "content": [{"type": "text", "text": text}, *parts]}
