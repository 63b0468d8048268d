"""The view for a timeline item: one function, so that ``views`` and ``helpers_view`` (whose
helper groups are built from the views' renderers) do not import each other."""

from __future__ import annotations

from typing import Any

from ..timeline.state import Item, ToolItem
from .helpers_view import HelperView
from .views import _VIEWS, ItemView


def make_view(item: Item, panel: Any) -> ItemView:
    if isinstance(item, ToolItem) and item.starts_agents:
        return HelperView(item, panel)  # its helpers, as collapsible groups
    return _VIEWS[type(item)](item, panel)
