"""The user's sessions, as ``GET /codeagent/api/sessions`` lists them: state, age, and
Open / Resume / Delete.

Open shows a session in a panel in JupyterLab's right sidebar (its events replayed, then
followed live); Resume does the same for a closed session, whose next message resumes it
from its snapshots. Delete closes a
session for good. Fields beyond ``id``, ``state``, ``prompt`` and ``created`` are used
when the server sends them: a row reads as the session's ``title`` (a fix's "Fix In [9]:
…", not the prompt generated for the model).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from . import render, theme
from .header import button

MAX_ROWS = 30


def age(seconds: float) -> str:
    """ "just now", "5 min", "3 h", "2 d"."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def row_html(entry: dict[str, Any], now: float, current: str | None) -> str:
    # the title: a fix's "Fix In [9]: …" (servers before titles: the prompt)
    prompt = " ".join(str(entry.get("title") or entry.get("prompt") or "").split())
    prompt = prompt if len(prompt) <= 70 else prompt[:69] + "…"
    state = str(entry.get("state") or "")
    status = entry.get("status")
    shown = f"{state} · {status}" if status and state != "running" else state
    created = entry.get("created")
    when = f" · {age(now - float(created))}" if isinstance(created, (int, float)) else ""
    mark = " · <b>this panel</b>" if entry.get("id") == current else ""
    color = theme.RUNNING if state == "running" else theme.MUTED
    return (
        f'<div class="codeagent-session-row" data-session="{render.esc(str(entry.get("id")))}" '
        f'data-state="{render.esc(state)}" style="font-size:12px">'
        f"<code>{render.esc(str(entry.get('id')))}</code> "
        f'<span style="color:{color}">{render.esc(shown)}</span>{render.esc(when)}{mark}<br>'
        f"{render.esc(prompt)}</div>"
    )


class SessionList:
    """A folded list under the panel; ``panel`` supplies ``client``, ``open_session`` and
    ``session_id``."""

    def __init__(self, panel: Any) -> None:
        self.panel = panel
        self.rows = w.VBox([], layout=w.Layout(width="100%"))
        self.refresh_button = button("Refresh", "codeagent-sessions-refresh", self.refresh)
        self.message = w.HTML("")
        body = w.VBox([self.refresh_button, self.message, self.rows])
        self.widget = w.Accordion(children=(body,), titles=("Your sessions",), selected_index=None)
        self.widget.add_class("codeagent-sessions")
        self.widget.observe(self._on_toggle, "selected_index")
        self.entries: list[dict[str, Any]] = []

    def _on_toggle(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self.refresh()

    def refresh(self) -> None:
        if self.panel.client is not None:
            self.panel.run("sessions", self._load())

    async def _load(self) -> None:
        entries = await self.panel.client.sessions()
        entries = sorted(entries, key=lambda e: -float(e.get("created") or 0))[:MAX_ROWS]
        self.show(entries)

    def show(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        now = time.time()
        rows = []
        for entry in entries:
            sid = str(entry.get("id"))
            html = w.HTML(
                row_html(entry, now, self.panel.session_id), layout=w.Layout(flex="1 1 14em")
            )
            actions = [self._action("Open", "open", sid, self.panel.open_session)]
            if entry.get("state") == "closed":
                actions.append(self._action("Resume", "resume", sid, self.panel.resume_session))
            actions.append(self._action("Delete", "delete", sid, self._delete))
            buttons = w.HBox(actions, layout=w.Layout(flex_flow="row wrap"))
            row = w.HBox([html, buttons], layout=w.Layout(width="100%", flex_flow="row wrap"))
            row.add_class("codeagent-session")
            rows.append(row)
        self.rows.children = tuple(rows)
        self.message.value = (
            "" if entries else f'<span style="color:{theme.MUTED}">No sessions yet.</span>'
        )

    def _action(self, label: str, css: str, sid: str, act: Callable[[str], Any]) -> w.Button:
        return button(label, f"codeagent-session-{css}", lambda: act(sid))

    def _delete(self, session_id: str) -> None:
        async def delete() -> None:
            await self.panel.client.delete(session_id)
            await self._load()

        self.panel.run(f"delete-{session_id}", delete())
