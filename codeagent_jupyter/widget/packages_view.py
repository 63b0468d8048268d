"""What the panel shows of an ``install_packages`` approval: each wheel's package, version,
size and index, and the model's reason, as a small table (text escaped; theme colours)."""

from __future__ import annotations

from html import escape
from typing import Any

from ..util.sizes import size_text
from . import theme


def is_install(arguments: Any) -> bool:
    """Whether these are the details of an install waiting for approval."""
    return isinstance(arguments, dict) and isinstance(arguments.get("install"), list)


def packages_html(arguments: dict[str, Any]) -> str:
    cell = f"padding:2px 8px;border-bottom:1px solid {theme.BORDER};text-align:left"
    rows = []
    total = 0
    for wheel in arguments["install"]:
        if not isinstance(wheel, dict):
            continue
        size = wheel.get("size_bytes")
        size = size if isinstance(size, int | float) and not isinstance(size, bool) else 0
        total += size
        values = [
            wheel.get("name", ""),
            wheel.get("version", ""),
            size_text(size),
            wheel.get("index"),
        ]
        rows.append("".join(f'<td style="{cell}">{escape(str(v or ""))}</td>' for v in values))
    head = "".join(
        f'<th style="{cell};color:{theme.MUTED}">{h}</th>'
        for h in ("package", "version", "size", "index")
    )
    body = "".join(f'<tr class="codeagent-package">{r}</tr>' for r in rows)
    reason = escape(str(arguments.get("reason", "")))
    return (
        f'<div class="codeagent-install" style="font-size:12px;color:{theme.TEXT}">'
        f"<div>{reason}</div>"
        f'<table style="border-collapse:collapse;margin:4px 0"><tr>{head}</tr>{body}</table>'
        f"<div>{len(rows)} wheel(s), {escape(size_text(total))} in all</div></div>"
    )
