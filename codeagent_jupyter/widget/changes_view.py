"""The panel's "Changes" section: what the session did to the files, and "Revert this file".

When a run ends the panel asks the server for the session's change set
(``GET …/changes``) and shows one collapsible block per file: its summary line
(``report.py (+3 -2)``) and, opened, its diff coloured with JupyterLab's editor variables,
a notebook's changed cells, or an image's thumbnail and dimensions. Under each block,
"Revert this file" (``POST …/changes/revert``) puts the version from before the session
back; a file the user changed since the session's last snapshot is not overwritten until
the button, now "Revert anyway", is pressed a second time (the notice asks it in those
words, not the API's). Paths, diffs and notes come
from the sandbox: every one is escaped; the thumbnail is a checked base64 ``<img>``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import ipywidgets as w

from . import theme
from .client import ClientError
from .header import button
from .render import MUTED, PRE, esc
from .sanitize import data_img

MAX_HEIGHT = "50vh"
"""The section scrolls past this height, so the prompt box stays in reach."""
ANYWAY = "Revert anyway"
_COLORS = {"+": theme.ADDED, "-": theme.REMOVED, "@": theme.HUNK, "~": theme.HUNK}


def diff_html(lines: list[str]) -> str:
    """Unified-diff (or cell-list) lines as escaped text coloured by their first character."""
    rows = []
    for row in lines:
        header = row.startswith(("+++ ", "--- "))
        color = "" if header else _COLORS.get(row[:1], "")
        style = f' style="color:{color}"' if color else (' style="font-weight:bold"' * header)
        rows.append(f"<span{style}>{esc(row)}</span>")
    style = f"{PRE}background:{theme.CODE_BG};border:1px solid {theme.CODE_BORDER}"
    return f'<pre class="codeagent-diff" style="{style}">' + "\n".join(rows) + "</pre>"


def _thumbnail(url: str | None) -> str:
    if not url or not url.startswith("data:") or ";base64," not in url:
        return ""
    mime, b64 = url[5:].split(";base64,", 1)
    css = "max-width:240px;max-height:160px;display:block;margin:4px 0"
    # data_img checks the alphabet; its class names output plots, this one is not
    return data_img(mime, b64, css).replace("codeagent-plot", "codeagent-thumbnail", 1)


def file_html(change: dict[str, Any]) -> str:
    """One file's block: the summary line, and what opens under it."""
    path, brief = esc(str(change.get("path", ""))), esc(str(change.get("brief", "")))
    status = esc(str(change.get("status", "")))
    body = [_thumbnail(change.get("thumbnail"))]
    image = change.get("image")
    if isinstance(image, dict):
        body.append(
            f'<div style="font-size:12px">{esc(str(image.get("format", "")).upper())} image, '
            f"{esc(str(image.get('width')))}\u00d7{esc(str(image.get('height')))}</div>"
        )
    lines = list(change.get("diff") or []) or list(change.get("cells") or [])
    if lines:
        body.append(diff_html([str(line) for line in lines]))
    notes = [str(change["note"])] if change.get("note") else []
    if change.get("cut"):
        notes.append(f"diff cut at {int(change['cut'])} lines")
    body += [f'<div style="font-size:11px;color:{MUTED}">{esc(note)}</div>' for note in notes]
    summary = (
        f'<summary style="color:{theme.TEXT};font-size:12px"><code>{path}</code> '
        f'<span style="color:{MUTED}">({brief})</span></summary>'
    )
    opened = "".join(body) or f'<div style="font-size:11px;color:{MUTED}">nothing to show</div>'
    return (
        f'<details class="codeagent-change" data-path="{path}" data-status="{status}">'
        f"{summary}{opened}</details>"
    )


