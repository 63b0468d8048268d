"""``Installer``: a request for packages becomes wheels in a sandbox's overlay folder.

plan (names checked; walked by pip one level at a time, wheels by name only, against the
kernel's environment and what the overlay holds: ``walk``; every package of the plan
checked against the policy, a direct-URL dependency refused before pip meets it; the
sizes the index states summed against ``max_mb`` before a byte of a wheel is fetched; each
wheel streamed by httpx into the plan's staging folder under the sha256 it was resolved
with, and checked to be what it was picked as: ``identity``) → the caller asks for
approval with the plan → install (each wheel moved into the shared cache and unpacked
into the overlay in this process by pypa's ``installer``, nothing of it run: ``unpack``);
a plan refused or denied is discarded, its staged files with it. ``restore`` reinstalls a
recorded set: ``reinstall``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from packaging.utils import canonicalize_name

from ..errors import ToolError
from . import fetch, pip
from .cache import WheelCache, digest
from .door import Door, Through
from .identity import check_wheel
from .pip import PackageError
from .policy import PackagePolicy, parse_request
from .reinstall import restore_files
from .unpack import install_wheel
from .walk import walk
from .wheels import Plan, Wheel, recorded_wheel

MB = fetch.MB


def default_cache_dir() -> Path:
    """The user's wheel cache, shared by the server's (or the CLI's) sessions."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codeagent-jupyter" / "pip"


class Installer:
    """Fetches and installs wheels under ``policy`` for the interpreter ``python``;
    through ``door`` when there is one (a sandbox under ``--network policy``: a broker
    that lets through the policy's index hosts and nothing else)."""

    def __init__(
        self, policy: PackagePolicy, *, python: str = sys.executable, door: Door | None = None
    ) -> None:
        self.policy = policy
        self.python = python
        self.through = Through(door)
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
        async with self.through.call():
            return await self._plan(wanted, requested, kept, installed)

    async def _plan(
        self, wanted: list[Any], requested: set[str], kept: list[str], installed: Mapping[str, str]
    ) -> Plan:
        try:
            entries = await walk([str(r) for r in wanted] + kept, self._pick, self._allowed)
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
        """Install the recorded wheels into ``overlay`` again, without resolving: by name,
        version and sha256 only, from the cache or today's policy sources (a recorded URL
        or index is not used), each checked to be the package and version recorded."""
        wheels = [recorded_wheel(item) for item in recorded]
        for wheel in wheels:
            self._allowed(wheel.name)
        if not wheels:
            return []
        self._cache()
        async with self.through.call():
            files = await restore_files(
                wheels,
                self.cache,
                self.policy,
                python=self.python,
                max_file_bytes=self.limit,
                proxy=self.through.proxy,
            )
        await self._unpack([files[w.name] for w in wheels], overlay)
        return wheels

    async def install(self, plan: Plan, overlay: Path) -> None:
        """Move the plan's staged wheels into the shared cache (an approved install is the
        only way into it) and unpack them into ``overlay``."""
        for wheel in plan.wheels:
            path = plan.files[wheel.name]
            if plan.staging is not None and path.parent == plan.staging:
                plan.files[wheel.name] = self.cache.put(
                    path, wheel.sha256, path.name, [wheel.index]
                )
        plan.discard()
        await self._unpack(list(plan.files.values()), overlay)

    def refuse_writable_sources(self, roots: Iterable[Path | None]) -> None:
        """``ToolError`` when a local source of the policy overlaps a place the sandbox can
        write (``roots``): nothing is installed from there."""
        refusal = self.policy.writable_source(roots)
        if refusal is not None:
            raise ToolError(f"install_packages: {refusal}")

    # -- helpers ---------------------------------------------------------------------------

    async def _unpack(self, files: list[Path], overlay: Path) -> None:
        for path in files:
            await asyncio.to_thread(install_wheel, path, overlay, interpreter=self.python)

    async def _pick(self, requirements: list[str]) -> Any:
        """pip's picks for ``requirements`` (names and versions only), bounded by the cap."""
        return await pip.resolve(
            requirements,
            self.policy.pip_options(),
            max_file_bytes=self.limit,
            python=self.python,
            proxy=self.through.proxy,
        )

    def _cache(self) -> Path:
        self.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self.cache_dir

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

    def _allowed(self, name: str) -> None:
        refusal = self.policy.refusal(name)
        if refusal is not None:
            raise ToolError(f"install_packages: {refusal}")

    def _unresolved(self, error: PackageError) -> ToolError:
        if "File too large" in str(error):  # pip read a wheel past the cap: see pip.py
            return fetch.OverLimit(
                "install_packages: the index serves a file over this server's limit of "
                f"{self.policy.max_mb:g} MB"
            )
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
        staging = Path(tempfile.mkdtemp(prefix="plan-", dir=self.cache.staging()))
        try:
            return await self._fetch_into(planned, staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    async def _fetch_into(self, planned: list[Wheel], staging: Path) -> Plan:
        fetcher = fetch.Fetcher(staging, self._local_roots())
        async with fetch.client(self.through.proxy) as http:
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
            plan = Plan([], staging=staging)
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
                check_wheel(path, wheel.name, wheel.version)
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


def _url(entry: Mapping[str, Any]) -> str:
    return str(entry.get("download_info", {}).get("url", ""))


def _sha256(entry: Mapping[str, Any]) -> str:
    info = entry.get("download_info", {}).get("archive_info", {})
    hashes = info.get("hashes") or {}
    if "sha256" in hashes:
        return str(hashes["sha256"])
    text = str(info.get("hash", ""))
    return text.split("=", 1)[1] if text.startswith("sha256=") else ""
