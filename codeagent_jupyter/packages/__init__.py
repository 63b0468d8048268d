"""Packages for a sandbox: the administrator's policy, pip run outside the sandbox to
resolve wheels (never a source distribution), httpx to fetch them into a shared cache, and
pypa's ``installer`` to unpack them into its read-only overlay folder.

The names are loaded on first use: checking the install flags (``policy``) must not import
the installer and its HTTP client, which would stand before the CLI's first model request.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .installer import Installer, Plan, Wheel
    from .pip import PackageError
    from .policy import PackagePolicy, parse_request

__all__ = ["Installer", "PackageError", "PackagePolicy", "Plan", "Wheel", "parse_request"]

_WHERE = {
    "Installer": "installer",
    "Plan": "installer",
    "Wheel": "installer",
    "PackageError": "pip",
    "PackagePolicy": "policy",
    "parse_request": "policy",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
