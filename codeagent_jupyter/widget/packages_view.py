"""What the panel shows of an ``install_packages`` approval: each wheel's package, version,
size and index, and the model's reason, as a small table (text escaped; theme colours)."""

from __future__ import annotations

from html import escape
from typing import Any

from . import theme


def is_install(arguments: Any) -> bool:
    """Whether these are the details of an install waiting for approval."""
    return isinstance(arguments, dict) and isinstance(arguments.get("install"), list)


def packages_html(arguments: dict[str, Any]) -> str:
    # A fixed layout as wide as the panel, long words (an index URL) wrapped anywhere: the
    # table fits a 230 px side panel instead of scrolling sideways.
    cell = (
        f"padding:2px 4px;border-bottom:1px solid {theme.BORDER};text-align:left;"
        "overflow-wrap:anywhere;vertical-align:top"
    )
    rows = []
    total = 0
    for wheel in arguments["install"]:
        if not isinstance(wheel, dict):
            continue
        size = wheel.get("size_bytes")
        size = size if isinstance(size, int | float) and not isinstance(size, bool) else 0
        total += size
        values = [wheel.get("name", ""), wheel.get("version", ""), _mb(size), wheel.get("index")]
        rows.append("".join(f'<td style="{cell}">{escape(str(v or ""))}</td>' for v in values))
    head = "".join(
        f'<th style="{cell};color:{theme.MUTED};width:{width}">{h}</th>'
        for h, width in (("package", "28%"), ("version", "18%"), ("size", "20%"), ("index", "34%"))
    )
    body = "".join(f'<tr class="codeagent-package">{r}</tr>' for r in rows)
    reason = escape(str(arguments.get("reason", "")))
    return (
        f'<div class="codeagent-install" style="font-size:12px;color:{theme.TEXT}">'
        f"<div>{reason}</div>"
        f'<table style="border-collapse:collapse;margin:4px 0;width:100%;table-layout:fixed"><tr>{head}</tr>{body}</table>'
        f"<div>{len(rows)} wheel(s), {escape(_mb(total))} in all</div></div>"
    )


def _mb(size: float) -> str:
    return f"{size / (1024 * 1024):.1f} MB" if size >= 100 * 1024 else f"{size / 1024:.1f} kB"