def title_html(data: dict[str, Any]) -> str:
    count = len(data.get("files") or [])
    what = f"{count} file{'s' * (count != 1)} changed" if count else "no files changed"
    notes = [*(data.get("notes") or [])]
    if data.get("reverted"):
        notes.append("reverted: " + ", ".join(str(p) for p in data["reverted"]))
    network = data.get("network")
    if isinstance(network, dict) and network.get("summary"):
        notes.append(str(network["summary"])[:500])  # requests, hosts, bytes, refusals
    extra = "".join(
        f'<div style="font-size:11px;color:{MUTED}">{esc(str(note))}</div>' for note in notes
    )
    return (
        f'<div class="codeagent-changes-title" style="font-size:12px;color:{theme.TEXT}">'
        f"<b>Changes</b> · {esc(what)}</div>{extra}"
    )


def _reason(message: str) -> str:
    """The server's refusal as the panel says it: without the client's prefix and the HTTP
    status (API words, not the user's)."""
    return re.sub(r" \(\d{3}\)$", "", message.removeprefix("codeagent: "))


class ChangesView:
    """The section of one panel; ``widget`` sits under the timeline."""

    def __init__(self, panel: Any) -> None:
        self.panel = panel
        self.title = w.HTML("")
        self.files = w.VBox([], layout=w.Layout(width="100%"))
        self.widget = w.VBox(
            [self.title, self.files],
            layout=w.Layout(width="100%", max_height=MAX_HEIGHT, overflow="auto", display="none"),
        )
        self.widget.add_class("codeagent-changes")
        self.buttons: dict[str, w.Button] = {}
        self.data: dict[str, Any] = {}

    def refresh(self) -> None:
        """Ask the server for the change set again (after a run ended)."""
        if self.panel.client is not None and self.panel.session_id is not None:
            self.panel.run("changes", self._load())

    def _url(self, tail: str = "") -> str:
        return f"/sessions/{quote(self.panel.session_id, safe='')}/changes{tail}"

    async def _load(self) -> None:
        self.show(await self.panel.client.request("GET", self._url()))

    def show(self, data: dict[str, Any]) -> None:
        """Draw ``data`` (a change set as the server answers it); hidden when empty."""
        self.data = data
        files = data.get("files") or []
        if not data.get("available") or not (files or data.get("reverted")):
            self.widget.layout.display = "none"
            return
        self.title.value = title_html(data)
        self.buttons = {}
        self.files.children = tuple(self._row(change) for change in files)
        self.widget.layout.display = ""

    def _row(self, change: dict[str, Any]) -> w.VBox:
        path = str(change.get("path", ""))
        revert = button("Revert this file", "codeagent-revert", lambda: self.revert(path))
        revert.layout.align_self = "flex-start"
        revert.disabled = not change.get("revertible")
        if not change.get("revertible"):
            revert.tooltip = "not revertible: no earlier copy in the snapshot store, or not a file"
        elif change.get("status") == "added":
            revert.tooltip = "remove it: the session created it"
        else:
            revert.tooltip = "put back its version from before the session"
        self.buttons[path] = revert
        row = w.VBox(
            [w.HTML(file_html(change), layout=w.Layout(width="100%")), revert],
            layout=w.Layout(width="100%", margin="2px 0"),
        )
        row.add_class("codeagent-change-row")
        return row

    def revert(self, path: str) -> None:
        clicked = self.buttons.get(path)
        if clicked is None or clicked.disabled:
            return  # a double click: the first is under way
        clicked.disabled = True
        self.panel.run(f"revert-{path}", self._revert(path, clicked))

    async def _revert(self, path: str, clicked: w.Button) -> None:
        body: dict[str, Any] = {"path": path}
        if clicked.description == ANYWAY:
            body["force"] = True
        try:
            answer = await self.panel.client.request("POST", self._url("/revert"), body)
        except ClientError as e:
            clicked.disabled = False
            if e.status == 409 and "changed since" in str(e):
                clicked.description = ANYWAY
                self.panel.say(f"{path} changed since the session's last step — {ANYWAY}?")
                return
            if e.status == 0:
                raise  # the server is out of reach: its own line says so
            self.panel.say(f"Could not revert {path}: {_reason(str(e))}")
            return
        done = answer.get("reverted") or {}
        self.show(answer.get("changes") or {})
        action = (
            "removed (the session had created it)"
            if done.get("action") == "removed"
            else ("restored to its version from before the session")
        )
        self.panel.say(f"Reverted {path}: {action}.")
