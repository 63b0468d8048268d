"""The panel's variable picker: ``--with`` by clicking, for a panel opened without a request.

It lists the user's variables as the model would read them (type and size, no values);
the chosen ones are serialized when the session starts, exactly as ``%agent --with`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ..util.variables import line


class VariablePicker:
    """A multiple choice of the kernel's variables, refreshed when the user starts typing."""

    def __init__(self, describe: Callable[[], list[dict[str, Any]]] | None = None) -> None:
        self.describe = describe
        self.select = w.SelectMultiple(
            options=[], rows=4, description="copy in", layout=w.Layout(width="100%")
        )
        self.select.add_class("codeagent-picker")
        self.widget = self.select
        self.widget.layout.display = "none"

    def refresh(self) -> None:
        """List the variables now in the kernel (shown only when there are some)."""
        entries = self.describe() if self.describe is not None else []
        chosen = set(self.select.value)
        self.select.options = [(line(e), e["name"]) for e in entries]
        self.select.value = tuple(e["name"] for e in entries if e["name"] in chosen)
        self.widget.layout.display = "" if entries else "none"

    def hide(self) -> None:
        self.widget.layout.display = "none"

    @property
    def chosen(self) -> list[str]:
        return list(self.select.value)
