"""A session's change set: the files it created, modified and deleted, read from its snapshots.

The session notebook lists a snapshot per step that ran code (``snapshot_sink``); the first
one, step 0 of run 0, is the workspace as the session found it. The change set of the whole
session compares that manifest with the last one; the change set of step N compares the
last snapshot before step N (of the last run that reached it, as ``resume`` counts steps)
with the last one of step N. Nothing here opens the workspace: file contents come from the
snapshot store's blobs, sizes from its manifests, and symlinks, FIFOs and other special
files from the captures' own ``skipped`` lists, so they are listed as what they are and
never followed or read.

Over 300 lines on purpose: whole-session and per-step change sets share the manifest walk
and its bounds; their kinds (``change_kinds``) and text (``changes_text``) are apart.

What callers can rely on: the cost is bounded by the manifests' size plus at most
``DETAIL_FILES`` blobs of at most ``READ_MAX`` bytes each, read within ``DETAIL_SECONDS``;
a file larger than that (a 1 GB file is only referenced by the store anyway) is one line
with its sizes, and a diff whose matching would cost too much is omitted and says so
(``change_kinds.DIFF_CHANGED``). Diffs keep their first ``DIFF_LINES`` lines (and
``TOTAL_LINES`` over the whole set) and say where they were cut. ``NoSnapshots`` means
there is nothing to compare (``codeagent diff`` exits 1).
"""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import CodeAgentError, ConfigError
from .change_kinds import Described, describe
from .changes_network import NetworkSummary, network_of

READ_MAX = 1 << 20
"""Bytes of one version of a file read from the store to describe it; larger: sizes only."""
DETAIL_FILES = 300
"""Files whose contents are read for one change set; the others are listed by size."""
DIFF_LINES = 400
"""Lines of one file's diff (or cell summary) kept; the rest is cut, and that is said."""
TOTAL_LINES = 5_000
"""Lines of diff kept over a whole change set."""
DETAIL_SECONDS = 10.0
"""Time for reading and diffing files in one change set; files left after it are listed by
size (each diff is bounded by ``change_kinds.DIFF_CHANGED``, this bounds their sum)."""
THUMBNAIL_MAX = 256 << 10
"""Largest image sent whole as a thumbnail (a data URL) to the panel."""
NAMED = 10
"""Files named in the one-line summary; more are counted."""
SPECIAL = ("symlink", "fifo", "socket", "device")
MINUS = "\u2212"
"""The summary's minus sign (U+2212, as in the issue's example), not a hyphen."""
TIMES = "\u00d7"
_MIME = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif"}


class NoSnapshots(CodeAgentError):
    """The session has no snapshot to compare (recorded without them, or they are gone)."""


@dataclass
class FileChange:
    """One path the session (or step) changed."""

    path: str
    status: str
    """added, modified or deleted."""
    kind: str
    """text, notebook, image, binary, large, or for what is never read: symlink, fifo,
    socket, device, skipped."""
    size_before: int | None = None
    size_after: int | None = None
    found: Described | None = None
    note: str = ""
    thumbnail: str | None = None
    revertible: bool = False

    def brief(self) -> str:
        """The parenthesised part of the summary: ``new, 57 rows``, ``+3 -2`` (with a minus
        sign), ``deleted``."""
        if self.kind in SPECIAL:
            what = "FIFO" if self.kind == "fifo" else self.kind
            how = "not followed" if self.kind == "symlink" else "not read"
            prefix = {"added": "new ", "modified": "now a ", "deleted": "removed "}[self.status]
            return f"{prefix}{what}, {how}"
        if self.kind == "skipped":
            return f"not in the snapshot: {self.note}"
        if self.status == "deleted":
            return "deleted"
        found = self.found
        if self.status == "added":
            if found is not None and found.rows is not None:
                return f"new, {_count(found.rows, 'row')}"
            if found is not None and found.kind == "notebook":
                return f"new, {_count(found.cell_count, 'cell')}"
            if found is not None and found.kind == "text":
                return f"new, {_count(found.lines, 'line')}"
            if self.kind == "image":
                return "new"
            return f"new, {human(self.size_after)}"
        if found is not None and found.added is not None:
            return f"+{found.added} {MINUS}{found.removed}"
        if found is not None and found.kind == "notebook":
            return f"{_count(found.cells_changed, 'cell')} changed"
        if self.kind == "image":
            return "changed"
        return f"changed, {human(self.size_before)} → {human(self.size_after)}"

    def to_dict(self) -> dict[str, Any]:
        found = self.found or Described(self.kind)
        return {
            "path": self.path,
            "status": self.status,
            "kind": self.kind,
            "brief": self.brief(),
            "size_before": self.size_before,
            "size_after": self.size_after,
            "added": found.added,
            "removed": found.removed,
            "rows": found.rows,
            "rows_before": found.rows_before,
            "diff": found.diff,
            "cells": found.cells,
            "cut": found.cut,
            "image": found.image,
            "thumbnail": self.thumbnail,
            "note": self.note or found.note,
            "revertible": self.revertible,
        }


