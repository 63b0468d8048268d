"""One snapshot store used from several threads at once, as the server uses it.

The server takes each capture in a worker thread, restores in another, and releases a
deleted session's snapshots meanwhile. A release sweeps every blob no manifest names, and a
capture under way has written blobs that no manifest names yet: run between the two, the
release deleted them, and the capture then listed a snapshot whose files were gone (and
counted bytes that were not there). The store's lock makes the release wait for the capture.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from codeagent_jupyter.record.snapshot_gc import release
from codeagent_jupyter.record.snapshots import SnapshotStore


def _stored(store: SnapshotStore) -> int:
    return sum(size for _, size in store.blobs.sizes()) + sum(
        p.stat().st_size for p in (store.root / "manifests").glob("*.json")
    )


def _in_the_middle(store: SnapshotStore, work: Any) -> list[bool]:
    """Run ``work`` in another thread right after the next blob is written, give it a second,
    then let the capture go on; whether it was done by then (it waited: False)."""
    put, done = store.blobs.put, []

    def put_then_work(digest: str, payload: bytes, compressed: bool) -> None:
        put(digest, payload, compressed)
        if not done:
            other = threading.Thread(target=work)
            other.start()
            other.join(1.0)
            done.append(not other.is_alive())
            threads.append(other)

    threads: list[threading.Thread] = []
    store.blobs.put = put_then_work  # type: ignore[method-assign]
    store.done_threads = threads  # type: ignore[attr-defined]
    return done


def _finish(store: SnapshotStore) -> None:
    for thread in store.done_threads:  # type: ignore[attr-defined]
        thread.join(10)
        assert not thread.is_alive()


def test_a_release_waits_for_a_capture_under_way(tmp_path: Path) -> None:
    old, ws = tmp_path / "old", tmp_path / "ws"
    old.mkdir()
    ws.mkdir()
    (old / "gone.bin").write_bytes(os.urandom(1 << 20))
    store = SnapshotStore(tmp_path / "store")
    store.capture(old, session="two")
    (ws / "a.bin").write_bytes(os.urandom(1 << 20))
    (ws / "b.bin").write_bytes(os.urandom(1 << 20))

    finished_first = _in_the_middle(store, lambda: release(store, "two"))
    cap = store.capture(ws, session="one")
    _finish(store)

    target = tmp_path / "target"
    target.mkdir()
    assert store.restore(cap.id, target).problems == []  # every file of it is still there
    assert (target / "a.bin").read_bytes() == (ws / "a.bin").read_bytes()
    assert store.stored_bytes() == _stored(store)  # the count is what the store holds
    assert set(store.refs.all()) == {"one"}
    assert finished_first == [False]  # the release waited for the capture
