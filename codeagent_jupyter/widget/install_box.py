"""The panel's "Install packages" section: the user installs packages into the session's
sandbox between runs, without asking the model.

The names typed (separated by spaces or commas, each optionally with a version, as pip
takes them) and an optional note go to ``POST …/sessions/ID/packages``; the click is the
approval. The server applies the administrator's policy (allow and deny lists, wheels
only, ``max_mb``) and answers with what it installed, or one line saying why not, shown
here. The install also arrives as a ``packages_installed`` event, a note in the timeline.
The section is there once a session exists whose server offers installs (the session's
``installs``); Install is off while a run is going.
"""

from __future__ import annotations

import re
from typing import Any

import ipywidgets as w

from . import theme
from .client import CodeAgentError
from .header import button
from .render import esc

DEFAULT_REASON = "Installed from the panel."


def split_names(text: str) -> list[str]:
    """``"statsmodels, scikit-learn>=1.4"`` -> the two requirements (spaces inside a
    version specifier, ``pkg >= 1``, stay with their name)."""
    text = re.sub(r"\s*([<>=!~]=?|===?)\s*", r"\1", text.strip())
    return [part for part in re.split(r"[\s,]+", text) if part]


class InstallBox:
    """The section; ``panel`` is the ``AgentPanel`` (its client, session and notices)."""

    def __init__(self, panel: Any) -> None:
        self.panel = panel
        self.names = w.Text(
            placeholder="package names, e.g. statsmodels scikit-learn>=1.4",
            layout=w.Layout(flex="1 1 14em"),
        )
        self.names.add_class("codeagent-install-names")
        self.reason = w.Text(placeholder="what for (optional)", layout=w.Layout(width="100%"))
        self.reason.add_class("codeagent-install-reason")
        self.button = button("Install", "codeagent-install-button", self._on_click)
        self.result = w.HTML("")
        self.result.add_class("codeagent-install-result")
        row = w.HBox([self.names, self.button], layout=w.Layout(flex_flow="row wrap"))
        body = w.VBox([row, self.reason, self.result])
        self.widget = w.Accordion(children=[body], selected_index=None)
        self.widget.set_title(0, "Install packages")
        self.widget.add_class("codeagent-packages")
        self.widget.layout.display = "none"
        self.offered = True
        """The session's server installs packages (its summary's ``installs``)."""

    def sync(self, *, started: bool, running: bool, busy: bool) -> None:
        self.widget.layout.display = "" if started and self.offered else "none"
        self.button.disabled = running or busy

    def _on_click(self) -> None:
        names = split_names(self.names.value)
        if not names:
            self._show("Type one or more package names first.", error=True)
            return
        reason = self.reason.value.strip() or DEFAULT_REASON
        self.panel.run("install", self._install(names, reason))

    async def _install(self, names: list[str], reason: str) -> None:
        panel = self.panel
        if panel.client is None or panel.session_id is None:
            return
        self._show(f"Installing {', '.join(names)}…")
        try:
            answer = await panel.client.install(panel.session_id, names, reason)
        except CodeAgentError as e:
            self._show(str(e).removeprefix("codeagent: "), error=True)
            return
        self.names.value = ""
        self.reason.value = ""
        self._show(str(answer.get("summary") or "Nothing to install."))

    def _show(self, text: str, *, error: bool = False) -> None:
        color = theme.ERROR if error else theme.TEXT
        self.result.value = (
            f'<div class="codeagent-install-said" data-error="{str(error).lower()}" '
            f'style="font-size:12px;color:{color}">{esc(text)}</div>'
        )
