"""The instructor's usage page: hub values are data on it, never markup."""

from __future__ import annotations

from html.parser import HTMLParser

from codeagent_jupyter.hub.report import to_html

HOSTILE = '<img src=x onerror="alert(1)">'


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def _page(**changes: object) -> str:
    student = {
        "user": HOSTILE,
        "requests": 2,
        "sessions": 1,
        "prompt_tokens": 5,
        "completion_tokens": 6,
        "total_tokens": 11,
        "cost": 0.00123,
        "last_use": 1_700_000_000,
        "estimated": False,
    }
    data = {
        "days": [{"day": "2026-11-30", "tokens": 100, "requests": 3}],
        "switches": {"*": False, f"<script>{HOSTILE}</script>": False},
        "policy_error": f"policy.users.{HOSTILE}: unknown setting",
        "students": [student],
        **changes,
    }
    return to_html(data)


def test_user_group_and_policy_error_text_is_escaped() -> None:
    page = _page()
    parser = _Tags()
    parser.feed(page)
    assert "img" not in parser.tags and "script" not in parser.tags
    assert page.count("&lt;img src=x onerror=&#34;alert(1)&#34;&gt;") == 3
    assert "AI switched off for: the class, &lt;script&gt;" in page
    assert "<td>0.0012</td><td>2023-11-14 22:13 UTC</td>" in page


def test_the_chart_has_a_bar_a_day_and_an_empty_class_says_so() -> None:
    days = [{"day": f"2026-11-{d:02d}", "tokens": d * 10, "requests": 1} for d in range(1, 31)]
    page = _page(days=[{"day": "2026-10-31", "tokens": 5, "requests": 1}, *days])
    assert page.count("<rect ") == 30 and "2026-10-31" not in page  # the last 30 days
    assert "<title>2026-11-30: 300 tokens, 1 requests</title>" in page
    empty = _page(days=[], switches={}, policy_error=None, students=[])
    assert "No requests yet." in empty and "No AI switch is off" in empty
    assert "Policy file problem" not in empty and "<svg" not in empty
