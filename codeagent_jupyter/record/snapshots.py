"""Workspace snapshots: the files of a sandbox's workspace after each step, kept by content.

A session outlives its sandbox only if the files the agent made can be put back. After
every step that ran code, the workspace is captured into a content-addressed store
(``<workspace>/.codeagent/snapshots/`` for the CLI, which the sandbox cannot see; one store
per user in the server's state directory): each regular file's bytes are stored once under
their SHA-256 (two steps that leave a file alone store it once), compressed where that pays
(``snapshot_blobs``), and a manifest names, for every path, the blob it had. A capture made
for a session is referenced by it (``snapshot_gc``), so a full store can collect the
oldest snapshots of closed sessions and a deleted session can release what only it held.
Files are read only through ``confined.Workspace``, because the workspace is written by
the code we distrust: a symlink is recorded as skipped, never as its target's content;
FIFOs, sockets, devices and hard-linked files are skipped too, and nothing blocks.

What callers can rely on:

- ``capture`` never reads a file whose size and modification time match the previous
  manifest (an unchanged 100 MB file costs one ``stat``).
- Files above ``SnapshotSettings.large_file_bytes`` are *referenced*, not copied: the manifest
  keeps their size and time, ``Capture.large`` lists them, and ``restore`` reports them when
  the target lacks them. When storing a file would take the store (blobs and manifests, as
  stored) past ``max_store_bytes`` even after ``reclaim`` freed what it could, the file is
  skipped with that reason. Nothing is ever silently left out.
- ``restore`` writes through ``confined.Workspace`` as well (the target may be a workspace
  a sandbox wrote), checks every blob's hash before writing it, and with a ``budget_mb``
  refuses (``DiskBudgetError``, nothing written) a snapshot whose files would not fit.
- A store with a ``fallback`` (the server's shared store of earlier versions) reads the
  snapshots it lacks from there; it never writes or collects there.
- One store may be used from several threads at once (the server captures in a worker
  pool, restores in another thread and releases a deleted session's snapshots): ``lock``
  serialises ``capture``, ``derive``, ``restore`` and ``recount`` with ``snapshot_gc``'s
  ``collect`` and ``release``, so a release never sweeps the blobs of a capture under way
  (not referenced yet) and two of them never write a reference file from stale reads.

(Some 360 lines, kept whole: the code is one class, the store, and a tenth of the
module is the contract above.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import stat as stat_mod
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..util.atomic import write_atomic
from ..util.confined import RESERVED, ConfinementError, TooLargeError, Workspace
from ..util.disk_budget import check_room
from .snapshot_blobs import Blobs, encode
from .snapshot_gc import Refs
from .snapshot_types import Capture, Reclaim, Restored, SnapshotSettings, StoreFullError

__all__ = ["Capture", "Restored", "SnapshotSettings", "SnapshotStore", "StoreFullError"]

SNAPSHOTS = "snapshots"
"""Folder of the store inside the workspace's ``.codeagent/``."""


