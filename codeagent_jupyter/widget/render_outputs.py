"""One nbformat output as HTML for the panel: streams, tracebacks, images, sanitized HTML.

Sandbox output is attacker-controlled, so nothing from it reaches the page as live markup
(``sanitize``), and long text folds into ``<details>`` with its last lines in view. Kept
apart from ``render`` (cells, plan, status: our own data) because this is the part that
handles what the sandbox made.
"""

from __future__ import annotations

import html
from typing import Any

from ..util.textbounds import head_tail, strip_ansi
from . import theme
from .sanitize import clean_html, data_img, svg_img

MAX_TEXT = 6_000  # characters of one text output shown in the panel (head + tail)
FOLD_LINES = 24  # a text output longer than this is folded, its last TAIL_LINES shown
TAIL_LINES = 8
TRACEBACK_FOLD_LINES = 12
"""A traceback longer than this folds: its last line (what went wrong) stays in view."""
HTML_CLASS = "codeagent-html jp-RenderedHTMLCommon"  # our wrapper: JupyterLab's table style
PRE = (
    "margin:0;padding:4px 6px;white-space:pre-wrap;word-break:break-word;"
    "overflow-wrap:anywhere;font-family:var(--jp-code-font-family,monospace);font-size:12px;"
    f"color:{theme.TEXT};"
)


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def folded(text: str, style: str = "", css: str = "") -> str:
    """``text`` in a ``<pre>``; past ``FOLD_LINES`` lines, all but the last ``TAIL_LINES``
    go into a closed ``<details>`` above them (click to see the earlier lines)."""
    cls = f' class="{css}"' if css else ""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if len(lines) <= FOLD_LINES:
        return f'<pre{cls} style="{PRE}{style}">{esc(text)}</pre>'
    head, tail = lines[:-TAIL_LINES], lines[-TAIL_LINES:]
    return (
        f"<div{cls}>"
        f'<details class="codeagent-fold"><summary style="font-size:11px;padding:2px 6px">'
        f"{len(head):,} earlier lines</summary>"
        f'<pre style="{PRE}{style}">{esc(chr(10).join(head))}</pre></details>'
        f'<pre style="{PRE}{style}">{esc(chr(10).join(tail))}</pre></div>'
    )


def merge_streams(outputs: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> list[Any]:
    """Consecutive stream outputs of the same name joined into one, as JupyterLab shows
    them: a cell that prints line by line while it runs reads as one block, not as a
    stack of one-line blocks."""
    merged: list[dict[str, Any]] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
        ):
            merged[-1] = {**last, "text": _text(last.get("text", "")) + _text(output["text"])}
        else:
            merged.append(output)
    return merged


def output_html(output: dict[str, Any]) -> str:
    """One nbformat output: streams, rich data (PNG/JPEG, SVG, HTML tables), tracebacks."""
    kind = output.get("output_type")
    if kind == "stream":
        background = f"background:{theme.ERROR_BG};" if output.get("name") == "stderr" else ""
        text = head_tail(strip_ansi(_text(output.get("text", ""))), MAX_TEXT)
        return folded(text, background)
    if kind == "error":
        return traceback_html(output)
    if kind in ("display_data", "execute_result"):
        return _rich_html(output.get("data") or {})
    return ""


def traceback_html(output: dict[str, Any]) -> str:
    """The error's last line always in view; the whole traceback folded above it when it
    is long (the frames matter less than what went wrong)."""
    tb = strip_ansi("\n".join(output.get("traceback") or [])).rstrip("\n")
    last = f"{output.get('ename', '')}: {output.get('evalue', '')}".strip(": ")
    tb = head_tail(tb or last, MAX_TEXT)
    style = f"{PRE}background:{theme.ERROR_BG}"
    if len(tb.split("\n")) <= TRACEBACK_FOLD_LINES:
        return f'<pre class="codeagent-traceback" style="{style}">{esc(tb)}</pre>'
    lines = tb.split("\n")
    return (
        f'<div class="codeagent-traceback" style="background:{theme.ERROR_BG}">'
        f'<details class="codeagent-fold"><summary style="font-size:11px;padding:2px 6px;'
        f'color:{theme.TEXT}">traceback ({len(lines):,} lines)</summary>'
        f'<pre style="{style}">{esc(tb)}</pre></details>'
        f'<pre style="{style}">{esc(last or lines[-1])}</pre></div>'
    )


def _rich_html(data: dict[str, Any]) -> str:
    """The richest safe view of a display: images as data-URL ``<img>``, HTML sanitized.

    Sandbox output is attacker-controlled: nothing from it reaches the page as live markup,
    and no binary bundle (a pickle above all) is ever decoded into an object here.
    """
    if any(_binary_mime(mime) for mime in data):
        kinds = ", ".join(sorted(m for m in data if _binary_mime(m)))
        return f'<pre style="{PRE}">[{esc(kinds)} from the sandbox: not loaded here]</pre>'
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            return data_img(mime, _text(data[mime]), "max-width:100%")
    if "image/svg+xml" in data:
        return svg_img(_text(data["image/svg+xml"]), "max-width:100%")
    if "text/html" in data:
        body = clean_html(_text(data["text/html"]))
        # Wide tables scroll sideways; height is the timeline's to bound (one vertical
        # scrollbar, not one inside another).
        return (
            f'<div class="{HTML_CLASS}" style="overflow-x:auto;overflow-y:hidden;'
            f'padding:0 0 4px 0;margin:0">{body}</div>'
        )
    if "text/markdown" in data:
        return f'<pre style="{PRE}">{esc(_text(data["text/markdown"]))}</pre>'
    if "text/plain" in data:
        return folded(head_tail(strip_ansi(_text(data["text/plain"])), MAX_TEXT))
    return ""


def _binary_mime(mime: str) -> bool:
    """Bundles that would need deserializing (``application/x-python-pickle``, octet
    streams): the panel never loads them; results reach the user as cells or files."""
    return "pickle" in mime or mime.endswith("octet-stream")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)
