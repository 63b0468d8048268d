"""Where a panel is shown: inline in its cell's output, or in JupyterLab's right sidebar.

Inline, the cell's output is one ``display_data`` with two views of the panel: the widget
(what JupyterLab shows) and a static ``text/html`` summary (what a saved notebook shows on
GitHub, nbviewer or anywhere without the kernel). Each time a run ends the output is
updated in place (``update_display_data`` by display id), so the saved summary is the
session as it ended.

In the sidebar (``%agent --side``), the widget lives in a ``sidecar.Sidecar`` (the
ipywidgets project's output area for JupyterLab's side panels) and the cell keeps only the
static summary, with a line saying where the live panel is.
"""

from __future__ import annotations

import uuid
from typing import Any

from .summary import summary_html

SIDE_TITLE = "codeagent"
PANEL_MIME = "application/vnd.codeagent.panel+json"
"""A third view of an inline panel, for JupyterLab's side of the project: which session the
cell shows. JupyterLab prefers it to the widget; it shows the live widget while the kernel
holds it, and the static summary with a Reattach button once it is gone (a reopened
notebook). Other frontends do not know the type and show the widget or the summary."""


def sidecar_class() -> Any:
    """``sidecar.Sidecar``, or None when the package is missing (then panels stay inline)."""
    try:
        from sidecar import Sidecar
    except ImportError:
        return None
    return Sidecar


class Placement:
    """Shows ``panel`` and keeps its cell's static summary current (``update``)."""

    def __init__(self, panel: Any, *, side: bool = False) -> None:
        self.panel = panel
        self.side = side
        self.display_id = uuid.uuid4().hex
        self.sidecar: Any = None
        self._shown_html = ""
        self._displayed = False

    def _bundle(self) -> dict[str, Any]:
        panel = self.panel
        note = (
            "The live panel is in JupyterLab's right sidebar."
            if self.side
            else "Static copy of the agent panel, saved with the notebook."
        )
        html = summary_html(panel.state, panel.session_id, note)
        self._shown_html = html
        if self.side:
            return {"text/html": html, "text/plain": "codeagent panel (in the side panel)"}
        bundle = dict(panel.widget._repr_mimebundle_() or {})
        bundle["text/html"] = html
        bundle[PANEL_MIME] = {"version": 1, "session_id": panel.session_id}
        return bundle

    def show(self) -> None:
        """Display the panel (inline or in a new sidecar) and the cell's summary."""
        from IPython.display import display

        if self.side:
            self.sidecar = sidecar_class()(title=SIDE_TITLE, anchor="right")
            with self.sidecar:
                display(self.panel.widget)
        display(self._bundle(), raw=True, display_id=self.display_id)
        self._displayed = True

    def show_side(self, title: str) -> None:
        """Only the live panel, in a new sidecar (a session opened from the session list:
        there is no cell of its own to hold a summary)."""
        from IPython.display import display

        self.side = True
        self.sidecar = sidecar_class()(title=title, anchor="right")
        with self.sidecar:
            display(self.panel.widget)

    def update(self) -> None:
        """Replace the cell's output with the current summary (at the end of a run)."""
        from IPython.display import update_display

        if not self._displayed:
            return
        previous = self._shown_html
        bundle = self._bundle()
        if bundle["text/html"] != previous:
            update_display(bundle, raw=True, display_id=self.display_id)

    def close(self) -> None:
        if self.sidecar is not None:
            self.sidecar.close()
            self.sidecar = None
