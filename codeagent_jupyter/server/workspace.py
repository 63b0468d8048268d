"""Where a session works and what it reads: the user's notebook, through the server's contents.

Reading the notebook through the ``ContentsManager`` means the agent sees exactly what
Jupyter shows (and obeys its hidden-file and root rules); the workspace is the notebook's
folder, checked to stay under the server root.
"""

from __future__ import annotations

import contextlib
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_core.utils import ensure_async
from tornado.web import HTTPError

from .errors import ApiError


class NotebookResolver:
    """Turns a client's ``notebook_path`` (relative to the server root) into a dir and cells."""

    def __init__(self, root_dir: Path, contents_manager: Any) -> None:
        self.root_dir = Path(root_dir).resolve()
        self.contents_manager = contents_manager

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
        """The notebook's content as the ContentsManager returns it (a NotebookNode)."""
        pure = _relative(notebook_path)
        try:
            model = await ensure_async(
                self.contents_manager.get(pure.as_posix(), content=True, type="notebook")
            )
        except HTTPError as e:
            status = e.status_code if e.status_code in (400, 403, 404) else 400
            detail = e.log_message or e.reason or "cannot be read"
            if e.args:
                with contextlib.suppress(TypeError, ValueError):
                    detail = detail % e.args
            raise ApiError(status, f"notebook {notebook_path!r}: {detail}") from e
        except Exception as e:  # a corrupt file, a permission error …
            raise ApiError(400, f"notebook {notebook_path!r} cannot be read: {e}") from e
        return model["content"]


def _relative(notebook_path: str) -> PurePosixPath:
    if not isinstance(notebook_path, str) or not notebook_path.strip():
        raise ApiError(400, "notebook_path must be a non-empty string")
    pure = PurePosixPath(notebook_path.strip().lstrip("/"))
    if pure.suffix != ".ipynb":
        raise ApiError(400, f"notebook_path {notebook_path!r} is not a .ipynb notebook")
    if ".." in pure.parts:
        raise ApiError(400, f"notebook_path {notebook_path!r} is outside the server root")
    return pure
