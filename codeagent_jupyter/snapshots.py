"""Workspace snapshots: the files of a sandbox's workspace after each step, kept by content.

A session outlives its sandbox only if the files the agent made can be put back. After
every step that ran code, the workspace is captured into a content-addressed store
(``<workspace>/.codeagent/snapshots/``, which the sandbox cannot see): each regular file's
bytes are stored once under their SHA-256 (two steps that leave a file alone store it once),
and a manifest names, for every path, the blob it had. Files are read only through
``confined.Workspace``, because the workspace is written by the code we distrust: a symlink
is recorded as skipped, never as its target's content; FIFOs, sockets, devices and
hard-linked files are skipped too, and nothing blocks.

What callers can rely on:

- ``capture`` never reads a file whose size and modification time match the previous
  manifest (an unchanged 100 MB file costs one ``stat``).
- Files above ``SnapshotSettings.large_file_bytes`` are *referenced*, not copied: the manifest
  keeps their size and time, ``Capture.large`` lists them, and ``restore`` reports them when
  the target lacks them. When storing a file would take the store past ``max_store_bytes``
  the file is skipped with that reason. Nothing is ever silently left out.
- ``restore`` writes through ``confined.Workspace`` as well (the target may be a workspace
  a sandbox wrote) and checks every blob's hash before writing it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat as stat_mod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .atomic import write_atomic
from .confined import RESERVED, ConfinementError, TooLargeError, Workspace
from .errors import ConfigError

SNAPSHOTS = "snapshots"
"""Folder of the store inside the workspace's ``.codeagent/``."""


@dataclass(frozen=True)
class SnapshotSettings:
    """How much a session's snapshot store may hold."""

    max_store_bytes: int = 2 << 30
    """Bytes of file content the store may hold in all; a file that would pass it is skipped."""
    large_file_bytes: int = 64 << 20
    """Files larger than this are referenced (path, size, time), not copied."""
    max_files: int = 20_000
    """Entries walked per capture; a workspace with more is captured up to this many."""


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


class SnapshotStore:
    """The content-addressed store of one workspace: ``objects/`` and ``manifests/``."""

    def __init__(self, root: Path, settings: SnapshotSettings | None = None) -> None:
        self.root = Path(root)
        self.settings = settings or SnapshotSettings()
        self._bytes: int | None = None

    @classmethod
    def for_workspace(
        cls, workdir: Path, settings: SnapshotSettings | None = None
    ) -> SnapshotStore:
        return cls(Path(workdir) / RESERVED / SNAPSHOTS, settings)

    # -- capture ----------------------------------------------------------------------------

    def capture(self, workdir: Path, previous: str | None = None) -> Capture:
        """Snapshot the workspace at ``workdir``; ``previous`` is the last snapshot's id."""
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
            record = self._capture_file(ws, entry.path, before.get(entry.path), cap)
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
            write_atomic(path, body)
        return cap

    def _previous_files(self, previous: str | None) -> dict[str, Any]:
        """The previous manifest's files; none when it is gone (the notebook moved)."""
        if not previous:
            return {}
        try:
            return self.manifest(previous)["files"]
        except (ConfigError, ValueError):
            return {}

    def _capture_file(
        self, ws: Workspace, path: str, old: dict[str, Any] | None, cap: Capture
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
        blob = self._blob_path(digest)
        if not blob.exists():
            if self.stored_bytes() + len(data) > self.settings.max_store_bytes:
                cap.skipped[path] = "snapshot store is full (max_store_bytes)"
                return None
            blob.parent.mkdir(parents=True, exist_ok=True)
            tmp = blob.with_name(f".{blob.name}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, blob)
            self._bytes = self.stored_bytes() + len(data)
            cap.stored_bytes += len(data)
        return {"sha256": digest, "size": len(data), "mtime_ns": mtime}

    def stored_bytes(self) -> int:
        """Bytes of file content in the store (counted once, then kept up to date)."""
        if self._bytes is None:
            objects = self.root / "objects"
            self._bytes = (
                sum(p.stat().st_size for p in objects.glob("*/*") if p.is_file())
                if objects.is_dir()
                else 0
            )
        return self._bytes

    # -- read back --------------------------------------------------------------------------

    def manifest(self, snapshot_id: str) -> dict[str, Any]:
        """The manifest ``{"files": {path: record}}``; ConfigError if it is not in the store."""
        if not snapshot_id or not all(c in "0123456789abcdef" for c in snapshot_id):
            raise ConfigError(f"{snapshot_id!r} is not a snapshot id")
        try:
            return json.loads(self._manifest_path(snapshot_id).read_text())
        except FileNotFoundError:
            raise ConfigError(f"snapshot {snapshot_id} is not in {self.root}") from None

    def restore(self, snapshot_id: str, target: Path) -> Restored:
        """Write the snapshot's files into ``target`` (other files there are left alone)."""
        files = self.manifest(snapshot_id)["files"]
        ws = Workspace(target)
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
                data = self._blob_path(record["sha256"]).read_bytes()
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

    def _blob_path(self, digest: str) -> Path:
        return self.root / "objects" / digest[:2] / digest[2:]

    def _manifest_path(self, snapshot_id: str) -> Path:
        return self.root / "manifests" / f"{snapshot_id}.json"


def _content(record: dict[str, Any] | None) -> Any:
    if record is None:
        return None
    return record.get("sha256") or (record.get("size"), record.get("mtime_ns"))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
