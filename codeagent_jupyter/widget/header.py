"""The panel's header: what must stay in view while the timeline below it scrolls.

Title and session id, Stop and Accept all, the status line, a pending approval (announced
here; its one set of buttons is on its entry in the timeline), a host the sandbox asks to
reach (its card and buttons, ``network_view``), the plan, the "Network" section, the red
line of an unconfined sandbox, and the message a panel shows once its kernel is gone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ..timeline.state import ApprovalItem, SessionState
from . import render, theme
from .network_view import NetworkCard


def button(label: str, css: str, on_click: Callable[[], Any], **kw: Any) -> w.Button:
    """A button as wide as its label (the side panel is narrow: nothing is cut off)."""
    kw.setdefault("layout", w.Layout(width="auto", min_width="5em"))
    widget = w.Button(description=label, **kw)
    widget.add_class(css)
    widget.on_click(lambda _b: on_click())
    return widget


def title_html(session_id: str | None) -> str:
    """The panel's name and its session id. How to attach again after a kernel restart is
    said when it matters: by the "Disconnected" line (``dead_html``), not all the time."""
    if not session_id:
        return "<b>codeagent</b>"
    return f"<b>codeagent</b> <code>{render.esc(session_id)}</code>"


def dead_html(session_id: str | None) -> str:
    """Shown (by the panel's stylesheet) only once ipywidgets marks the panel disconnected."""
    again = (
        f" Run <code>%agent --attach {render.esc(session_id)}</code> in a cell to open the "
        "session again."
        if session_id
        else ""
    )
    return (
        f'<div class="codeagent-dead" role="status" style="font-size:12px;padding:4px 8px;'
        f'border:1px solid {theme.BORDER};background:{theme.ERROR_BG}">'
        f"<b>Disconnected:</b> this panel's kernel was restarted or shut down, so its "
        f"buttons no longer work.{again}</div>"
    )


def approval_html(item: ApprovalItem, more: int) -> str:
    others = f" (and {more} more)" if more else ""
    return (
        f'<div class="codeagent-attention" role="alert" style="font-size:12px;'
        f'padding:4px 8px;border-left:3px solid {theme.WARN};background:{theme.CODE_BG}">'
        f"<b>Waiting for your approval:</b> <code>{render.esc(item.name)}</code>{others} — "
        f"approve or deny it below, where its input is shown.</div>"
    )


def instructions_html(files: tuple[str, ...]) -> str:
    """One quiet line naming the instruction files the agent follows ("" for none)."""
    if not files:
        return ""
    named = ", ".join(f"<code>{render.esc(f)}</code>" for f in files)
    return (
        '<div class="codeagent-instructions" style="font-size:12px;'
        f'color:var(--jp-content-font-color2)">Instructions: {named}</div>'
    )


class Header:
    """The header's widgets; ``panel`` supplies the handlers (stop, accept all, approve)."""

    def __init__(self, panel: Any) -> None:
        self.panel = panel
        self.style = w.HTML(theme.STYLE, layout=w.Layout(display="none"))
        self.banner = w.HTML("")  # red while the session's sandbox is unconfined
        self.dead = w.HTML(dead_html(None), layout=w.Layout(width="100%"))
        self.title = w.HTML(title_html(None), layout=w.Layout(flex="1 1 14em"))
        self.stop = button("Stop", "codeagent-stop", panel._on_stop, button_style="danger")
        self.accept_all = button("Accept all", "codeagent-accept-all", panel._on_accept_all)
        self.controls = w.HBox([self.accept_all, self.stop])
        self.top = w.HBox(
            [self.title, self.controls], layout=w.Layout(width="100%", flex_flow="row wrap")
        )
        self.status = w.HTML("")
        self.attention = w.HTML("")
        # Only the announcement: the buttons are the entry's own, in the timeline (two sets
        # read as two questions, and crowd a narrow side panel).
        self.approval = w.VBox([self.attention], layout=w.Layout(display="none", width="100%"))
        self.plan = w.HTML("")
        self.network = NetworkCard(panel.answer_host)
        self.applied = w.HTML("")  # the instruction files the agent follows
        self.widget = w.VBox(
            [
                self.style,
                self.banner,
                self.top,  # the title's session id is the first <code> of the panel
                self.dead,
                self.status,
                self.applied,
                self.approval,
                self.network.widget,
                self.plan,
                self.network.section,
            ],
            layout=w.Layout(width="100%"),
        )
        self.widget.add_class("codeagent-header")

    def set_session(self, session_id: str | None) -> None:
        self.title.value = title_html(session_id)
        self.dead.value = dead_html(session_id)

    def refresh(self, state: SessionState, status: str) -> None:
        banner = render.banner_html(state)
        if banner != self.banner.value:
            self.banner.value = banner
        self.status.value = status
        applied = instructions_html(state.instructions)
        if applied != self.applied.value:
            self.applied.value = applied
        self.plan.value = render.plan_html(state.plan)
        self.network.refresh(state.network)
        pending = state.pending_approvals
        if pending:
            self.attention.value = approval_html(pending[0], len(pending) - 1)
            self.approval.layout.display = ""
        else:
            self.approval.layout.display = "none"
