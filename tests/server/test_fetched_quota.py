"""One quota for an owner's snapshots and fetched bodies (``server/fetched.py``): real
stores on disk, the server's own classes, no server process needed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from codeagent_jupyter.server.fetched import FetchedAreas
from codeagent_jupyter.server.snapshot_areas import SnapshotAreas

MIB = 1024 * 1024


def _keep(areas: FetchedAreas, owner: str, body: bytes) -> str | None:
    writer = areas.store_for(owner).writer()
    writer.write(body)
    return writer.finish(hashlib.sha256(body).hexdigest())


def test_bodies_and_snapshots_share_the_owners_quota(tmp_path: Path) -> None:
    snapshots = SnapshotAreas(tmp_path / "snapshots", 1.0, lambda owner: set())
    areas = FetchedAreas(tmp_path / "fetched", snapshots, max_body_mb=16)
    first = os.urandom(600 * 1024)
    assert _keep(areas, "alice", first) == hashlib.sha256(first).hexdigest()
    assert _keep(areas, "alice", os.urandom(600 * 1024)) is None  # over the 1 MiB quota
    assert _keep(areas, "alice", first) is not None  # already kept: no more room needed
    assert areas.used_bytes("alice") == len(first)
    assert not [p for p in areas.store_for("alice").root.iterdir() if p.name.startswith(".")]
    assert _keep(areas, "bob", os.urandom(600 * 1024)) is not None  # bob's quota is his own

    # A snapshot taken now counts alice's bodies: her 600 KiB file no longer fits.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.bin").write_bytes(os.urandom(600 * 1024))
    taken = snapshots.store_for("alice").capture(ws, session="s1")
    assert "data.bin" in taken.skipped and "snapshot_quota_mb" in taken.skipped["data.bin"]
    carol = snapshots.store_for("carol").capture(ws, session="s2")  # no bodies: it fits
    assert "data.bin" not in carol.skipped
