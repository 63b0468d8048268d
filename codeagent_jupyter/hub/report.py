"""The usage report as CSV and as one self-contained HTML page (inline SVG, no assets).

Every value that comes from the hub (user names, group names) is escaped: a user name is
data, never markup.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone
from html import escape
from typing import Any

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


def _chart(days: list[dict[str, Any]], width: int = 640, height: int = 160) -> str:
    """Tokens per day as bars, newest right; the last 30 days."""
    days = days[-30:]
    if not days:
        return "<p>No requests yet.</p>"
    top = max(d["tokens"] for d in days) or 1
    bar = width / len(days)
    parts = []
    for i, day in enumerate(days):
        h = max(1.0, (height - 20) * day["tokens"] / top)
        label = f"{day['day']}: {day['tokens']} tokens, {day['requests']} requests"
        parts.append(
            f'<rect x="{i * bar + 1:.1f}" y="{height - 20 - h:.1f}" width="{max(1.0, bar - 2):.1f}"'
            f' height="{h:.1f}" fill="#4a7fb5"><title>{escape(label)}</title></rect>'
        )
    parts.append(f'<text x="0" y="{height - 4}" font-size="11">{escape(days[0]["day"])}</text>')
    parts.append(
        f'<text x="{width}" y="{height - 4}" font-size="11" text-anchor="end">'
        f"{escape(days[-1]['day'])}</text>"
    )
    return (
        f'<svg role="img" aria-label="tokens per day" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )


def to_html(data: dict[str, Any]) -> str:
    """The instructor's page: switches, a per-day chart and the per-student table."""
    rows = "".join(
        "<tr>"
        f"<td>{escape(s['user'])}</td><td>{s['requests']}</td><td>{s['sessions']}</td>"
        f"<td>{s['prompt_tokens']}</td>"
        f"<td>{s['completion_tokens']}</td><td>{s['total_tokens']}</td>"
        f"<td>{s['cost']:.4f}</td><td>{escape(when(s['last_use']))}</td>"
        "</tr>"
        for s in data["students"]
    )
    off = [scope for scope, on in data["switches"].items() if not on]
    switched = (
        "AI switched off for: " + ", ".join("the class" if s == "*" else escape(s) for s in off)
        if off
        else "No AI switch is off (the policy file may still switch AI off)."
    )
    problem = (
        f'<p class="warn">Policy file problem (last good policy in force): '
        f"{escape(data['policy_error'])}</p>"
        if data.get("policy_error")
        else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Class AI usage</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: .3em .6em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
.warn {{ color: #a00; }}
</style></head>
<body>
<h1>Class AI usage</h1>
<p>{switched}</p>{problem}
<h2>Tokens per day</h2>
{_chart(data["days"])}
<h2>Per student</h2>
<p><a href="usage.csv">Download CSV</a> · <a href="usage">JSON</a></p>
<table><thead><tr><th>student</th><th>requests</th><th>sessions</th>
<th>prompt tokens</th>
<th>completion tokens</th><th>total tokens</th><th>cost (USD)</th><th>last use</th></tr></thead>
<tbody>{rows}</tbody></table>
</body></html>
"""
