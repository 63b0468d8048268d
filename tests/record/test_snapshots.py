"""The snapshot store on real files: dedup, large files, bounds, and the workspace's attacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeagent_jupyter.errors import ConfigError
from codeagent_jupyter.record.snapshot_gc import collect, release
from codeagent_jupyter.record.snapshots import SnapshotSettings, SnapshotStore
from codeagent_jupyter.util.disk_budget import DiskBudgetError


def _blobs(store: SnapshotStore) -> list[Path]:
    return [p for p in (store.root / "objects").glob("*/*") if p.is_file()]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def test_unchanged_20mb_file_is_stored_once(ws: Path) -> None:
    big = os.urandom(20 << 20)
    (ws / "data.bin").write_bytes(big)
    (ws / "notes.txt").write_text("one")
    store = SnapshotStore.for_workspace(ws)
    first = store.capture(ws)
    assert first.stored_bytes == len(big) + 3
    (ws / "notes.txt").write_text("two")
    second = store.capture(ws, first.id)
    assert second.changed == ["notes.txt"]
    assert second.stored_bytes == 3  # the 20 MB file is not stored again
    assert sum(p.stat().st_size for p in _blobs(store)) == len(big) + 6
    third = store.capture(ws, second.id)
    assert third.id == second.id and third.changed == [] and third.stored_bytes == 0
    assert store.root.is_relative_to(ws / ".codeagent")


def test_restore_puts_back_the_files_of_a_step(ws: Path, tmp_path: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_text("step one")
    store = SnapshotStore.for_workspace(ws)
    one = store.capture(ws)
    (ws / "sub" / "a.txt").write_text("step two")
    (ws / "b.txt").write_text("new at step two")
    two = store.capture(ws, one.id)
    assert sorted(two.changed) == ["b.txt", "sub/a.txt"]
    target = tmp_path / "fresh"
    target.mkdir()
    done = store.restore(one.id, target)
    assert done.written == 1 and done.problems == []
    assert (target / "sub" / "a.txt").read_text() == "step one"
    assert not (target / "b.txt").exists()


def test_symlink_to_an_outside_file_is_not_captured_as_its_content(
    ws: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-TOKEN")
    os.symlink(secret, ws / "innocent.txt")
    os.symlink(tmp_path, ws / "escape")  # a directory link: must not be walked into
    os.mkfifo(ws / "pipe")  # must not block the capture
    os.link(secret, ws / "hardlinked.txt")  # shares an inode with a file outside
    (ws / "ok.txt").write_text("fine")
    store = SnapshotStore.for_workspace(ws)
    cap = store.capture(ws)
    assert cap.files == 1 and cap.changed == ["ok.txt"]
    assert set(cap.skipped) == {"innocent.txt", "escape", "pipe", "hardlinked.txt"}
    for blob in _blobs(store):
        assert b"TOP-SECRET-TOKEN" not in blob.read_bytes()
    manifest = store.manifest(cap.id)["files"]
    assert set(manifest) == {"ok.txt"}


def test_restore_never_writes_through_a_planted_symlink(ws: Path, tmp_path: Path) -> None:
    (ws / "out.txt").write_text("restored content")
    store = SnapshotStore.for_workspace(ws)
    cap = store.capture(ws)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    target = tmp_path / "target"
    target.mkdir()
    os.symlink(victim, target / "out.txt")  # the sandbox planted it where we will restore
    done = store.restore(cap.id, target)
    assert done.written == 0 and len(done.problems) == 1 and "symlink" in done.problems[0]
    assert victim.read_text() == "untouched"


def test_large_files_are_referenced_not_copied(ws: Path, tmp_path: Path) -> None:
    (ws / "big.bin").write_bytes(b"x" * 5000)
    (ws / "small.txt").write_text("s")
    store = SnapshotStore.for_workspace(ws, SnapshotSettings(large_file_bytes=1000))
    cap = store.capture(ws)
    assert cap.large == ["big.bin"] and cap.stored_bytes == 1
    target = tmp_path / "t"
    target.mkdir()
    done = store.restore(cap.id, target)
    assert done.written == 1
    assert done.problems == ["big.bin: large file referenced, not copied; not present"]
    (target / "big.bin").write_bytes(b"y" * 5000)
    assert store.restore(cap.id, target).kept == ["big.bin"]


def test_store_bound_skips_with_a_reason(ws: Path) -> None:
    (ws / "a.txt").write_bytes(os.urandom(600))  # random: stored as it is, 600 bytes
    (ws / "b.txt").write_bytes(os.urandom(600))
    store = SnapshotStore.for_workspace(ws, SnapshotSettings(max_store_bytes=1000))
    cap = store.capture(ws)
    assert cap.files == 1
    assert cap.skipped == {"b.txt": "snapshot store is full (max_store_bytes)"}


def test_damaged_blob_and_bad_ids_are_reported(ws: Path, tmp_path: Path) -> None:
    (ws / "a.txt").write_text("content")
    store = SnapshotStore.for_workspace(ws)
    cap = store.capture(ws)
    (blob,) = _blobs(store)
    blob.write_bytes(b"tampered")
    target = tmp_path / "t"
    target.mkdir()
    assert store.restore(cap.id, target).problems == ["a.txt: its stored content is damaged"]
    with pytest.raises(ConfigError, match="not a snapshot id"):
        store.manifest("../../etc")
    with pytest.raises(ConfigError, match="not in"):
        store.manifest("ab" * 16)


def test_zeros_are_stored_compressed_and_old_plain_blobs_still_restore(
    ws: Path, tmp_path: Path
) -> None:
    with open(ws / "sparse.bin", "wb") as f:  # 48 MiB long, one byte written
        f.seek((48 << 20) - 1)
        f.write(b"1")
    (ws / "random.bin").write_bytes(os.urandom(200_000))
    store = SnapshotStore.for_workspace(ws)
    cap = store.capture(ws)
    assert cap.stored_bytes == (48 << 20) + 200_000  # what the files hold
    sizes = {p.name.endswith(".z"): p.stat().st_size for p in _blobs(store)}
    assert sizes[True] < 300_000  # the zeros, compressed
    assert sizes[False] == 200_000  # random bytes do not compress: kept as they are
    target = tmp_path / "t"
    target.mkdir()
    assert store.restore(cap.id, target).problems == []
    assert (target / "sparse.bin").read_bytes() == (ws / "sparse.bin").read_bytes()

    # A store written before compression: plain blobs named by their hash.
    old = SnapshotStore(tmp_path / "old")
    (ws / "sparse.bin").unlink()
    plain = old.capture(ws)
    (blob,) = _blobs(old)
    assert not blob.name.endswith(".z")
    again = tmp_path / "again"
    again.mkdir()
    newer = SnapshotStore(tmp_path / "newer", fallback=old)  # reads what it lacks there
    assert newer.restore(plain.id, again).written == 1
    assert (again / "random.bin").read_bytes() == (ws / "random.bin").read_bytes()


def test_a_restore_over_the_budget_writes_nothing(ws: Path, tmp_path: Path) -> None:
    (ws / "a.bin").write_bytes(os.urandom(3 << 20))
    store = SnapshotStore.for_workspace(ws)
    cap = store.capture(ws)
    target = tmp_path / "t"
    target.mkdir()
    with pytest.raises(DiskBudgetError, match="past its disk budget of 2 MiB"):
        store.restore(cap.id, target, budget_mb=2)
    assert list(target.iterdir()) == []
    assert store.restore(cap.id, target, budget_mb=4).written == 1
    assert store.restore(cap.id, target, budget_mb=4).written == 1  # replaces: still fits


def test_collection_takes_the_oldest_of_closed_sessions_and_keeps_shared_blobs(
    ws: Path, tmp_path: Path
) -> None:
    closed: set[str] = set()

    def reclaim(needed: int, keep: set[str]) -> int:
        return collect(store, needed, {"s1", "s2", "s3"} - closed, keep)

    store = SnapshotStore(tmp_path / "store", SnapshotSettings(max_store_bytes=7 << 20))
    store.reclaim = reclaim
    shared = os.urandom(1 << 20)
    (ws / "shared.bin").write_bytes(shared)
    (ws / "old.bin").write_bytes(os.urandom(3 << 20))
    first = store.capture(ws, session="s1")
    (ws / "old.bin").unlink()
    (ws / "mid.bin").write_bytes(os.urandom(2 << 20))
    second = store.capture(ws, first.id, session="s1")
    assert second.skipped == {}  # 6 MiB of 7
    (ws / "mid.bin").unlink()
    (ws / "new.bin").write_bytes(os.urandom(3 << 20))
    assert store.capture(ws, session="s2").skipped == {
        "new.bin": "snapshot store is full (max_store_bytes)"
    }
    assert store.full_skips == 1

    closed.add("s1")  # s1's oldest snapshot goes first: old.bin; shared.bin is s2's too
    third = store.capture(ws, session="s2")
    assert third.skipped == {}
    with pytest.raises(ConfigError, match="collected"):
        store.manifest(first.id)
    assert store.manifest(second.id)  # the newer one of s1 was not needed
    target = tmp_path / "t"
    target.mkdir()
    assert store.restore(third.id, target).problems == []
    assert (target / "shared.bin").read_bytes() == shared

    before = store.stored_bytes()
    freed = release(store, "s2")  # what only s2 held: new.bin; shared.bin stays for s1
    assert freed >= 3 << 20 and store.stored_bytes() == before - freed
    assert store.restore(second.id, tmp_path / "t").problems == []
    assert release(store, "s1") > 0 and _blobs(store) == []


def test_a_step_that_changed_nothing_does_not_rewrite_the_reference(ws: Path) -> None:
    (ws / "notes.txt").write_text("one")
    store = SnapshotStore.for_workspace(ws)
    first = store.capture(ws, session="s1")
    ref = store.refs.dir / "s1.json"
    written = ref.stat().st_mtime_ns
    os.utime(ref, ns=(written - 10**9, written - 10**9))  # so that a rewrite would show
    again = store.capture(ws, first.id, session="s1")
    assert again.id == first.id
    assert ref.stat().st_mtime_ns == written - 10**9  # the same snapshot: no disk write
    (ws / "notes.txt").write_text("two")
    changed = store.capture(ws, first.id, session="s1")
    assert set(store.refs.of("s1")) == {first.id, changed.id}
