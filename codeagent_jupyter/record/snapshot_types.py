"""What a snapshot store is told (its settings) and what it answers (a capture, a restore).

Kept apart from the store so that the notebook's snapshot entries (``Capture.to_dict``)
and the store's bounds read in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CodeAgentError


@dataclass(frozen=True)
class SnapshotSettings:
    """How much a session's snapshot store may hold."""

    max_store_bytes: int = 2 << 30
    """Bytes of file content the store may hold in all; a file that would pass it is skipped."""
    large_file_bytes: int = 64 << 20
    """Files larger than this are referenced (path, size, time), not copied."""
    max_files: int = 20_000
    """Entries walked per capture; a workspace with more is captured up to this many."""
    limit_name: str = "max_store_bytes"
    """How the skip reason names the bound (the server: its per-user quota setting)."""

    @property
    def full_reason(self) -> str:
        return f"snapshot store is full ({self.limit_name})"


class StoreFullError(CodeAgentError):
    """Not even the manifest of a capture fits in the store: the snapshot is not taken."""


Reclaim = Callable[[int, set[str]], int]
"""``(bytes needed, digests to keep) -> bytes freed``: makes room in a full store."""


@dataclass
class Capture:
    """One snapshot as the session notebook records it (``to_dict``)."""

    id: str
    files: int
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    stored_bytes: int = 0
    large: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot": self.id,
            "files": self.files,
            "changed": self.changed[:50],
            "changed_count": len(self.changed),
            "removed": self.removed[:50],
            "stored_bytes": self.stored_bytes,
            "large": self.large,
            "skipped": dict(list(self.skipped.items())[:50]),
        }


@dataclass
class Restored:
    """What ``restore`` put back, and what it could not."""

    written: int = 0
    kept: list[str] = field(default_factory=list)
    """Large referenced files already present with the recorded size."""
    problems: list[str] = field(default_factory=list)
    """One line per file that could not be restored, and why."""
