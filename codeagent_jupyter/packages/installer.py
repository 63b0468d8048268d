"""``Installer``: a request for packages becomes wheels in a sandbox's overlay folder.

plan (names checked, resolved by pip against the kernel's environment and what the overlay
holds, every package of the plan checked against the policy, the wheels downloaded and
their size and hashes known) → the caller asks for approval with the plan → install (pip
unpacks exactly those files into the overlay). ``restore`` reinstalls a recorded set in
one pip call, the same files or none: pip refuses a wheel whose hash is not the recorded
one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name, parse_wheel_filename

from ..errors import ToolError
from . import pip
from .pip import PackageError
from .policy import PackagePolicy, parse_request

MB = 1024 * 1024


@dataclass(frozen=True)
class Wheel:
    """One package of a plan: what the approval shows and the notebook records."""

    name: str
    version: str
    size_bytes: int
    sha256: str
    index: str
    filename: str
    requested: bool = True

    def pin(self) -> str:
        return f"{self.name}=={self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "index": self.index,
            "filename": self.filename,
            "requested": self.requested,
        }


@dataclass
class Plan:
    """Wheels downloaded for one call, waiting in a staging folder outside every sandbox."""

    wheels: list[Wheel]
    staging: Path
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def size_bytes(self) -> int:
        return sum(w.size_bytes for w in self.wheels)

    def describe(self) -> list[dict[str, Any]]:
        """What the approval shows: package, version, size and index of each wheel."""
        return [
            {"name": w.name, "version": w.version, "size_bytes": w.size_bytes, "index": w.index}
            for w in self.wheels
        ]

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


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
            planned.append((name, version, entry))
        if not planned:
            return Plan([], Path(tempfile.mkdtemp(prefix="codeagent-wheels-")))
        plan = await self._fetch(
            [(n, v, _url(e), _sha256(e), n in requested) for n, v, e in planned]
        )
        limit = self.policy.max_mb * MB
        if plan.size_bytes > limit:
            plan.discard()
            raise ToolError(
                f"install_packages: the download is {plan.size_bytes / MB:.1f} MB, over this "
                f"server's limit of {self.policy.max_mb:g} MB"
            )
        return plan

    async def restore(self, recorded: Iterable[Mapping[str, Any]], overlay: Path) -> list[Wheel]:
        """Install the recorded wheels into ``overlay`` again, without resolving: the same
        versions, and the same files (pip checks each against its recorded sha256)."""
        wheels = []
        for item in recorded:
            name = canonicalize_name(str(item.get("name", "")))
            version, sha256 = str(item.get("version", "")), str(item.get("sha256", ""))
            self._allowed(name)
            if not version or not sha256:
                raise ToolError(f"install_packages: {name} was recorded without version or hash")
            size = item.get("size_bytes")
            size = size if isinstance(size, int) and not isinstance(size, bool) else 0
            index = str(item.get("index", ""))
            filename = str(item.get("filename", ""))
            wheels.append(Wheel(name, version, size, sha256, index, filename))
        if not wheels:
            return []
        pins = [(w.name, w.version, w.sha256) for w in wheels]
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
                raise ToolError(
                    "install_packages: the index serves files that are not the recorded ones "
                    f"(sha256 differs) for {', '.join(w.pin() for w in wheels)}; refusing them"
                ) from None
            raise ToolError(f"install_packages: could not reinstall: {e}") from None
        return wheels

    async def install(self, plan: Plan, overlay: Path) -> None:
        """Unpack the plan's wheels into ``overlay``; the staging folder is removed."""
        try:
            if plan.wheels:
                await pip.install(list(plan.files.values()), overlay, python=self.python)
        finally:
            plan.discard()

    # -- helpers ---------------------------------------------------------------------------

    def _cache(self) -> Path:
        self.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self.cache_dir

    def _allowed(self, name: str) -> None:
        refusal = self.policy.refusal(name)
        if refusal is not None:
            raise ToolError(f"install_packages: {refusal}")

    def _unresolved(self, error: PackageError) -> ToolError:
        missing = missing_name = pip.missing_name(str(error))
        if missing_name is None:
            return ToolError(f"install_packages: pip could not resolve the request: {error}")
        return ToolError(
            f"install_packages: no wheel of {missing} for this Python on "
            f"{', '.join(self.policy.sources)}; source distributions are never built here "
            "(their build code would run outside the sandbox)"
        )

    async def _fetch(self, items: list[tuple[str, str, str, str, bool]]) -> Plan:
        """Download ``(name, version, url, sha256, requested)`` into a fresh staging folder,
        checking each file's hash against the expected one (when known)."""
        staging = Path(tempfile.mkdtemp(prefix="codeagent-wheels-", dir=self._cache()))
        plan = Plan([], staging)
        try:
            files = await pip.download(
                [f"{name}=={version}" for name, version, *_ in items],
                self.policy.pip_options(),
                staging,
                cache_dir=str(self._cache()),
                python=self.python,
            )
            by_name = {canonicalize_name(parse_wheel_filename(f.name)[0]): f for f in files}
            for name, version, url, expected, requested in items:
                path = by_name.get(name)
                if path is None:
                    raise ToolError(f"install_packages: pip did not fetch a wheel of {name}")
                digest = _digest(path)
                if expected and digest != expected:
                    raise ToolError(
                        f"install_packages: {path.name} has sha256 {digest[:12]}…, not the "
                        f"index's {expected[:12]}…; refusing it"
                    )
                wheel = Wheel(
                    name,
                    version,
                    path.stat().st_size,
                    digest,
                    self._source(url),
                    path.name,
                    requested,
                )
                plan.wheels.append(wheel)
                plan.files[name] = path
        except PackageError as e:
            plan.discard()
            raise ToolError(f"install_packages: {e}") from None
        except BaseException:
            plan.discard()
            raise
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


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()
