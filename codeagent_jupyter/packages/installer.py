"""``Installer``: a request for packages becomes wheels in a sandbox's overlay folder.

plan (names checked; resolved by ONE pip process against the kernel's environment and what
the overlay holds; every package of the plan checked against the policy; the sizes the
index states summed against ``max_mb`` before a byte of a wheel is fetched; each wheel
streamed by httpx into the shared cache under the sha256 it was resolved with) → the caller
asks for approval with the plan → install (each wheel unpacked into the overlay in this
process by pypa's ``installer``, nothing of it run: ``unpack``). ``restore`` reinstalls a
recorded set with no pip at all: each wheel from the cache by its recorded sha256, or
fetched again from its recorded URL and refused when its digest differs. A set recorded
before URLs were kept is fetched by pip, hash-pinned, as it was then.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from packaging.utils import canonicalize_name

from ..errors import ToolError
from . import fetch, pip
from .cache import WheelCache, digest
from .pip import PackageError
from .policy import PackagePolicy, parse_request
from .unpack import install_wheel
from .wheels import Plan, Wheel, recorded_wheel

MB = fetch.MB


def default_cache_dir() -> Path:
    """The user's wheel cache, shared by the server's (or the CLI's) sessions."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codeagent-jupyter" / "pip"


class Installer:
    """Fetches and installs wheels under ``policy`` for the interpreter ``python``."""

    def __init__(self, policy: PackagePolicy, *, python: str = sys.executable) -> None:
        self.policy = policy
        self.python = python
        self.cache_dir = Path(policy.cache_dir) if policy.cache_dir else default_cache_dir()
        self.cache = WheelCache(self.cache_dir)

    @property
    def limit(self) -> int:
        return int(self.policy.max_mb * MB)

    async def plan(self, requests: list[str], installed: Mapping[str, str]) -> Plan:
        """The wheels ``requests`` need beyond what is installed (``installed``: the
        overlay's name -> version); ``ToolError`` in one line when any is refused."""
        if not requests:
            raise ToolError("install_packages: name at least one package")
        if len(requests) > self.policy.max_per_call:
            raise ToolError(
                f"install_packages: at most {self.policy.max_per_call} packages per call"
            )
        wanted = [parse_request(text) for text in requests]
        for requirement in wanted:
            self._allowed(requirement.name)
        requested = {canonicalize_name(r.name) for r in wanted}
        kept = [f"{name}=={version}" for name, version in sorted(installed.items())]
        try:
            entries = await pip.resolve(
                [str(r) for r in wanted] + kept,
                self.policy.pip_options(),
                cache_dir=str(self._cache()),
                python=self.python,
            )
        except PackageError as e:
            raise self._unresolved(e) from None
        planned = []
        for entry in entries:
            meta = entry.get("metadata", {})
            name, version = canonicalize_name(meta.get("name", "")), str(meta.get("version", ""))
            self._allowed(name)
            if installed.get(name) == version:
                continue
            planned.append(
                Wheel(name, version, 0, _sha256(entry), "", "", name in requested, _url(entry))
            )
        return await self._fetch(planned) if planned else Plan([])

    async def restore(self, recorded: Iterable[Mapping[str, Any]], overlay: Path) -> list[Wheel]:
        """Install the recorded wheels into ``overlay`` again, without resolving: the same
        versions and the same files (each checked against its recorded sha256)."""
        wheels = [recorded_wheel(item) for item in recorded]
        for wheel in wheels:
            self._allowed(wheel.name)
        if not wheels:
            return []
        files: dict[str, Path] = {}
        unknown = []
        async with fetch.client() as http:
            for wheel in wheels:
                cached = self.cache.get(wheel.sha256)
                if cached is None and wheel.url and self._trusted(wheel):
                    try:
                        cached = await self._fetcher().fetch(
                            http, wheel.url, wheel.sha256, room=1 << 62, max_mb=self.policy.max_mb
                        )
                    except fetch.HashMismatch:
                        raise _changed(wheels) from None
                if cached is None:
                    unknown.append(wheel)
                else:
                    files[wheel.name] = cached
        if unknown:  # recorded before URLs were: pip fetches them, pinned to their hashes
            await self._restore_by_pip(unknown, wheels, overlay)
        await self._unpack(list(files.values()), overlay)
        return wheels

    async def install(self, plan: Plan, overlay: Path) -> None:
        """Unpack the plan's wheels into ``overlay`` (they stay in the cache)."""
        await self._unpack(list(plan.files.values()), overlay)

    # -- helpers ---------------------------------------------------------------------------

    async def _unpack(self, files: list[Path], overlay: Path) -> None:
        for path in files:
            await asyncio.to_thread(install_wheel, path, overlay, interpreter=self.python)

    async def _restore_by_pip(self, unknown: list[Wheel], all_: list[Wheel], overlay: Path) -> None:
        pins = [(w.name, w.version, w.sha256) for w in unknown]
        try:
            await pip.install_pinned(
                pins,
                self.policy.pip_options(),
                overlay,
                cache_dir=str(self._cache()),
                python=self.python,
            )
        except PackageError as e:
            if "HASH" in str(e).upper():
                raise _changed(all_) from None
            raise ToolError(f"install_packages: could not reinstall: {e}") from None

    def _cache(self) -> Path:
        self.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self.cache_dir

    def _fetcher(self) -> fetch.Fetcher:
        self._cache()
        return fetch.Fetcher(self.cache, self._local_roots())

    def _local_roots(self) -> list[Path]:
        """Folders a ``file:`` wheel may come from: the policy's, nothing else."""
        roots = [Path(f) for f in self.policy.find_links if "://" not in f]
        for source in self.policy.sources:
            if urlsplit(source).scheme == "file":
                roots.append(Path(url2pathname(urlsplit(source).path)))
        return roots

    def _indexes(self) -> list[str]:
        """The policy's http(s) indexes, the main one first."""
        urls = (self.policy.index_url, *self.policy.extra_index_urls)
        return [u for u in urls if urlsplit(u).scheme in ("http", "https")]

    def _trusted(self, wheel: Wheel) -> bool:
        """Whether a recorded URL may be fetched again: one of today's policy sources
        served it (a file of a wheel folder must still lie in one). Its hash is checked
        either way."""
        if urlsplit(wheel.url).scheme == "file":
            return True  # Fetcher checks the folder
        return wheel.index in self.policy.sources or self._source(wheel.url) in self.policy.sources

    def _allowed(self, name: str) -> None:
        refusal = self.policy.refusal(name)
        if refusal is not None:
            raise ToolError(f"install_packages: {refusal}")

    def _unresolved(self, error: PackageError) -> ToolError:
        missing = pip.missing_name(str(error))
        if missing is None:
            return ToolError(f"install_packages: pip could not resolve the request: {error}")
        return ToolError(
            f"install_packages: no wheel of {missing} for this Python on "
            f"{', '.join(self.policy.sources)}; source distributions are never built here "
            "(their build code would run outside the sandbox)"
        )

    async def _fetch(self, planned: list[Wheel]) -> Plan:
        """Sizes first (what the index states, or the cached file's), refused over the cap
        before any download; then each wheel not cached streamed in, the cap kept."""
        fetcher = self._fetcher()
        async with fetch.client() as http:
            sizes: dict[str, int] = {}
            listed: dict[str, str] = {}
            pages: dict[tuple[str, str], dict[str, int]] = {}
            for wheel in planned:
                filename = fetch.filename_of(wheel.url) if wheel.url else ""
                cached = self.cache.get(wheel.sha256, filename) if wheel.sha256 else None
                if cached is not None:
                    sizes[wheel.name] = cached.stat().st_size
                elif urlsplit(wheel.url).scheme == "file":
                    path = Path(url2pathname(urlsplit(wheel.url).path))
                    sizes[wheel.name] = path.stat().st_size if path.is_file() else 0
                else:
                    for index in self._indexes():  # the page that lists the file states it
                        if (index, wheel.name) not in pages:
                            found = await fetch.stated_sizes(http, index, wheel.name)
                            pages[(index, wheel.name)] = found
                        if filename in pages[(index, wheel.name)]:
                            sizes[wheel.name] = pages[(index, wheel.name)][filename]
                            listed[wheel.name] = index
                            break
            stated = sum(sizes.values())
            if stated > self.limit:
                raise fetch.over_limit(stated, self.policy.max_mb)
            plan = Plan([])
            used = 0
            for wheel in planned:
                filename = fetch.filename_of(wheel.url) if wheel.url else ""
                path = self.cache.get(wheel.sha256, filename) if wheel.sha256 else None
                if path is None:
                    if not wheel.url:
                        raise ToolError(f"install_packages: pip named no file for {wheel.name}")
                    room = max(self.limit - used, 0)
                    path = await fetcher.fetch(
                        http, wheel.url, wheel.sha256, room=room, max_mb=self.policy.max_mb
                    )
                size = path.stat().st_size
                used += size
                if used > self.limit:
                    raise fetch.over_limit(used, self.policy.max_mb)
                sha256 = wheel.sha256 or digest(path)
                plan.wheels.append(
                    Wheel(
                        wheel.name,
                        wheel.version,
                        size,
                        sha256,
                        listed.get(wheel.name) or self._source(wheel.url),
                        path.name,
                        wheel.requested,
                        wheel.url,
                    )
                )
                plan.files[wheel.name] = path
        return plan

    def _source(self, url: str) -> str:
        """Which of the policy's sources served ``url`` (as the approval names it): the
        one it lies under, else the index on the same host, else the URL's host."""
        parts = urlsplit(url)
        for source in self.policy.sources:
            base = source if "://" in source else Path(source).resolve().as_uri()
            if url and url.startswith(base.rstrip("/") + "/"):
                return source
        for source in self.policy.sources:
            there = urlsplit(source)
            if url and (there.scheme, there.netloc) == (parts.scheme, parts.netloc):
                return source
        if parts.netloc:
            return f"{parts.scheme}://{parts.netloc}"
        return self.policy.sources[0] if self.policy.sources else url


def _changed(wheels: list[Wheel]) -> ToolError:
    return ToolError(
        "install_packages: the index serves files that are not the recorded ones "
        f"(sha256 differs) for {', '.join(w.pin() for w in wheels)}; refusing them"
    )


def _url(entry: Mapping[str, Any]) -> str:
    return str(entry.get("download_info", {}).get("url", ""))


def _sha256(entry: Mapping[str, Any]) -> str:
    info = entry.get("download_info", {}).get("archive_info", {})
    hashes = info.get("hashes") or {}
    if "sha256" in hashes:
        return str(hashes["sha256"])
    text = str(info.get("hash", ""))
    return text.split("=", 1)[1] if text.startswith("sha256=") else ""
