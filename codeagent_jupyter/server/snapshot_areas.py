"""One snapshot store per user on the server, each with its own quota and collection.

With one store for everyone, one user's files (sparse files read densely, or just many
steps) filled it, and every other user's later snapshots were skipped. Here each owner has
a store of their own below ``<state dir>/snapshots/users/``, bounded by
``c.CodeAgent.snapshot_quota_mb``. When an owner's store is full, room is made from that
owner's oldest snapshots of *closed* sessions first (``snapshot_gc.collect``); open
sessions' snapshots and other owners' stores are never touched, so a capture that still
does not fit skips the file with the quota as its reason. Deleting a session releases
what only it referenced.

The shared store of earlier versions (``<state dir>/snapshots``) stays where it is as
every owner's read-only fallback: sessions recorded before keep restoring from it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..record.snapshot_gc import collect, release
from ..record.snapshots import SnapshotSettings, SnapshotStore

MIB = 1024 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def area_name(owner: str) -> str:
    """A folder name for ``owner``: readable, and unique by a hash of the exact name."""
    digest = hashlib.sha256(owner.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    readable = _UNSAFE.sub("_", owner)[:40].strip(".") or "user"
    return f"{readable}-{digest}"


class SnapshotAreas:
    """The per-owner stores; ``protected(owner)`` names that owner's sessions whose
    snapshots may not be collected (the open ones, and what a restore is reading)."""

    def __init__(self, root: Path, quota_mb: float, protected: Callable[[str], set[str]]) -> None:
        self.root = Path(root)
        self.quota_mb = quota_mb
        self.protected = protected
        self.settings = SnapshotSettings(
            max_store_bytes=int(quota_mb * MIB),
            limit_name=f"snapshot_quota_mb: {quota_mb:g} MiB per user",
        )
        self.shared = SnapshotStore(self.root)
        """The store of earlier versions, read-only."""
        self._stores: dict[str, SnapshotStore] = {}

    def store_for(self, owner: str) -> SnapshotStore:
        store = self._stores.get(owner)
        if store is None:
            store = SnapshotStore(
                self.root / "users" / area_name(owner),
                self.settings,
                fallback=self.shared,
            )
            store.reclaim = self._reclaimer(owner, store)
            self._stores[owner] = store
        return store

    def _reclaimer(self, owner: str, store: SnapshotStore) -> Callable[[int, set[str]], int]:
        def reclaim(needed: int, keep: set[str]) -> int:
            return collect(store, needed, self.protected(owner), keep)

        return reclaim

    def release(self, owner: str, session_id: str) -> int:
        """A deleted session's snapshots go, except what another session still holds."""
        return release(self.store_for(owner), session_id)

    def status(self, owner: str | None) -> dict[str, Any]:
        """The owner's store as the health route shows it to that owner (the quota alone
        when no owner is asking)."""
        if owner is None:
            return {"quota_mb": self.quota_mb}
        store = self.store_for(owner)
        return {
            "quota_mb": self.quota_mb,
            "used_mb": round(store.stored_bytes() / MIB, 3),
            "skipped": store.full_skips,
            "why": store.last_full,
        }


def protected_sessions(sessions: Iterable[Any], owner: str) -> set[str]:
    """``owner``'s sessions whose snapshots a full store must keep: the open ones (a
    resume is open from its first moment), and the session a fork is made from until the
    fork has been rebuilt (it restores that session's snapshot)."""
    held: set[str] = set()
    for session in sessions:
        if session.owner != owner:
            continue
        if not session.closed or session.restoring is not None:
            held.add(session.id)
        if session.source and not session.closed and session.loop is None:
            held.add(session.source)
    return held
