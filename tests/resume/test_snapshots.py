"""The snapshot store on real files: dedup, large files, bounds, and the workspace's attacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeagent_jupyter.errors import ConfigError
from codeagent_jupyter.snapshots import SnapshotSettings, SnapshotStore


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
