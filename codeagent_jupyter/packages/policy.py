"""The administrator's package policy, and the names a request may carry.

``c.CodeAgent.packages`` (server) or ``--allow-install`` with ``--index-url`` /
``--find-links`` (CLI) become one ``PackagePolicy``. A requested name is a PEP 508
requirement and nothing else: a URL, a path or a pip option in its place would let the
model choose where code comes from, so each is refused in one line. Names are compared in
their normalised form (PEP 503); the deny list wins over the allow list.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..errors import ConfigError, ToolError

APPROVALS = ("ask", "auto")
DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass(frozen=True)
class PackagePolicy:
    """Where packages come from, which ones may come, how much, and who approves."""

    index_url: str = DEFAULT_INDEX
    """The package index (PEP 503 simple API); "" for a wheel folder alone."""
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    """Local wheel folders (or pages of links), e.g. for an offline classroom."""
    allow: tuple[str, ...] = ("*",)
    """fnmatch patterns on normalised names; a package must match one."""
    deny: tuple[str, ...] = ()
    """fnmatch patterns on normalised names; a match is refused even if allowed."""
    max_mb: float = 500.0
    """Most megabytes of wheels one call may download."""
    approval: str = "ask"
    """``ask``: the user approves each install (name, version, size, index); ``auto``."""
    max_per_call: int = 10
    """Most packages one call may name."""
    cache_dir: str = ""
    """The shared wheel cache ("" for the user's cache folder); never seen by a sandbox."""
    _extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PackagePolicy:
        """A policy from ``c.CodeAgent.packages``; ``ConfigError`` naming the bad key."""
        known = {
            "index_url",
            "extra_index_urls",
            "find_links",
            "allow",
            "deny",
            "max_mb",
            "approval",
            "max_per_call",
            "cache_dir",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"packages: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
            )
        values: dict[str, Any] = {}
        for key in ("index_url", "approval", "cache_dir"):
            if key in data:
                if not isinstance(data[key], str):
                    raise ConfigError(f"packages: {key!r} must be a string")
                values[key] = data[key]
        for key in ("extra_index_urls", "find_links", "allow", "deny"):
            if key in data:
                items = data[key]
                if isinstance(items, str) or not isinstance(items, Iterable):
                    raise ConfigError(f"packages: {key!r} must be a list of strings")
                items = tuple(items)
                if not all(isinstance(i, str) for i in items):
                    raise ConfigError(f"packages: {key!r} must be a list of strings")
                values[key] = items
        for key, kind in (("max_mb", float), ("max_per_call", int)):
            if key in data:
                value = data[key]
                if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                    raise ConfigError(f"packages: {key!r} must be a positive number")
                values[key] = kind(value)
        policy = cls(**values)
        policy.check()
        return policy

    def check(self) -> None:
        """Raise ``ConfigError`` for settings that cannot work."""
        if self.approval not in APPROVALS:
            raise ConfigError(
                f"packages: 'approval' must be 'ask' or 'auto', not {self.approval!r}"
            )
        for url in (self.index_url, *self.extra_index_urls):
            if url and urlsplit(url).scheme not in ("http", "https", "file"):
                raise ConfigError(f"packages: index {url!r} must be an http(s) or file URL")
        if not self.index_url and not self.find_links:
            raise ConfigError("packages: give an 'index_url' or a 'find_links' wheel folder")
        for folder in self.find_links:
            if "://" not in folder and not Path(folder).is_dir():
                raise ConfigError(f"packages: find_links {folder!r} is not a folder")

    @property
    def sources(self) -> list[str]:
        """Where packages come from, as the approval and the notebook say it."""
        return [u for u in (self.index_url, *self.extra_index_urls) if u] + list(self.find_links)

    def local_folders(self) -> list[Path]:
        """The local folders packages come from: ``find_links`` folders and ``file:``
        indexes (links resolved)."""
        folders = []
        for source in (self.index_url, *self.extra_index_urls, *self.find_links):
            parts = urlsplit(source)
            if parts.scheme == "file":
                folders.append(Path(url2pathname(parts.path)))
            elif source and "://" not in source:
                folders.append(Path(source))
        return [Path(os.path.realpath(f)) for f in folders]

    def writable_source(self, roots: Iterable[Path | None]) -> str | None:
        """Why a local source lies where a sandbox can write (one of ``roots``: its
        workspace, its kernel folder) or holds such a place, else None: code in the sandbox
        could plant a wheel there (or a source tree one names), and the host would install
        it."""
        real = [Path(os.path.realpath(r)) for r in roots if r is not None]
        for folder in self.local_folders():
            for root in real:
                if folder.is_relative_to(root) or root.is_relative_to(folder):
                    return (
                        f"the wheel folder {str(folder)[:200]} overlaps {str(root)[:200]}, "
                        "where the sandbox can write (it could plant wheels there); use a "
                        "folder outside the workspace"
                    )
        return None

    def pip_options(self) -> list[str]:
        """pip's index options for exactly these sources (and no other)."""
        options = ["--index-url", self.index_url] if self.index_url else ["--no-index"]
        for url in self.extra_index_urls:
            options += ["--extra-index-url", url]
        for folder in self.find_links:
            options += ["--find-links", folder]
        return options

    def refusal(self, name: str) -> str | None:
        """Why ``name`` (any spelling) may not be installed, or None when it may."""
        canonical = canonicalize_name(name)
        for pattern in self.deny:
            if fnmatch.fnmatchcase(canonical, _pattern(pattern)):
                return f"{canonical} is on this server's deny list ({pattern!r})"
        if any(fnmatch.fnmatchcase(canonical, _pattern(p)) for p in self.allow):
            return None
        return f"{canonical} is not on this server's allow list"


def _pattern(pattern: str) -> str:
    """A name pattern normalised as names are (lower case, runs of ``-_.`` as ``-``)."""
    return re.sub(r"[-_.]+", "-", pattern.lower())


def parse_request(text: Any) -> Requirement:
    """One requested package as a PEP 508 requirement (name, extras, version specifier);
    ``ToolError`` in one line for anything else (a URL, a path, an option, a marker)."""
    if not isinstance(text, str) or not text.strip():
        raise ToolError("install_packages: each package must be a name such as 'statsmodels'")
    shown = text.strip()[:80]
    if shown.startswith("-"):
        raise ToolError(f"install_packages: {shown!r} is a pip option, not a package name")
    if any(mark in text for mark in ("://", "/", "\\", "@")) or text.strip().startswith("."):
        raise ToolError(
            f"install_packages: {shown!r} is a URL or a path; give a package name "
            "(from the server's index), e.g. 'statsmodels>=0.14'"
        )
    try:
        requirement = Requirement(text.strip())
    except InvalidRequirement:
        raise ToolError(
            f"install_packages: {shown!r} is not a package name with an optional version, "
            "e.g. 'statsmodels' or 'statsmodels>=0.14'"
        ) from None
    if requirement.url or requirement.marker is not None:
        raise ToolError(f"install_packages: {shown!r}: give only a name and a version")
    return requirement