@dataclass
class ChangeSet:
    """What a session (or one step of it) did to the workspace's files."""

    session_id: str = ""
    run: int | None = None
    step: int | None = None
    before: str | None = None
    """The snapshot compared from (None: an empty workspace)."""
    after: str | None = None
    files: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)
    """Paths put back by "Revert this file" (their change is gone from ``files``)."""
    network: NetworkSummary | None = None
    """The session's requests through its egress broker (whole sessions only; None: none)."""

    def summary(self) -> str:
        """``3 files changed: clean.csv (new, 57 rows), report.py (+3 -2), totals.png (new)``
        (the minus is ``MINUS``)."""
        count = len(self.files)
        if not count:
            return "No files changed."
        named = ", ".join(f"{f.path} ({f.brief()})" for f in self.files[:NAMED])
        more = f", and {count - NAMED} more" if count > NAMED else ""
        return f"{count} file{'s' * (count != 1)} changed: {named}{more}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "run": self.run,
            "step": self.step,
            "from": self.before,
            "to": self.after,
            "summary": self.summary(),
            "files": [f.to_dict() for f in self.files],
            "notes": self.notes,
            "reverted": self.reverted,
            "network": self.network.to_dict() if self.network is not None else None,
        }


def _count(number: int | None, noun: str) -> str:
    number = number or 0
    return f"{number} {noun}{'s' * (number != 1)}"


def human(size: int | None) -> str:
    """``57 bytes``, ``1.2 kB``, ``100 MB`` (decimal units, as file managers show them)."""
    if size is None:
        return "?"
    if size < 1000:
        return f"{size} bytes"
    value, unit = float(size), "TB"
    for name in ("kB", "MB", "GB", "TB"):
        value /= 1000
        if value < 1000:
            unit = name
            break
    return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"


# -- which snapshots ---------------------------------------------------------------------------


def known_steps(notebook: Any) -> list[tuple[int, int]]:
    """(run, step) of every step of the session: its cells' and its snapshots'."""
    found = set()
    for cell in notebook.cells:
        meta = cell.metadata.get("codeagent", {})
        if isinstance(meta.get("step"), int) and not meta.get("child"):
            found.add((int(meta.get("run", 0)), meta["step"]))
    for entry in notebook.metadata.get("codeagent", {}).get("snapshots", []):
        if isinstance(entry.get("step"), int) and entry["step"] and not entry.get("revert"):
            found.add((int(entry.get("run", 0)), entry["step"]))
    return sorted(found)


def session_changes(
    meta: dict[str, Any],
    store: Any,
    *,
    step: int | None = None,
    steps: list[tuple[int, int]] | None = None,
    thumbnails: bool = False,
    exclude: frozenset[str] = frozenset(),
) -> ChangeSet:
    """The change set of the session whose notebook metadata is ``meta`` (or of ``step``,
    one of ``steps``: ConfigError if it is not); ``NoSnapshots`` when there is none.
    ``exclude``: workspace paths left out (the session's own notebook, the user's)."""
    run = _run_of(step, steps or []) if step is not None else None
    entries = [e for e in meta.get("snapshots") or [] if isinstance(e, dict)]
    good = [e for e in entries if e.get("snapshot")]
    if not good:
        raise NoSnapshots("it has no workspace snapshots (recorded with --no-snapshots?)")
    changes = ChangeSet(session_id=str(meta.get("session_id", "")))
    if step is None:
        before, after = good[0], good[-1]
        if entries[0] is not good[0] or (good[0].get("run", 0), good[0].get("step")) != (0, 0):
            changes.notes.append(
                f"the first snapshot is of step {good[0].get('step')}: what came before it "
                "is not in this change set"
            )
        changes.reverted = [e["revert"] for e in good if isinstance(e.get("revert"), str)]
        changes.network = network_of(meta)
    else:
        changes.run, changes.step = run, step
        at = [
            i
            for i, e in enumerate(entries)
            if e.get("run", 0) == run and e.get("step") == step and not e.get("revert")
        ]
        mine = [entries[i] for i in at if entries[i].get("snapshot")]
        if not mine:
            why = "ran no code" if not at else "left no snapshot"
            changes.notes.append(f"step {step} {why}: no files changed in it")
            return changes
        earlier = [e for e in entries[: at[0]] if e.get("snapshot")]
        before, after = (earlier[-1] if earlier else None), mine[-1]
    changes.before = before["snapshot"] if before else None
    changes.after = after["snapshot"]
    found = compare(store, before, after, thumbnails=thumbnails)
    changes.files = [f for f in found if f.path not in exclude]
    return changes


