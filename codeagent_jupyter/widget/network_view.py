"""The panel's network card and "Network" section (``--network policy``).

The card asks about the first host waiting under ``default: ask``: "allow
``data.example.org`` once / for this session / deny", its buttons answering by that host
(``POST …/approvals/network/HOST``). The section (folded, its title the totals) lists
the latest requests: method, URL
(clipped), status, bytes and the rule that decided. Host, URL and rule are the sandbox's
text: each is escaped here, and the URL is clipped and stripped of controls, so a request
can never put markup into the user's JupyterLab.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ..timeline.network import NetworkAsk, NetworkView
from . import theme
from .render_outputs import esc

URL_CHARS = 80
ROWS_SHOWN = 50


def shown(text: str, limit: int) -> str:
    """``text`` with controls replaced and clipped to ``limit`` characters, escaped."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return esc(text if len(text) <= limit else text[: limit - 1] + "…")


def ask_html(ask: NetworkAsk, more: int) -> str:
    others = f" (and {more} more waiting)" if more else ""
    what = f"{shown(ask.method, 16)} to port {ask.port}" if ask.port else shown(ask.method, 16)
    wait = f" Unanswered in {ask.timeout_s:g} s it is denied." if ask.timeout_s else ""
    return (
        f'<div class="codeagent-network-ask" role="alert" style="font-size:12px;'
        f'padding:4px 8px;border-left:3px solid {theme.WARN};background:{theme.CODE_BG}">'
        f"<b>The sandbox asks to reach</b> <code>{shown(ask.host, 255)}</code>{others} "
        f"({what}; {shown(ask.rule, 80)}). Allow it?{wait}</div>"
    )


def section_title(network: NetworkView) -> str:
    """The section's title (plain text, as Accordion titles are): the totals and hosts."""
    refused = f", {network.refused} refused" if network.refused else ""
    hosts = ", ".join(network.hosts[:3]) + (" …" if len(network.hosts) > 3 else "")
    hosts = "".join(c if c.isprintable() else "?" for c in hosts)
    return (
        f"Network: {network.requests} request(s){refused}, {network.bytes_down:,} bytes in"
        f" — {hosts}"
    )[:200]


def section_html(network: NetworkView) -> str:
    """The latest requests, newest first: method, URL (clipped), status, bytes, rule."""
    rows = "".join(
        f'<tr><td>{shown(r.method, 10)}</td><td title="{shown(r.url, 2000)}">'
        f"<code>{shown(r.url, URL_CHARS)}</code></td>"
        f"<td>{r.status if r.allowed else f'refused {r.status}'}</td>"
        f'<td style="text-align:right">{r.bytes_down:,}</td><td>{shown(r.rule, 120)}</td></tr>'
        for r in reversed(network.rows[-ROWS_SHOWN:])
    )
    return (
        f'<table class="codeagent-network" style="font-size:11px;color:{theme.TEXT}">'
        "<tr><th>method</th><th>url</th><th>status</th><th>bytes</th><th>rule</th></tr>"
        f"{rows}</table>"
    )


class NetworkCard:
    """The card's widgets; ``answer(host, answer)`` is the panel's handler."""

    def __init__(self, answer: Callable[[str, str], Any]) -> None:
        self._answer = answer
        self.host = ""
        self.html = w.HTML("")
        self.once = self._button("Allow once", "once", "codeagent-net-once", "")
        self.session = self._button("For this session", "session", "codeagent-net-session", "")
        self.deny = self._button("Deny", "deny", "codeagent-net-deny", "danger")
        buttons = w.HBox([self.once, self.session, self.deny])
        layout = w.Layout(display="none", width="100%")
        self.widget = w.VBox([self.html, buttons], layout=layout)
        self.table = w.HTML("")
        self.section = w.Accordion(
            children=(self.table,), selected_index=None, layout=w.Layout(display="none")
        )

    def _button(self, label: str, answer: str, css: str, style: str) -> w.Button:
        button = w.Button(description=label, button_style=style)
        button.layout = w.Layout(width="auto", min_width="5em")
        button.add_class(css)
        button.on_click(lambda _b: self._answer(self.host, answer) if self.host else None)
        return button

    def refresh(self, network: NetworkView) -> None:
        if network.asks:
            ask = network.asks[0]
            self.host = ask.host
            self.html.value = ask_html(ask, len(network.asks) - 1)
            self.widget.layout.display = ""
        else:
            self.host = ""
            self.widget.layout.display = "none"
        if network.requests:
            self.section.layout.display = ""
            self.section.set_title(0, section_title(network))
            self.table.value = section_html(network)
