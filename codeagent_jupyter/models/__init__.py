"""Model adapters: an OpenAI-compatible endpoint, or recorded turns for offline replay.

``OpenAIChatModel`` and ``resolve_settings`` are loaded on first use, so code that only
replays never imports ``openai``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .replay import ReplayModel

if TYPE_CHECKING:
    from .openai_chat import OpenAIChatModel, resolve_settings

__all__ = ["OpenAIChatModel", "ReplayModel", "resolve_settings"]


def __getattr__(name: str) -> Any:
    if name in ("OpenAIChatModel", "resolve_settings"):
        from . import openai_chat

        return getattr(openai_chat, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
