"""What an install is made of: the wheels of a plan, as the approval shows them and the
session notebook records them (and reads them back for a resume)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

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
    """Wheels fetched for one call, waiting in the shared cache (outside every sandbox)."""

    wheels: list[Wheel]
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
        """Nothing to remove: the fetched wheels stay in the cache for the next install."""


def recorded_wheel(item: Mapping[str, Any]) -> Wheel:
    """A wheel as a session notebook recorded it (older notebooks have no ``url``)."""
    name = canonicalize_name(str(item.get("name", "")))
    version, sha256 = str(item.get("version", "")), str(item.get("sha256", ""))
    if not version or not sha256:
        raise ToolError(f"install_packages: {name} was recorded without version or hash")
    size = item.get("size_bytes")
    size = size if isinstance(size, int) and not isinstance(size, bool) else 0
    index, filename = str(item.get("index", "")), str(item.get("filename", ""))
    return Wheel(name, version, size, sha256, index, filename, url=str(item.get("url", "")))
