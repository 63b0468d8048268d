"""One small widget per timeline item, updated in place when its item changes.

Updating in place (rather than rebuilding the timeline) keeps streamed text and live cell
outputs cheap: only the HTML of the item that changed is sent to the browser.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..timeline.state import (
    ApprovalItem,
    CellItem,
    FinishedItem,
    Item,
    NoteItem,
    PromptItem,
    TextItem,
    ToolItem,
)
from . import render, theme
from .header import button as _button


class ItemView:
    """Renders one item as HTML; subclasses add buttons."""

    def __init__(self, item: Item, panel: Any) -> None:
        self.panel = panel
        self.item = item
        self.html = w.HTML(self.render(item), layout=w.Layout(width="100%"))
        self.widget: w.Widget = self.html

    def update(self, item: Item) -> None:
        if item == self.item:
            return
        self.item = item
        value = self.render(item)
        if value != self.html.value:
            self.html.value = value
        self.sync()

    def render(self, item: Any) -> str:
        raise NotImplementedError

    def sync(self) -> None:
        """Bring buttons in line with the item (decided, finished, …)."""


class PromptView(ItemView):
    def render(self, item: PromptItem) -> str:
        """The request as its user reads it (``render.request_html``)."""
        return render.request_html(item)


class NoteView(ItemView):
    def render(self, item: NoteItem) -> str:
        problems = "".join(
            f'<div style="color:{theme.WARN}">not rebuilt: {render.esc(p)}</div>'
            for p in item.problems
        )
        return (
            f'<div class="codeagent-note" style="margin-top:6px;color:{theme.MUTED}">'
            f"{render.esc(item.text)}{problems}</div>"
        )


class TextView(ItemView):
    def render(self, item: TextItem) -> str:
        css = "codeagent-answer" if item.is_answer else "codeagent-message"
        return f'<div class="{css}">{render.markdown_html(item.text)}</div>'


_LONG_ARGS = ("content", "old_string", "new_string")
"""Arguments a tool line leaves out: the file's content, or the edit its diff shows."""


class ToolView(ItemView):
    def render(self, item: ToolItem) -> str:
        args = item.arguments
        if isinstance(args, dict):
            shown = ", ".join(
                f"{k}={str(v)[:60]!r}" for k, v in args.items() if k not in _LONG_ARGS
            )
        else:
            shown = ""
        first = item.result.splitlines()[0][:120] if item.result else ""
        color = render.MUTED if item.status in ("ok", "running") else render.RED
        diff = render.diff_html(item.diff) if item.diff else ""
        return (
            f'<div class="codeagent-tool" style="font-size:12px;color:{color}">'
            f"<code>{render.esc(item.name)}({render.esc(shown)})</code> · "
            f"{render.esc(item.status)}{' — ' + render.esc(first) if first else ''}{diff}</div>"
        )


class FinishedView(ItemView):
    def render(self, item: FinishedItem) -> str:
        label, color = render._RUN_STATUS.get(item.status, (item.status, render.MUTED))
        answer = render.markdown_html(item.answer) if item.answer else ""
        return (
            f'<div class="codeagent-finished" data-status="{render.esc(item.status)}" '
            f'style="margin-top:4px"><span style="color:{color};font-weight:bold">'
            f"{render.esc(label)}</span> · {render.esc(item.reason)} · "
            f"{item.steps} step{'' if item.steps == 1 else 's'} · "
            f"{item.duration_s:.1f} s{answer}</div>"
        )


def _buttons(*buttons: w.Button) -> w.HBox:
    """A row of buttons that wraps in a narrow panel."""
    return w.HBox(list(buttons), layout=w.Layout(flex_flow="row wrap"))


class CellView(ItemView):
    """A cell with its outputs and Accept / Accept and run / Reject."""

    def __init__(self, item: CellItem, panel: Any) -> None:
        super().__init__(item, panel)
        tcid = lambda: self.item.tool_call_id  # noqa: E731  (the item is replaced on update)
        self.accept = _button(
            "Accept",
            "codeagent-accept",
            lambda: panel.decide(tcid(), True),
            button_style="success",
            icon="check",
        )
        self.accept_run = _button(
            "Accept and run",
            "codeagent-accept-run",
            lambda: panel.decide(tcid(), True, run=True),
            icon="play",
            tooltip="Insert the cell into the notebook and run it in your kernel",
        )
        self.reject = _button(
            "Reject", "codeagent-reject", lambda: panel.decide(tcid(), False), icon="times"
        )
        self.buttons = _buttons(self.accept, self.accept_run, self.reject)
        self.widget = w.VBox([self.html, self.buttons], layout=w.Layout(width="100%"))
        self.widget.add_class("codeagent-cell-view")
        self.sync()

    def render(self, item: CellItem) -> str:
        target = self.panel.cell_label(item.edit.get("cell_id", "")) if item.edit else ""
        return render.cell_html(item, target)

    def sync(self) -> None:
        item = self.item
        assert isinstance(item, CellItem)
        decidable = item.finished and bool(item.code.strip()) and item.status != "cancelled"
        self.buttons.layout.display = "" if decidable else "none"
        self.accept.button_style = "success" if item.ran_cleanly else ""  # failed: not advised
        for button in (self.accept, self.accept_run, self.reject):
            button.disabled = item.decision is not None
        self.accept.description = "Accepted" if item.decision is True else "Accept"
        self.reject.description = "Rejected" if item.decision is False else "Reject"


class ApprovalView(ItemView):
    """A tool call waiting for Approve / Allow for this session / Deny, its input shown."""

    def __init__(self, item: ApprovalItem, panel: Any) -> None:
        super().__init__(item, panel)
        tcid = lambda: self.item.tool_call_id  # noqa: E731
        self.approve = _button(
            "Approve",
            "codeagent-approve",
            lambda: panel.approve(tcid(), True),
            button_style="warning",
        )
        self.approve_session = _button(
            "Allow for this session",
            "codeagent-approve-session",
            lambda: panel.approve(tcid(), True, remember="session"),
            tooltip="Approve this call and every later call of this tool in this session",
        )
        self.deny = _button("Deny", "codeagent-deny", lambda: panel.approve(tcid(), False))
        self.buttons = _buttons(self.approve, self.approve_session, self.deny)
        self.widget = w.VBox([self.html, self.buttons], layout=w.Layout(width="100%"))
        self.sync()

    def render(self, item: ApprovalItem) -> str:
        if item.approved is None:
            verb = "install" if render.is_install(item.arguments) else "run"
            head = f"<b>Approve {render.esc(item.name)}?</b> It will {verb}:"
        elif item.approved and item.remember == "session":
            head = f"{render.esc(item.name)}: approved (allowed for this session)"
        else:
            head = f"{render.esc(item.name)}: {'approved' if item.approved else 'denied'}"
        style = f"font-size:12px;color:{theme.MUTED}" if item.approved is not None else ""
        return (
            f'<div class="codeagent-approval" data-decided="{item.approved is not None}" '
            f'style="{style}">'
            f"{head}{render.arguments_html(item.arguments) if item.approved is None else ''}</div>"
        )

    def sync(self) -> None:
        item = self.item
        assert isinstance(item, ApprovalItem)
        self.buttons.layout.display = "" if item.approved is None else "none"


_VIEWS: dict[type, type[ItemView]] = {
    PromptItem: PromptView,
    NoteItem: NoteView,
    TextItem: TextView,
    CellItem: CellView,
    ToolItem: ToolView,
    ApprovalItem: ApprovalView,
    FinishedItem: FinishedView,
}