def _run_of(step: int, steps: list[tuple[int, int]]) -> int:
    runs = [r for r, s in steps if s == step]
    if not runs:
        known = ", ".join(str(s) for s in sorted({s for _, s in steps})) or "none"
        raise ConfigError(f"step {step} is not in this session (its steps: {known})")
    return max(runs)


# -- comparing two snapshots -------------------------------------------------------------------


def compare(
    store: Any, before: dict[str, Any] | None, after: dict[str, Any], *, thumbnails: bool = False
) -> list[FileChange]:
    """The files that differ between two snapshot entries of a session notebook."""
    old = _files(store, before["snapshot"]) if before else {}
    new = _files(store, after["snapshot"])
    old_skip = (before or {}).get("skipped") or {}
    new_skip = after.get("skipped") or {}
    budget = _Budget()
    found: list[FileChange] = []
    for path in sorted(set(old) | set(new) | set(old_skip) | set(new_skip)):
        a, b = old.get(path), new.get(path)
        if a is not None and b is not None and _same(a, b):
            continue
        was, now = old_skip.get(path), new_skip.get(path)
        change = _special(path, a, b, was, now)
        if change is None and (a is not None or b is not None):
            change = _file(store, path, a, b, budget, thumbnails)
            if was is not None and a is None:
                kind = _kind_of(was)
                change.note = f"was a {kind} before" if kind in SPECIAL else f"earlier: {was}"
        if change is not None:
            found.append(change)
    return found


def _files(store: Any, snapshot: str) -> dict[str, Any]:
    try:
        files = store.manifest(snapshot)["files"]
    except (ConfigError, ValueError, OSError) as exc:
        raise NoSnapshots(str(exc).splitlines()[0]) from None
    return files if isinstance(files, dict) else {}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if "sha256" in a or "sha256" in b:
        return a.get("sha256") == b.get("sha256")
    return (a.get("size"), a.get("mtime_ns")) == (b.get("size"), b.get("mtime_ns"))


def _kind_of(reason: str) -> str:
    first = reason.split(",", 1)[0].strip()
    return first if first in SPECIAL else "skipped"


def _special(path: str, a: Any, b: Any, was: str | None, now: str | None) -> FileChange | None:
    """A change involving what the store never read (a symlink, a FIFO, a file left out)."""
    if now is not None and b is None:
        if was is not None:
            return None  # special before and after: nothing to compare
        kind = _kind_of(now)
        change = FileChange(path, "modified" if a is not None else "added", kind)
        change.size_before = a.get("size") if a else None
        change.note = now if kind == "skipped" else ""
        return change
    if was is not None and a is None and b is None:
        kind = _kind_of(was)
        return FileChange(path, "deleted", kind, note=was if kind == "skipped" else "")
    return None


class _Budget:
    """How many more files may be read and diff lines kept in this change set."""

    def __init__(self) -> None:
        self.files = DETAIL_FILES
        self.lines = TOTAL_LINES
        self.deadline = time.monotonic() + DETAIL_SECONDS


def _file(store: Any, path: str, a: Any, b: Any, budget: _Budget, thumbnails: bool) -> FileChange:
    status = "added" if a is None else "deleted" if b is None else "modified"
    change = FileChange(path, status, "binary")
    change.size_before = int(a["size"]) if a else None
    change.size_after = int(b["size"]) if b else None
    change.revertible = a is None or "sha256" in a
    if any(r is not None and ("sha256" not in r or int(r["size"]) > READ_MAX) for r in (a, b)):
        change.kind = "large"
        change.note = "too big to diff: sizes only"
        return change
    if budget.files <= 0 or budget.lines <= 0:
        change.kind = "unread"
        change.note = f"not read: the change set describes at most {DETAIL_FILES} files"
        return change
    if time.monotonic() > budget.deadline:
        change.kind = "unread"
        change.note = f"not read: the change set took its {DETAIL_SECONDS:.0f} s"
        return change
    budget.files -= 1
    try:
        before, after = (_blob(store, r) if r else None for r in (a, b))
    except OSError as exc:
        change.note = str(exc)
        return change
    found = describe(path, before, after, min(DIFF_LINES, budget.lines))
    budget.lines -= len(found.diff) + len(found.cells)
    change.kind, change.found = found.kind, found
    image = after if after is not None else before
    if thumbnails and found.image and image is not None and len(image) <= THUMBNAIL_MAX:
        mime = _MIME[found.image["format"]]
        change.thumbnail = f"data:{mime};base64," + base64.b64encode(image).decode("ascii")
    return change


def _blob(store: Any, record: dict[str, Any]) -> bytes:
    """A file's content from the store, checked against the hash the manifest names."""
    try:
        data = store.content(record)
    except OSError:
        raise OSError("its content is missing from the snapshot store") from None
    if hashlib.sha256(data).hexdigest() != record["sha256"]:
        raise OSError("its stored content is damaged")
    return data
