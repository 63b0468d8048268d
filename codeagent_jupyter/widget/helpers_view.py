"""A ``delegate`` call in the panel: its line, and under it one collapsible group per helper.

Helpers run at once and each has a whole timeline of its own (messages, cells, the answer),
so they are shown folded: an ``ipywidgets.Accordion`` whose sections are titled
``Helper 1-2: <task> · <status>`` (plain text) and hold the helper's items, rendered by the
same functions as the session's own (escaped, outputs sanitized) but without buttons: a
helper's cells are not the user's to accept, and a helper asks for no approvals. The
accordion keeps which group the user opened while the helpers' events stream in.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..timeline.state import CellItem, HelperGroup, SessionState, ToolItem
from . import render
from .views import _VIEWS, ToolView


def helper_html(state: SessionState) -> str:
    """A helper's timeline as one read-only HTML block."""
    parts = []
    for item in state.items:
        if isinstance(item, CellItem):
            parts.append(render.cell_html(item))
        else:  # the views' render methods read nothing but the item
            parts.append(_VIEWS[type(item)].render(None, item))  # type: ignore[arg-type]
    return f'<div class="codeagent-helper">{"".join(parts)}</div>'


class HelperView(ToolView):
    """The ``delegate`` call's line with its helpers' groups below it."""

    def __init__(self, item: ToolItem, panel: Any) -> None:
        super().__init__(item, panel)
        self._bodies: dict[str, w.HTML] = {}
        """Helper label -> its group's body, updated in place."""
        self.groups = w.Accordion(children=(), layout=w.Layout(width="100%"))
        self.groups.add_class("codeagent-helpers")
        self.widget = w.VBox([self.html, self.groups], layout=w.Layout(width="100%"))
        self.sync()

    def sync(self) -> None:
        item = self.item
        assert isinstance(item, ToolItem)
        helpers: tuple[HelperGroup, ...] = item.helpers
        self.groups.layout.display = "" if helpers else "none"
        for group in helpers:
            value = helper_html(group.state)
            body = self._bodies.get(group.child)
            if body is None:
                self._bodies[group.child] = w.HTML(value, layout=w.Layout(width="100%"))
            elif body.value != value:
                body.value = value
        children = tuple(self._bodies[group.child] for group in helpers)
        if children != tuple(self.groups.children):
            self.groups.children = children
        titles = tuple(group.title for group in helpers)
        if tuple(self.groups.titles) != titles:
            self.groups.titles = titles
