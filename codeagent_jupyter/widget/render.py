"""Small, pure HTML renderers for the panel: code, outputs, plan, status line.

They return strings (inline styles only, so they look the same in JupyterLab, Notebook 7 and
VS Code without a stylesheet) and are tested as strings.
"""

from __future__ import annotations

import html
import json
from typing import Any

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer, PythonLexer

from ..sandbox.report import warning
from ..textbounds import head_tail, strip_ansi
from ..timeline import CellItem, SessionState
from .sanitize import clean_html, data_img, svg_img

MAX_TEXT = 6_000  # characters of one text output shown in the panel (head + tail)
RED = "#b3261e"
MUTED = "#666"
HTML_CLASS = "codeagent-html jp-RenderedHTMLCommon"  # our wrapper: JupyterLab's table style
PRE = (
    "margin:0;padding:4px 6px;white-space:pre-wrap;word-break:break-word;"
    "font-family:var(--jp-code-font-family,monospace);font-size:12px;"
)
_FORMATTER = HtmlFormatter(noclasses=True, nowrap=True, style="default")
_STATUS_ICON = {"pending": "○", "in_progress": "◐", "done": "●"}
_RUN_STATUS = {
    "running": ("running", "#1a73e8"),
    "answered": ("done", "#188038"),
    "cancelled": ("cancelled", "#b06000"),
    "max_steps": ("stopped: step budget", "#b06000"),
    "max_wall_time": ("stopped: time budget", "#b06000"),
    "max_tokens": ("stopped: token budget", "#b06000"),
    "malformed": ("stopped: malformed tool calls", RED),
    "model_error": ("model error", RED),
    "error": ("error", RED),
    "interrupted": ("interrupted", RED),
}


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def code_html(code: str, tool: str = "run_cell") -> str:
    """Syntax-highlighted source (Python, or shell for ``run_command``)."""
    lexer = BashLexer() if tool == "run_command" else PythonLexer()
    body = highlight(code, lexer, _FORMATTER).rstrip("\n")
    return f'<pre style="{PRE}background:#f6f8fa;border-radius:3px">{body}</pre>'


def output_html(output: dict[str, Any]) -> str:
    """One nbformat output: streams, rich data (PNG/JPEG, SVG, HTML tables), tracebacks."""
    kind = output.get("output_type")
    if kind == "stream":
        color = f"color:{RED};" if output.get("name") == "stderr" else ""
        text = head_tail(strip_ansi(_text(output.get("text", ""))), MAX_TEXT)
        return f'<pre style="{PRE}{color}">{esc(text)}</pre>'
    if kind == "error":
        tb = "\n".join(output.get("traceback") or []) or (
            f"{output.get('ename', '')}: {output.get('evalue', '')}"
        )
        text = head_tail(strip_ansi(tb), MAX_TEXT)
        return (
            f'<pre class="codeagent-traceback" style="{PRE}color:{RED};background:#fdecea">'
            f"{esc(text)}</pre>"
        )
    if kind in ("display_data", "execute_result"):
        return _rich_html(output.get("data") or {})
    return ""


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
        return f'<div class="{HTML_CLASS}" style="overflow:auto;max-height:360px">{body}</div>'
    if "text/markdown" in data:
        return f'<pre style="{PRE}">{esc(_text(data["text/markdown"]))}</pre>'
    if "text/plain" in data:
        text = head_tail(strip_ansi(_text(data["text/plain"])), MAX_TEXT)
        return f'<pre style="{PRE}">{esc(text)}</pre>'
    return ""


def _binary_mime(mime: str) -> bool:
    """Bundles that would need deserializing (``application/x-python-pickle``, octet
    streams): the panel never loads them; results reach the user as cells or files."""
    return "pickle" in mime or mime.endswith("octet-stream")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def cell_header(cell: CellItem) -> str:
    """ "Cell 3 · step 2 · error · 0.4 s · fix for cell 2"."""
    parts = [f"<b>Cell {cell.number}</b>", f"step {cell.step}"]
    if cell.tool == "run_command":
        parts.append("shell")
    if cell.edit:
        parts.append("edit of your cell")
    color = {"ok": "#188038", "running": "#1a73e8"}.get(cell.status, RED)
    parts.append(f'<span style="color:{color}">{esc(cell.status)}</span>')
    if cell.finished and cell.duration_s:
        parts.append(f"{cell.duration_s:.1f} s")
    if cell.fixes is not None:
        parts.append(f"fix for cell {cell.fixes}")
    if cell.decision is not None:
        parts.append("accepted" if cell.decision else "rejected")
    note = f' <span style="color:{MUTED}">({esc(cell.note)})</span>' if cell.note else ""
    return " · ".join(parts) + note


def edit_html(edit: dict[str, Any]) -> str:
    """An ``edit_cell`` proposal: the reason (Markdown, sanitized) over a unified diff whose
    lines are escaped text, coloured by their first character."""
    colors = {"+": "#e6ffec", "-": "#ffebe9", "@": "#ddf4ff"}
    rows = []
    for row in str(edit.get("diff", "")).splitlines()[:400]:
        bg = colors.get(row[:1], "") if not row.startswith(("+++", "---")) else ""
        style = f' style="background:{bg}"' if bg else ""
        rows.append(f"<span{style}>{esc(row)}</span>")
    cell_id = esc(str(edit.get("cell_id", "")))
    return (
        f'<div class="codeagent-edit" data-cell-id="{cell_id}">'
        f'<div style="font-size:12px">Edit of your cell <code>{cell_id}</code>:</div>'
        f"{markdown_html(str(edit.get('reason', '')))}"
        f'<pre class="codeagent-diff" style="{PRE}">' + "\n".join(rows) + "</pre></div>"
    )


def cell_html(cell: CellItem) -> str:
    if cell.edit:
        return (
            f'<div class="codeagent-cell" data-cell="{cell.number}" data-status="'
            f'{esc(cell.status)}"><div style="font-size:12px;margin:2px 0">'
            f"{cell_header(cell)}</div>{edit_html(cell.edit)}</div>"
        )
    outputs = "".join(output_html(o) for o in cell.outputs)
    return (
        f'<div class="codeagent-cell" data-cell="{cell.number}" data-status="{esc(cell.status)}">'
        f'<div style="font-size:12px;margin:2px 0">{cell_header(cell)}</div>'
        f"{code_html(cell.code, cell.tool)}"
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
    return f'<div class="codeagent-plan"><b>Plan</b>{ul}</div>'


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
    """Model text as HTML: Markdown through mistune (a jupyter_server dependency via
    nbconvert) with raw HTML escaped, then the same allow-list as sandbox HTML (links and
    image URLs are the model's too); plain preformatted text if mistune is missing."""
    try:
        import mistune
    except ImportError:  # pragma: no cover - mistune ships with every jupyter_server
        return f'<div style="white-space:pre-wrap;font-size:13px">{esc(text)}</div>'
    body = clean_html(str(mistune.create_markdown(escape=True)(text)))
    return f'<div class="codeagent-text" style="font-size:13px">{body}</div>'


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
        f'<div class="codeagent-unconfined" role="alert" style="background:{RED};color:#fff;'
        f'font-weight:bold;font-size:12px;padding:4px 8px;border-radius:3px">{esc(text)}</div>'
    )