class SnapshotStore:
    """A content-addressed store: ``objects/``, ``manifests/`` and ``refs/``."""

    def __init__(
        self,
        root: Path,
        settings: SnapshotSettings | None = None,
        *,
        fallback: SnapshotStore | None = None,
        reclaim: Reclaim | None = None,
    ) -> None:
        self.root = Path(root)
        self.settings = settings or SnapshotSettings()
        self.fallback = fallback
        self.reclaim = reclaim
        self.also_counted: Callable[[], int] | None = None
        """Bytes kept elsewhere that count against the same bound (the server: the
        owner's fetched bodies, ``server/fetched.py``)."""
        self.blobs = Blobs(self.root / "objects")
        self.refs = Refs(self.root)
        self.full_skips = 0
        """Captures that left a file out because the store was full (since start)."""
        self.last_full: str | None = None
        self._bytes: int | None = None
        self.lock = threading.RLock()
        """Held by every change to the store and every read of many of its files (see the
        module's contract); re-entrant, as a capture collects through ``reclaim``."""

    @classmethod
    def for_workspace(
        cls, workdir: Path, settings: SnapshotSettings | None = None
    ) -> SnapshotStore:
        return cls(Path(workdir) / RESERVED / SNAPSHOTS, settings)

    # -- capture ----------------------------------------------------------------------------

    def capture(
        self, workdir: Path, previous: str | None = None, *, session: str | None = None
    ) -> Capture:
        """Snapshot the workspace at ``workdir``; ``previous`` is the last snapshot's id,
        ``session`` the session the snapshot is kept for (its reference)."""
        with self.lock:
            return self._capture(workdir, previous, session)

    def _capture(self, workdir: Path, previous: str | None, session: str | None) -> Capture:
        ws = Workspace(workdir)
        before = self._previous_files(previous)
        files: dict[str, dict[str, Any]] = {}
        cap = Capture(id="", files=0)
        for entry in ws.walk(".", max_entries=self.settings.max_files):
            if entry.kind == "dir":
                continue
            if entry.kind != "file":
                cap.skipped[entry.path] = f"{entry.kind}, not a regular file"
                continue
            record = self._capture_file(ws, entry.path, before.get(entry.path), cap, files)
            if record is not None:
                files[entry.path] = record
                if _content(before.get(entry.path)) != _content(record):
                    cap.changed.append(entry.path)
        cap.removed = sorted(set(before) - set(files))
        cap.files = len(files)
        body = json.dumps({"files": files}, sort_keys=True, separators=(",", ":"))
        cap.id = hashlib.sha256(body.encode()).hexdigest()[:32]
        path = self._manifest_path(cap.id)
        if not path.exists():
            if not self._room(len(body), _digests(files)):
                self._note_full()
                raise StoreFullError(f"{self.settings.full_reason}: snapshot not taken")
            write_atomic(path, body)
            self._bytes = self.stored_bytes() + len(body)
        if session is not None:
            self.refs.add(session, cap.id)
        if any(why == self.settings.full_reason for why in cap.skipped.values()):
            self._note_full()
        return cap

    def _note_full(self) -> None:
        self.full_skips += 1
        self.last_full = self.settings.full_reason

    def _room(self, needed: int, keep: set[str]) -> bool:
        """Whether ``needed`` more bytes fit, after asking ``reclaim`` to free the rest."""
        elsewhere = self.also_counted() if self.also_counted is not None else 0
        over = self.stored_bytes() + elsewhere + needed - self.settings.max_store_bytes
        if over > 0 and self.reclaim is not None:
            self.reclaim(over, keep)
            over = self.stored_bytes() + elsewhere + needed - self.settings.max_store_bytes
        return over <= 0

    def _previous_files(self, previous: str | None) -> dict[str, Any]:
        """The previous manifest's files; none when it is gone (the notebook moved)."""
        if not previous:
            return {}
        try:
            return self.manifest(previous)["files"]
        except (ConfigError, ValueError):
            return {}

    def _capture_file(
        self,
        ws: Workspace,
        path: str,
        old: dict[str, Any] | None,
        cap: Capture,
        taken: dict[str, dict[str, Any]],
    ) -> dict[str, Any] | None:
        try:
            st = ws.stat(path)
        except (ConfinementError, OSError) as exc:
            cap.skipped[path] = _reason(exc)
            return None
        if not stat_mod.S_ISREG(st.st_mode) or st.st_nlink != 1:
            cap.skipped[path] = "not a plain regular file (hard links or changed type)"
            return None
        size, mtime = st.st_size, st.st_mtime_ns
        if size > self.settings.large_file_bytes:
            cap.large.append(path)
            return {"size": size, "mtime_ns": mtime, "large": True}
        if old and "sha256" in old and old["size"] == size and old["mtime_ns"] == mtime:
            return dict(old)  # unchanged since the last snapshot: not read again
        try:
            data = ws.read_bytes(path, self.settings.large_file_bytes)
        except TooLargeError:  # grew since the stat
            cap.large.append(path)
            return {"size": size, "mtime_ns": mtime, "large": True}
        except (ConfinementError, OSError) as exc:
            cap.skipped[path] = _reason(exc)
            return None
        digest = hashlib.sha256(data).hexdigest()
        if not self.blobs.has(digest):
            payload, compressed = encode(data)
            keep = _digests(taken) | ({old["sha256"]} if old and "sha256" in old else set())
            if not self._room(len(payload), keep):
                cap.skipped[path] = self.settings.full_reason
                return None
            self.blobs.put(digest, payload, compressed)
            self._bytes = self.stored_bytes() + len(payload)
            cap.stored_bytes += len(data)
        return {"sha256": digest, "size": len(data), "mtime_ns": mtime}

    def stored_bytes(self) -> int:
        """Bytes the store takes: blobs as stored, and manifests (counted once, then kept
        up to date)."""
        if self._bytes is None:
            self.recount()
        assert self._bytes is not None
        return self._bytes

    def recount(self) -> int:
        """Count the store's bytes afresh (after a collection); the count."""
        with self.lock:
            manifests = self.root / "manifests"
            total = sum(size for _, size in self.blobs.sizes())
            if manifests.is_dir():
                total += sum(p.stat().st_size for p in manifests.glob("*.json"))
            self._bytes = total
            return total

    # -- read back --------------------------------------------------------------------------

    def manifest(self, snapshot_id: str, *, own: bool = False) -> dict[str, Any]:
        """The manifest ``{"files": {path: record}}`` (from the fallback store when this one
        lacks it, unless ``own``); ConfigError if it is in neither."""
        if not snapshot_id or not all(c in "0123456789abcdef" for c in snapshot_id):
            raise ConfigError(f"{snapshot_id!r} is not a snapshot id")
        try:
            return json.loads(self._manifest_path(snapshot_id).read_text())
        except FileNotFoundError:
            if self.fallback is not None and not own:
                return self.fallback.manifest(snapshot_id)
            raise ConfigError(
                f"snapshot {snapshot_id} is not in {self.root} (collected, or never taken)"
            ) from None

    def manifest_ids(self) -> list[str]:
        folder = self.root / "manifests"
        return [p.stem for p in folder.glob("*.json")] if folder.is_dir() else []

    def manifest_bytes(self, snapshot_id: str) -> int:
        try:
            return self._manifest_path(snapshot_id).stat().st_size
        except OSError:
            return 0

    def drop_manifest(self, snapshot_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._manifest_path(snapshot_id).unlink()

    def content(self, record: dict[str, Any]) -> bytes:
        """The bytes a manifest ``record`` names (``OSError`` when they are in no store);
        the caller checks them against ``record["sha256"]``."""
        return self._content_of(record)

    def derive(self, snapshot_id: str, changes: dict[str, Any], *, session: str | None) -> str:
        """A snapshot like ``snapshot_id`` with ``changes`` applied (path -> a record of an
        earlier manifest, whose blob the store holds, or None: gone); its id. Nothing is read
        from a workspace (what "Revert this file" put back is known by its record)."""
        with self.lock:
            return self._derive(snapshot_id, changes, session)

    def _derive(self, snapshot_id: str, changes: dict[str, Any], session: str | None) -> str:
        files = dict(self.manifest(snapshot_id)["files"])
        for path, record in changes.items():
            if record is None:
                files.pop(path, None)
            else:
                files[path] = dict(record)
        body = json.dumps({"files": files}, sort_keys=True, separators=(",", ":"))
        new_id = hashlib.sha256(body.encode()).hexdigest()[:32]
        path = self._manifest_path(new_id)
        if not path.exists():
            if not self._room(len(body), _digests(files)):
                raise StoreFullError(f"{self.settings.full_reason}: snapshot not taken")
            write_atomic(path, body)
            self._bytes = self.stored_bytes() + len(body)
        if session is not None:
            self.refs.add(session, new_id)
        return new_id

    def _content_of(self, record: dict[str, Any]) -> bytes:
        """A blob's bytes, from this store or the fallback (``OSError`` if in neither)."""
        try:
            return self.blobs.get(record["sha256"], int(record["size"]))
        except FileNotFoundError:
            if self.fallback is None:
                raise
            return self.fallback._content_of(record)

    def restore(self, snapshot_id: str, target: Path, *, budget_mb: int | None = None) -> Restored:
        """Write the snapshot's files into ``target`` (other files there are left alone);
        with ``budget_mb``, refuse up front (``DiskBudgetError``) when they would take
        ``target`` past that many MiB."""
        with self.lock:  # no collection or release deletes a blob while it is read
            return self._restore(snapshot_id, target, budget_mb)

    def _restore(self, snapshot_id: str, target: Path, budget_mb: int | None) -> Restored:
        files = self.manifest(snapshot_id)["files"]
        ws = Workspace(target)
        if budget_mb is not None:
            adding, replacing = _restore_sizes(ws, files)
            check_room(target, budget_mb, adding, "restoring the snapshot", replacing=replacing)
        done = Restored()
        for path, record in sorted(files.items()):
            if record.get("large"):
                try:
                    present = ws.stat(path).st_size == record["size"]
                except (ConfinementError, OSError):
                    present = False
                if present:
                    done.kept.append(path)
                else:
                    done.problems.append(f"{path}: large file referenced, not copied; not present")
                continue
            try:
                data = self._content_of(record)
            except OSError:
                done.problems.append(f"{path}: its content is missing from the snapshot store")
                continue
            if hashlib.sha256(data).hexdigest() != record["sha256"]:
                done.problems.append(f"{path}: its stored content is damaged")
                continue
            try:
                ws.write_bytes(path, data)
            except (ConfinementError, OSError) as exc:
                done.problems.append(f"{path}: {_reason(exc)}")
                continue
            done.written += 1
        return done

    def _manifest_path(self, snapshot_id: str) -> Path:
        return self.root / "manifests" / f"{snapshot_id}.json"


def _digests(files: dict[str, dict[str, Any]]) -> set[str]:
    return {r["sha256"] for r in files.values() if "sha256" in r}


def _restore_sizes(ws: Workspace, files: dict[str, Any]) -> tuple[int, int]:
    """Bytes a restore writes, and the bytes of the files it replaces in the target."""
    adding = replacing = 0
    for path, record in files.items():
        if record.get("large"):
            continue
        adding += int(record.get("size", 0))
        try:
            st = ws.stat(path)
        except (ConfinementError, OSError):
            continue
        if stat_mod.S_ISREG(st.st_mode):
            replacing += st.st_size
    return adding, replacing


def _content(record: dict[str, Any] | None) -> Any:
    if record is None:
        return None
    return record.get("sha256") or (record.get("size"), record.get("mtime_ns"))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
