"""The usage report as CSV and as one self-contained HTML page (inline SVG, no assets).

The page is the jinja2 template ``templates/report.html``, rendered with autoescape on:
every value that comes from the hub (user names, group names, the policy's error) is
data, never markup, without a call to remember at each place it is written.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

CSV_FIELDS = (
    "user",
    "requests",
    "sessions",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost",
    "last_use",
    "estimated",
)
_PAGES = Environment(
    loader=PackageLoader("codeagent_jupyter.hub", "templates"),
    autoescape=select_autoescape(("html",), default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def when(epoch: float | None) -> str:
    if not epoch:
        return ""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def to_csv(students: list[dict[str, Any]]) -> str:
    """One row per student; ``last_use`` in UTC, cost in USD."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in students:
        last, estimated = when(row["last_use"]), int(row["estimated"])
        writer.writerow({**row, "last_use": last, "estimated": estimated})
    return out.getvalue()


def _bars(days: list[dict[str, Any]], width: float, height: float) -> list[dict[str, Any]]:
    """Tokens per day as bars (position, size, a tooltip), newest right."""
    top = max(d["tokens"] for d in days) or 1
    bar = width / len(days)
    out = []
    for i, day in enumerate(days):
        h = max(1.0, (height - 20) * day["tokens"] / top)
        label = f"{day['day']}: {day['tokens']} tokens, {day['requests']} requests"
        out.append(
            {"x": i * bar + 1, "y": height - 20 - h, "w": max(1.0, bar - 2), "h": h, "label": label}
        )
    return out


def to_html(data: dict[str, Any], width: int = 640, height: int = 160) -> str:
    """The instructor's page: switches, a per-day chart (the last 30 days) and the
    per-student table."""
    days = data["days"][-30:]
    return _PAGES.get_template("report.html").render(
        off=[scope for scope, on in data["switches"].items() if not on],
        policy_error=data.get("policy_error"),
        bars=_bars(days, width, height) if days else [],
        width=width,
        height=height,
        first_day=days[0]["day"] if days else "",
        last_day=days[-1]["day"] if days else "",
        students=[{**s, "last_use": when(s["last_use"])} for s in data["students"]],
    )
