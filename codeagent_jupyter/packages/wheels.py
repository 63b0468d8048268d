"""What an install is made of: the wheels of a plan, as the approval shows them and the
session notebook records them (and reads them back for a resume)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..errors import ToolError


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
    url: str = ""
    """Where it was fetched from: a resume fetches it there again when the cache lacks it."""

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
            "url": self.url,
        }


@dataclass
class Plan:
    """Wheels fetched for one call, waiting outside every sandbox: in the shared cache (a
    file it had already) or in the plan's own ``staging`` folder (a new download)."""

    wheels: list[Wheel]
    files: dict[str, Path] = field(default_factory=dict)
    staging: Path | None = None

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
        """Remove what was downloaded for the plan and not installed: only an installed
        wheel stays in the shared cache (a refused or denied one leaves no byte there)."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None


_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,198}[a-z0-9])?$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_VERSION = re.compile(r"^[A-Za-z0-9.!+_-]{1,64}$")


def recorded_wheel(item: Mapping[str, Any]) -> Wheel:
    """A wheel as a session notebook recorded it (older notebooks have no ``url``). The
    notebook may have been edited by anyone: name, version and sha256 must be exactly
    that (a version is a PEP 440 one, never text that a requirement line would read as
    an option or a URL), else ``ToolError``."""
    name = canonicalize_name(str(item.get("name", "")))
    version, sha256 = str(item.get("version", "")), str(item.get("sha256", "")).lower()
    if not version or not sha256:
        raise ToolError(f"install_packages: {name[:80]} was recorded without version or hash")
    try:
        plain = bool(_VERSION.match(version)) and bool(Version(version))
    except InvalidVersion:
        plain = False
    if not _NAME.match(name) or not plain or not _SHA256.match(sha256):
        raise ToolError(
            f"install_packages: the recorded package {name[:80]!r} {version[:40]!r} is not a "
            "package name, a version and a sha256"
        )
    size = item.get("size_bytes")
    size = size if isinstance(size, int) and not isinstance(size, bool) else 0
    index, filename = str(item.get("index", "")), str(item.get("filename", ""))
    return Wheel(name, version, size, sha256, index, filename, url=str(item.get("url", "")))
