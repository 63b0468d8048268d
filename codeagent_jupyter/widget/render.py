"""Small, pure HTML renderers for the panel: code, outputs, plan, status line.

They return strings with inline styles whose every colour is a JupyterLab CSS variable
(``theme``), so they follow the light, dark and high-contrast themes in JupyterLab and
Notebook 7 without a stylesheet of ours, and are tested as strings. Long text outputs and
tracebacks fold into ``<details>`` (their last lines stay visible), so a 5,000-line print
does not make the panel thousands of pixels tall.
"""

from __future__ import annotations

import html
import json
from typing import Any

from ..sandbox.report import warning
from ..timeline.state import CellItem, SessionState
from ..util.textbounds import head_tail, strip_ansi
from . import theme
from .sanitize import clean_html, data_img, svg_img

MAX_TEXT = 6_000  # characters of one text output shown in the panel (head + tail)
FOLD_LINES = 24  # a text output longer than this is folded, its last TAIL_LINES shown
TAIL_LINES = 8
RED = theme.ERROR
MUTED = theme.MUTED
HTML_CLASS = "codeagent-html jp-RenderedHTMLCommon"  # our wrapper: JupyterLab's table style
PRE = (
    "margin:0;padding:4px 6px;white-space:pre-wrap;word-break:break-word;"
    "overflow-wrap:anywhere;font-family:var(--jp-code-font-family,monospace);font-size:12px;"
    f"color:{theme.TEXT};"
)
_STATUS_ICON = {"pending": "○", "in_progress": "◐", "done": "●"}
_RUN_STATUS = {
    "running": ("running", theme.RUNNING),
    "answered": ("done", theme.OK),
    "cancelled": ("cancelled", theme.WARN),
    "max_steps": ("stopped: step budget", theme.WARN),
    "max_wall_time": ("stopped: time budget", theme.WARN),
    "max_tokens": ("stopped: token budget", theme.WARN),
    "malformed": ("stopped: malformed tool calls", RED),
    "model_error": ("model error", RED),
    "error": ("error", RED),
    "interrupted": ("interrupted", RED),
}


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def code_html(code: str, tool: str = "run_cell") -> str:
    """Syntax-highlighted source (Python, or shell for ``run_command``) on the editor's
    background, in the editor's colours."""
    style = (
        f"{PRE}background:{theme.CODE_BG};border:1px solid {theme.CODE_BORDER};border-radius:2px"
    )
    return f'<pre class="codeagent-code" style="{style}">{theme.highlight(code, tool)}</pre>'


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
    if len(tb.split("\n")) <= FOLD_LINES:
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
        return (
            f'<div class="{HTML_CLASS}" style="overflow:auto;max-height:360px;'
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


def cell_header(cell: CellItem, target: str = "") -> str:
    """ "Cell 3 · step 2 · error · 0.4 s · fix for cell 2"; ``target`` names the user's
    cell an edit replaces (``In [7]``)."""
    parts = [f"<b>Cell {cell.number}</b>", f"step {cell.step}"]
    if cell.tool == "run_command":
        parts.append("shell")
    if cell.edit:
        parts.append(f"edit of {esc(target)}" if target else "edit of your cell")
    color = {"ok": theme.OK, "running": theme.RUNNING}.get(cell.status, RED)
    parts.append(f'<span style="color:{color}">{esc(cell.status)}</span>')
    if cell.finished and cell.duration_s:
        parts.append(f"{cell.duration_s:.1f} s")
    if cell.fixes is not None:
        parts.append(f"fix for cell {cell.fixes}")
    if cell.decision is not None:
        parts.append("accepted" if cell.decision else "rejected")
    note = f' <span style="color:{MUTED}">({esc(cell.note)})</span>' if cell.note else ""
    return " · ".join(parts) + note


def edit_html(edit: dict[str, Any], target: str = "") -> str:
    """An ``edit_cell`` proposal: the reason (Markdown, sanitized) over a unified diff whose
    lines are escaped text, coloured by their first character. ``target`` is the cell as
    the user sees it (``In [7]``); without it, the cell's id."""
    cell_id = esc(str(edit.get("cell_id", "")))
    name = f"<b>{esc(target)}</b>" if target else f"<code>{cell_id}</code>"
    return (
        f'<div class="codeagent-edit" data-cell-id="{cell_id}">'
        f'<div style="font-size:12px">Edit of your cell {name}:</div>'
        f"{markdown_html(str(edit.get('reason', '')))}"
        f"{diff_html(str(edit.get('diff', '')))}</div>"
    )


def diff_html(diff: str) -> str:
    """A unified diff as escaped text, each line coloured by its first character (theme
    colours): an ``edit_cell`` proposal's, an ``edit_file`` change's."""
    colors = {"+": theme.ADDED, "-": theme.REMOVED, "@": theme.HUNK}
    rows = []
    for row in diff.splitlines()[:400]:
        header = row.startswith(("+++", "---"))
        color = "" if header else colors.get(row[:1], "")
        style = f' style="color:{color}"' if color else (' style="font-weight:bold"' * header)
        rows.append(f"<span{style}>{esc(row)}</span>")
    diff_style = f"{PRE}background:{theme.CODE_BG};border:1px solid {theme.CODE_BORDER}"
    return f'<pre class="codeagent-diff" style="{diff_style}">' + "\n".join(rows) + "</pre>"


def cell_html(cell: CellItem, target: str = "") -> str:
    head = f'<div style="font-size:12px;margin:2px 0">{cell_header(cell, target)}</div>'
    opening = f'<div class="codeagent-cell" data-cell="{cell.number}" data-status="'
    opening += f'{esc(cell.status)}">'
    if cell.edit:
        return f"{opening}{head}{edit_html(cell.edit, target)}</div>"
    outputs = "".join(output_html(o) for o in merge_streams(cell.outputs))
    return (
        f"{opening}{head}{code_html(cell.code, cell.tool)}"
        f'<div class="codeagent-outputs">{outputs}</div></div>'
    )


def plan_html(plan: tuple[dict[str, str], ...]) -> str:
    if not plan:
        return ""
    rows = "".join(
        f'<li data-status="{esc(p["status"])}" style="list-style:none;'
        f"{'font-weight:bold;' if p['status'] == 'in_progress' else ''}"
        f'{"color:" + MUTED + ";" if p["status"] == "done" else ""}">'
        f"{_STATUS_ICON.get(p['status'], '○')} {esc(p['step'])}</li>"
        for p in plan
    )
    ul = f'<ul style="margin:2px 0;padding-left:4px">{rows}</ul>'
    return f'<div class="codeagent-plan" style="font-size:12px"><b>Plan</b>{ul}</div>'


def status_html(state: SessionState, now: float, note: str = "") -> str:
    """ "running · step 3 · 12.4 s · 1,234 tokens (1,000 in / 234 out)".

    Counts the server did not send are estimated, and shown so: "~1,234 tokens (estimated:
    1,000 in / 234 out)" and "~$0.0012", so that a guess never reads as a bill.
    """
    label, color = _RUN_STATUS.get(state.status, (state.status, MUTED))
    if state.status == "idle":
        label, color = "ready", MUTED
    parts = [
        f'<span class="codeagent-run-status" data-status="{esc(state.status)}" '
        f'style="color:{color};font-weight:bold">{esc(label)}</span>'
    ]
    if state.status != "idle":
        parts += [
            f"step {state.step}",
            f"{state.elapsed(now):.1f} s",
            _tokens_html(state),
        ]
        if state.cost is not None:
            parts.append(("~" if state.tokens_estimated else "") + f"${state.cost:,.4f}")
    if state.model:
        parts.append(esc(state.model))
    extra = state.retry or note
    tail = f' <span style="color:{MUTED}">— {esc(extra)}</span>' if extra else ""
    return f'<div class="codeagent-status" style="font-size:12px">{" · ".join(parts)}{tail}</div>'


def _tokens_html(state: SessionState) -> str:
    split = f"{state.prompt_tokens:,} in / {state.completion_tokens:,} out"
    tokens = state.prompt_tokens + state.completion_tokens
    if state.tokens_estimated:
        return (
            f'<span class="codeagent-tokens" data-estimated="true">~{tokens:,} tokens '
            f"(estimated: {split})</span>"
        )
    return f'<span class="codeagent-tokens">{tokens:,} tokens ({split})</span>'


def arguments_html(arguments: Any) -> str:
    """A tool call's input, shown before the user approves it."""
    if isinstance(arguments, dict) and set(arguments) == {"code"}:
        return code_html(str(arguments["code"]))
    if isinstance(arguments, dict) and set(arguments) == {"command"}:
        return code_html(str(arguments["command"]), "run_command")
    text = json.dumps(arguments, indent=2, ensure_ascii=False, default=str)
    return f'<pre style="{PRE}">{esc(head_tail(text, MAX_TEXT))}</pre>'


def markdown_html(text: str) -> str:
    """Model text as HTML: Markdown through mistune (tables and strikethrough included)
    with raw HTML escaped, then the same allow-list as sandbox HTML (links and image URLs
    are the model's too); plain preformatted text if mistune is missing."""
    try:
        import mistune
    except ImportError:  # pragma: no cover - mistune ships with every jupyter_server
        return f'<div style="white-space:pre-wrap;font-size:13px">{esc(text)}</div>'
    to_html = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])
    body = clean_html(str(to_html(text)))
    return f'<div class="codeagent-text jp-RenderedHTMLCommon" style="{_TEXT_STYLE}">{body}</div>'


_TEXT_STYLE = "font-size:13px;padding:0;overflow-x:auto"


def banner_html(state: SessionState) -> str:
    """The red line at the top of the panel while the session's sandbox is unconfined.

    Empty until a run has started (before that nothing was reported, which is not the same
    as unconfined) and whenever the sandbox has pid and filesystem isolation.
    """
    if state.status == "idle":
        return ""
    text = warning(state.enforcement)
    if text is None:
        return ""
    return (
        f'<div class="codeagent-unconfined" role="alert" style="background:{theme.BANNER_BG};'
        f"color:{theme.BANNER_TEXT};font-weight:bold;font-size:12px;padding:4px 8px;"
        f'border-radius:3px">{esc(text)}</div>'
    )
