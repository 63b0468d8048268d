"""Where a session works and what it reads: the user's notebook, beneath the server root.

The workspace is the notebook's folder, checked to stay under the server root. Because a
sandbox can write that folder, the notebook is read through ``confined.Workspace`` rather
than by path, keeping Jupyter's own hidden-file rule.

Which notebook that is comes, when the client names its kernel, from jupyter_server's own
session table: JupyterLab updates it on every rename, move and "Save as", while the
kernel's ``JPY_SESSION_NAME`` stays what it was when the kernel started.
"""

from __future__ import annotations

import asyncio
from pathlib import Path, PurePosixPath
from typing import Any

import nbformat

from ..util.confined import ConfinementError, Workspace
from .errors import ApiError

MAX_NOTEBOOK_BYTES = 50_000_000
"""Largest user notebook read for context (bigger ones are refused, not truncated)."""


class NotebookResolver:
    """Turns a client's ``notebook_path`` (relative to the server root) into a dir and cells."""

    def __init__(self, root_dir: Path, contents_manager: Any, session_manager: Any = None) -> None:
        self.root_dir = Path(root_dir).resolve()
        self.contents_manager = contents_manager
        self.session_manager = session_manager

    async def path_of_kernel(self, kernel_id: str | None) -> str | None:
        """The notebook whose Jupyter session runs ``kernel_id`` now (None when no session
        of this server runs it: a console, a kernel of another server, no session table)."""
        if not kernel_id or self.session_manager is None:
            return None
        try:
            model = await self.session_manager.get_session(kernel_id=kernel_id)
        except Exception:  # jupyter_server answers an unknown kernel with HTTPError(404)
            return None
        path = (model or {}).get("path")
        if (model or {}).get("type", "notebook") != "notebook" or not isinstance(path, str):
            return None
        return path if path.endswith(".ipynb") else None

    async def notebook(
        self, notebook_path: str | None, cells: list[dict[str, Any]] | None, complete: bool
    ) -> Any:
        """What the session reads of the user's notebook: the saved file, or the live cells
        the client sent (``livecells``); None without a notebook."""
        from .livecells import live_notebook

        if cells is not None and complete:
            return live_notebook(None, cells, True)
        if notebook_path is None:
            return live_notebook(None, cells, False) if cells else None
        try:
            saved = await self.read(notebook_path)
        except ApiError as e:
            if e.status_code != 404 or not cells:
                raise
            saved = None  # not saved yet: the cells the client knows are the notebook
        return live_notebook(saved, cells, False) if cells else saved

    def workdir_for(self, notebook_path: str | None) -> Path:
        """The notebook's folder on disk, or the server root when there is no notebook."""
        if notebook_path is None:
            return self.root_dir
        pure = _relative(notebook_path)
        workdir = (self.root_dir / pure.parent).resolve()
        if not workdir.is_relative_to(self.root_dir):
            raise ApiError(400, f"notebook_path {notebook_path!r} is outside the server root")
        if not workdir.is_dir():
            raise ApiError(404, f"no folder {pure.parent.as_posix()!r} for {notebook_path!r}")
        return workdir

    async def read(self, notebook_path: str) -> Any:
        """The notebook's content (a NotebookNode), read beneath the server root.

        The notebook's folder is a sandbox's workspace, so the sandbox may have replaced the
        file with a symlink (to another user's notebook, say), a FIFO or a hard link: the
        file is opened through ``confined.Workspace`` (no symlinks, regular files only,
        never blocking), and Jupyter's hidden-file rule is kept.
        """
        pure = _relative(notebook_path)
        cm = self.contents_manager
        if not getattr(cm, "allow_hidden", False) and any(p.startswith(".") for p in pure.parts):
            raise ApiError(404, f"notebook {notebook_path!r}: no such notebook")
        try:
            data = await asyncio.to_thread(
                Workspace(self.root_dir).read_bytes, pure.as_posix(), MAX_NOTEBOOK_BYTES
            )
        except FileNotFoundError:
            raise ApiError(404, f"notebook {notebook_path!r}: no such notebook") from None
        except ConfinementError as e:
            raise ApiError(400, f"notebook {notebook_path!r} cannot be read: {e}") from None
        except OSError as e:
            raise ApiError(400, f"notebook {notebook_path!r} cannot be read: {e.strerror}") from e
        try:
            return nbformat.reads(data.decode("utf-8"), as_version=4)
        except Exception as e:  # not JSON, not a notebook, not UTF-8 …
            reason = type(e).__name__
            raise ApiError(
                400, f"notebook {notebook_path!r} is not a valid notebook ({reason})"
            ) from e


def _relative(notebook_path: str) -> PurePosixPath:
    if not isinstance(notebook_path, str) or not notebook_path.strip():
        raise ApiError(400, "notebook_path must be a non-empty string")
    pure = PurePosixPath(notebook_path.strip().lstrip("/"))
    if pure.suffix != ".ipynb":
        raise ApiError(400, f"notebook_path {notebook_path!r} is not a .ipynb notebook")
    if ".." in pure.parts:
        raise ApiError(400, f"notebook_path {notebook_path!r} is outside the server root")
    return pure
