"""The panel's colours and stylesheet: JupyterLab's CSS variables only, so light, dark and
high-contrast themes all read.

Every colour here is a ``var(--jp-…)``. Where a frontend defines none (a static copy of the
notebook on a site without JupyterLab's CSS), the declaration is invalid, so text inherits
the page's colour and backgrounds stay transparent: still readable. The pairs were chosen
for contrast in JupyterLab's own themes: code on ``--jp-cell-editor-background`` with
token colours that keep 4.5:1 in the light and dark themes (JupyterLab's comment, def and
meta colours do not on a dark editor, so those tokens borrow other variables).

``STYLE`` is the one stylesheet of the panel, carried in its first (hidden) HTML widget:
what inline styles cannot say: a line height for ipywidgets' HTML boxes; widths that leave
room for ipywidgets' margins (a box with ``width: 100%`` plus its 2 px margins made every
box around it scroll sideways; a wide table must scroll in its own frame, not stretch
the flex item that holds it); the message of a panel whose kernel is gone.
"""

from __future__ import annotations

from pygments.lexers import BashLexer, PythonLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Token

TEXT = "var(--jp-content-font-color1)"
MUTED = "var(--jp-content-font-color2)"
ERROR = "var(--jp-error-color1)"
OK = "var(--jp-success-color0)"
RUNNING = "var(--jp-brand-color1)"
WARN = "var(--jp-warn-color0)"
BORDER = "var(--jp-border-color2)"
CODE_BG = "var(--jp-cell-editor-background)"
CODE_BORDER = "var(--jp-cell-editor-border-color)"
ERROR_BG = "var(--jp-rendermime-error-background)"
PANEL_BG = "var(--jp-layout-color0)"
ADDED = "var(--jp-mirror-editor-keyword-color)"
REMOVED = "var(--jp-mirror-editor-string-color)"
HUNK = "var(--jp-mirror-editor-variable-2-color)"
BANNER_BG = "var(--jp-error-color1)"
BANNER_TEXT = "var(--jp-ui-inverse-font-color0)"

_TOKENS: tuple[tuple[object, str], ...] = (
    (Comment, "var(--jp-content-font-color2)"),
    (String, "var(--jp-mirror-editor-string-color)"),
    (Number, "var(--jp-mirror-editor-variable-2-color)"),
    (Keyword, "var(--jp-mirror-editor-keyword-color)"),
    (Name.Builtin, "var(--jp-mirror-editor-builtin-color)"),
    (Name.Function, "var(--jp-mirror-editor-variable-2-color)"),
    (Name.Class, "var(--jp-mirror-editor-variable-2-color)"),
    (Name.Decorator, "var(--jp-mirror-editor-operator-color)"),
    (Operator.Word, "var(--jp-mirror-editor-keyword-color)"),
    (Operator, "var(--jp-mirror-editor-operator-color)"),
    (Punctuation, "var(--jp-mirror-editor-punctuation-color)"),
)


def token_color(kind: object) -> str:
    """The variable for a Pygments token type (its nearest listed ancestor), or '' for
    plain text (names, whitespace), which keeps the block's own colour."""
    for parent, color in _TOKENS:
        if kind in parent:  # type: ignore[operator]
            return color
    return ""


def highlight(code: str, language: str = "python") -> str:
    """``code`` (``python`` or ``shell``) as escaped HTML spans coloured with JupyterLab's
    editor variables."""
    import html

    lexer = BashLexer() if language == "shell" else PythonLexer()
    parts = []
    for kind, value in lexer.get_tokens(code):
        text = html.escape(value, quote=False)
        color = token_color(kind) if kind is not Token.Text else ""
        if color and value.strip():
            italic = "font-style:italic;" if kind in Comment else ""
            parts.append(f'<span style="color:{color};{italic}">{text}</span>')
        else:
            parts.append(text)
    return "".join(parts).rstrip("\n")


STYLE = """<style>
.codeagent-panel .widget-html-content,
.codeagent-panel .jupyter-widget-html-content { line-height: 1.45; min-width: 0; }
.codeagent-panel pre { line-height: var(--jp-code-line-height, 1.4); }
.codeagent-panel, .codeagent-panel .jupyter-widgets {
  max-width: calc(100% - 2 * var(--jp-widgets-margin, 2px));
}
.codeagent-panel.jupyter-widgets-disconnected::before,
.codeagent-panel .jupyter-widgets-disconnected::before { display: none; }
.codeagent-panel .codeagent-dead { display: none; }
.codeagent-panel.jupyter-widgets-disconnected .codeagent-dead { display: block; }
.codeagent-panel.jupyter-widgets-disconnected .jupyter-button,
.codeagent-panel.jupyter-widgets-disconnected textarea,
.codeagent-panel.jupyter-widgets-disconnected select {
  pointer-events: none; opacity: 0.45;
}
.codeagent-panel details > summary { cursor: pointer; color: var(--jp-content-font-color2); }
</style>"""
"""Rules inline styles cannot express. ``jupyter-widgets-disconnected`` is the class
ipywidgets puts on every view whose kernel is gone (restarted, shut down): the panel then
shows its own message instead of a broken-link icon per widget, and dims its controls."""
