"""Which session holds which snapshot, and collecting what no one needs any more.

A snapshot store deduplicates: one blob serves every manifest (every step, every session)
whose workspace had that content, so nothing can be deleted by looking at one session
alone. Each session that captures into a store leaves a reference file
(``refs/<session>.json``: snapshot id -> time of its latest capture). From those:

- ``release(session)`` drops a deleted session's references and then every manifest no
  session references and every blob no remaining manifest names: what only it held (and
  whatever an interrupted capture left unreferenced).
- ``collect(needed, protected, keep)`` frees room in a full store by dropping the oldest
  snapshots of the sessions *not* in ``protected`` (the open ones), oldest capture first,
  until ``needed`` bytes are free; blobs named in ``keep`` (the capture under way) stay.

Both count what they free and never touch another store: a store is one owner's. Both
hold the store's ``lock`` (the server calls them from several threads): what they read of
the references and blobs is still so when they write and delete.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..util.atomic import write_atomic

SESSION = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a session reference may be called (session ids are hex)."""


REFRESH_S = 60.0
"""How stale a held snapshot's stamp may get before ``Refs.add`` writes it anew."""


class Refs:
    """The reference files of one store, ``<root>/refs/``."""

    def __init__(self, root: Path) -> None:
        self.dir = Path(root) / "refs"

    def _path(self, session: str) -> Path:
        if not SESSION.match(session):
            raise ValueError(f"{session!r} is not a session id")
        return self.dir / f"{session}.json"

    def of(self, session: str) -> dict[str, float]:
        try:
            data = json.loads(self._path(session).read_text())
        except (OSError, ValueError):
            return {}
        snaps = data.get("snapshots") if isinstance(data, dict) else None
        return {str(k): float(v) for k, v in snaps.items()} if isinstance(snaps, dict) else {}

    def add(self, session: str, snapshot: str) -> None:
        """Hold ``snapshot`` for ``session``, stamped now (collection drops the oldest
        first). A snapshot the session already holds, stamped within ``REFRESH_S``, is left
        as it is: a step that changed no file takes the same snapshot again, and rewriting
        the file for it would cost every such step a disk write."""
        held = self.of(session)
        now = time.time()
        if now - held.get(snapshot, float("-inf")) < REFRESH_S:
            return
        held[snapshot] = now
        self.write(session, held)

    def write(self, session: str, held: dict[str, float]) -> None:
        path = self._path(session)
        if held:
            write_atomic(path, json.dumps({"snapshots": held}, sort_keys=True))
        else:
            path.unlink(missing_ok=True)

    def all(self) -> dict[str, dict[str, float]]:
        if not self.dir.is_dir():
            return {}
        sessions = (p.stem for p in self.dir.glob("*.json") if SESSION.match(p.stem))
        return {s: self.of(s) for s in sessions}


def release(store: Any, session: str) -> int:
    """Forget ``session``'s snapshots; the bytes freed (what no other session shares)."""
    with store.lock:
        refs = store.refs.all()
        if session not in refs:
            return 0
        drop = [(0.0, session, snap) for snap in refs[session]]
        return _drop(store, refs, drop, needed=None, keep=set())


def collect(store: Any, needed: int, protected: set[str], keep: set[str]) -> int:
    """Free at least ``needed`` bytes (if it can) from the snapshots of sessions not in
    ``protected``, oldest first; the bytes freed."""
    with store.lock:
        refs = store.refs.all()
        candidates = sorted(
            (at, session, snap)
            for session, held in refs.items()
            if session not in protected
            for snap, at in held.items()
        )
        if not candidates:
            return 0
        return _drop(store, refs, candidates, needed=needed, keep=keep)


def _drop(
    store: Any,
    refs: dict[str, dict[str, float]],
    order: list[tuple[float, str, str]],
    *,
    needed: int | None,
    keep: set[str],
) -> int:
    """Drop references in ``order`` until ``needed`` bytes are free (None: all of them,
    and whatever nothing refers to), then delete the manifests and blobs no one holds."""
    before = store.stored_bytes()
    holders = Counter(snap for held in refs.values() for snap in held)
    contents = {snap: _blobs_of(store, snap) for snap in holders}
    users = Counter(digest for digests in contents.values() for digest in digests)
    users.update(keep)
    freed, dead_snaps, dead_blobs = 0, set(), set()
    changed: set[str] = set()
    for _, session, snap in order:
        if needed is not None and freed >= needed:
            break
        refs[session].pop(snap, None)
        changed.add(session)
        holders[snap] -= 1
        if holders[snap] > 0:
            continue
        dead_snaps.add(snap)
        freed += store.manifest_bytes(snap)
        for digest in contents[snap]:
            users[digest] -= 1
            if users[digest] == 0:
                dead_blobs.add(digest)
                freed += store.blobs.size_of(digest)
    if needed is None:  # a release also sweeps what nothing refers to (a crash's leftovers)
        dead_blobs |= {d for d, _ in store.blobs.sizes() if users[d] <= 0}
        dead_snaps |= {m for m in store.manifest_ids() if holders[m] <= 0}
    for session in changed:
        store.refs.write(session, refs[session])
    for snap in dead_snaps:
        store.drop_manifest(snap)
    for digest in dead_blobs:
        store.blobs.delete(digest)
    return max(before - store.recount(), 0)


def _blobs_of(store: Any, snapshot: str) -> set[str]:
    try:
        files = store.manifest(snapshot, own=True)["files"]
    except Exception:  # gone or unreadable: it holds nothing
        return set()
    return {r["sha256"] for r in files.values() if isinstance(r, dict) and "sha256" in r}
