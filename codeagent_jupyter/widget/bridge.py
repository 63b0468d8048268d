"""The kernel end of the ``codeagent`` comm: asks JupyterLab to insert cells in the notebook
and to read it as the user sees it (``notebook_cells``: the open document, saved or not).

A widget in the kernel cannot edit the notebook document; the labextension can. The panel
opens a comm to the target ``codeagent`` (registered by the labextension on every notebook
kernel) and sends ``insert_cells``; replies carry the ``request_id`` they answer. Without
the labextension nobody registers the target, the frontend closes the comm at once, and
``available`` resolves to False so the panel can fall back to ``set_next_input``.

The comm must be opened while the panel's cell executes: the frontend uses that cell as
the default anchor for insertions.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from .transfer import PickleRefused, refuse_pickle

TARGET = "codeagent"
PING_TIMEOUT = 5.0
REPLY_TIMEOUT = 15.0

_ids = itertools.count(1)


class BridgeError(Exception):
    """The labextension refused a request (its one-line message) or did not answer."""


class NotebookBridge:
    """One comm per panel; requests are matched to replies by ``request_id``."""

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._closed = False
        self.comm: Any = None
        loop = asyncio.get_event_loop()
        self._available: asyncio.Future[bool] = loop.create_future()
        try:
            from comm import create_comm

            ping = self._new_request({"action": "ping"})
            self.comm = create_comm(target_name=TARGET, data=ping)
        except Exception:  # not in a kernel (plain Python): no notebook to edit
            self._resolve_available(False)
            return
        self.comm.on_msg(self._on_msg)
        self.comm.on_close(self._on_close)
        self._ping_id = ping["request_id"]
        loop.call_later(PING_TIMEOUT, self._resolve_available, False)

    async def available(self) -> bool:
        """True once the labextension answered the ping; False if it cannot answer."""
        return await asyncio.shield(self._available)

    async def insert_cells(
        self, cells: list[dict[str, Any]], after_cell_id: str | None
    ) -> list[str]:
        """Insert ``cells`` (``{"source", "metadata"}``) below ``after_cell_id``; their ids."""
        if not await self.available():
            raise BridgeError("the JupyterLab extension is not available")
        request = self._new_request(
            {
                "action": "insert_cells",
                "cells": [{"cell_type": "code", **c} for c in cells],
                "after_cell_id": after_cell_id,
            }
        )
        future = self._pending[request["request_id"]]
        self.comm.send(request)
        try:
            reply = await asyncio.wait_for(future, REPLY_TIMEOUT)
        except asyncio.TimeoutError:
            raise BridgeError("the notebook did not confirm the insertion") from None
        if reply.get("action") != "inserted":
            raise BridgeError(str(reply.get("message") or reply))
        return [str(i) for i in reply.get("cell_ids") or []]

    async def replace_cell(
        self, cell_id: str, source: str, metadata: dict[str, Any], expected: str | None = None
    ) -> str:
        """Replace cell ``cell_id``'s source (outputs cleared, ``metadata`` merged); refused
        when the cell no longer holds ``expected`` (the user changed it since)."""
        if not await self.available():
            raise BridgeError("the JupyterLab extension is not available")
        data = {"action": "replace_cell", "cell_id": cell_id, "source": source}
        data |= {"metadata": metadata}
        if expected is not None:
            data["expected_source"] = expected
        request = self._new_request(data)
        future = self._pending[request["request_id"]]
        self.comm.send(request)
        try:
            reply = await asyncio.wait_for(future, REPLY_TIMEOUT)
        except asyncio.TimeoutError:
            raise BridgeError("the notebook did not confirm the edit") from None
        if reply.get("action") != "replaced":
            raise BridgeError(str(reply.get("message") or reply))
        return cell_id

    async def run_cells(self, cell_ids: list[str]) -> list[str]:
        """Run the cells ``cell_ids`` of the notebook, in order, in its kernel (this one),
        as Shift+Enter would; returns once they are queued, not when they finish."""
        if not await self.available():
            raise BridgeError("the JupyterLab extension is not available")
        request = self._new_request({"action": "run_cells", "cell_ids": list(cell_ids)})
        future = self._pending[request["request_id"]]
        self.comm.send(request)
        try:
            reply = await asyncio.wait_for(future, REPLY_TIMEOUT)
        except asyncio.TimeoutError:
            raise BridgeError("the notebook did not confirm running the cells") from None
        if reply.get("action") != "running":
            raise BridgeError(str(reply.get("message") or reply))
        return [str(i) for i in reply.get("cell_ids") or []]

    async def notebook_cells(self) -> dict[str, Any] | None:
        """The open notebook as the user sees it now: ``{"path", "cells"}`` (ids, types,
        sources, execution counts, outputs as short text), saved or not. None when the
        labextension cannot say (not there, an older build without ``get_cells``)."""
        if not await self.available():
            return None
        request = self._new_request({"action": "get_cells"})
        future = self._pending[request["request_id"]]
        self.comm.send(request)
        try:
            reply = await asyncio.wait_for(future, REPLY_TIMEOUT)
        except asyncio.TimeoutError:
            return None
        if reply.get("action") != "cells" or not isinstance(reply.get("cells"), list):
            return None
        return {"path": reply.get("path"), "cells": reply["cells"]}

    def close(self) -> None:
        if self.comm is not None and not self._closed:
            self._closed = True
            self.comm.close()

    # -- internals ------------------------------------------------------------------------

    def _new_request(self, data: dict[str, Any]) -> dict[str, Any]:
        request_id = f"codeagent-{next(_ids)}"
        self._pending[request_id] = asyncio.get_event_loop().create_future()
        return {**data, "request_id": request_id}

    def _on_msg(self, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data") or {}
        request_id = data.get("request_id")
        try:
            for buffer in msg.get("buffers") or []:
                refuse_pickle(bytes(buffer))
        except PickleRefused as e:  # never loaded: the request fails with the reason
            data = {"action": "error", "message": str(e), "request_id": request_id}
        if request_id == self._ping_id:
            self._pending.pop(request_id, None)
            self._resolve_available(data.get("action") == "pong")
            return
        future = self._pending.pop(request_id, None)
        if future is not None and not future.done():
            future.set_result(data)

    def _on_close(self, msg: dict[str, Any]) -> None:
        self._closed = True
        self._resolve_available(False)
        for future in self._pending.values():
            if not future.done():
                future.set_result({"action": "error", "message": "the comm was closed"})
        self._pending.clear()

    def _resolve_available(self, value: bool) -> None:
        if not self._available.done():
            self._available.set_result(value)
