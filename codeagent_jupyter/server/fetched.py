"""The server's content stores of fetched bodies: one per owner, inside that owner's quota.

Under ``network: "policy"`` each complete plain-HTTP ``GET`` body a sandbox fetched goes
into its owner's store, ``<state dir>/fetched/users/<owner's area>`` (out of every
sandbox's reach, named by digest only), and counts against ``c.CodeAgent.snapshot_quota_mb``
together with the owner's snapshots, both ways: a body that would not fit is recorded as not
stored, and a snapshot captured later counts the bodies kept.
A resume or fork of the owner's session serves the session's recorded fetches from that
store while its cells run again (``egress.replay``), then the policy applies again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..egress.bodies import DEFAULT_BODY_MB, MIB, BodyStore
from ..egress.replay import Recording
from .snapshot_areas import SnapshotAreas, area_name


class FetchedAreas:
    """The per-owner body stores, each bounded by the owner's snapshot quota."""

    def __init__(self, root: Path, snapshots: SnapshotAreas, max_body_mb: float) -> None:
        self.root = Path(root)
        self.snapshots = snapshots
        self.max_body_bytes = int(max_body_mb * MIB)
        self._stores: dict[str, BodyStore] = {}

    def store_for(self, owner: str) -> BodyStore:
        store = self._stores.get(owner)
        if store is None:
            root = self.root / "users" / area_name(owner)
            store = BodyStore(root, self.max_body_bytes)
            store.room = self._room(owner, store)
            self.snapshots.store_for(owner).also_counted = store.size  # one quota for both
            self._stores[owner] = store
        return store

    def _room(self, owner: str, store: BodyStore) -> Any:
        def room(size: int) -> bool:
            used = self.snapshots.store_for(owner).stored_bytes() + store.size()
            return used + size <= self.snapshots.quota_mb * MIB

        return room

    def used_bytes(self, owner: str) -> int:
        return self.store_for(owner).size()


def fetched_areas(state_dir: Path, snapshots: SnapshotAreas, policy: Any) -> FetchedAreas:
    """The server's stores, with the egress policy's ``store_body_mb`` (or the default)."""
    body_mb = DEFAULT_BODY_MB if policy is None else policy.store_body_mb
    return FetchedAreas(Path(state_dir) / "fetched", snapshots, body_mb)


def keep_bodies(areas: FetchedAreas, owner: str, sandbox: Any) -> None:
    """A sandbox taken for ``owner``'s session keeps its fetched bodies in their store (a
    sandbox without a broker has nothing to keep; the owner's bodies count all the same)."""
    store = areas.store_for(owner)  # its bytes count in the owner's snapshot quota from now
    egress = getattr(sandbox, "egress", None)
    if egress is not None:
        egress.keep_bodies(store)


def play_recording(areas: FetchedAreas, owner: str, sandbox: Any, notebook: Any) -> Any:
    """Serve ``notebook``'s recorded fetches from ``owner``'s store through the sandbox's
    broker (None: no broker or nothing recorded); the caller stops it after the rebuild."""
    egress = getattr(sandbox, "egress", None)
    if egress is None:
        return None
    recording = Recording.from_notebook(notebook, areas.store_for(owner))
    if not len(recording):
        return None
    egress.play(recording)
    return recording
