"""Tool hooks (see ``base``): plugins around every tool call, from entry points."""

from .base import GROUP, Allow, Deny, HookChain, Modify, ToolCall, Verdict, load_hook

__all__ = ["GROUP", "Allow", "Deny", "HookChain", "Modify", "ToolCall", "Verdict", "load_hook"]
