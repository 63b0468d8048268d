"""A diff's cost is bounded before difflib runs (``change_kinds.DIFF_CHANGED``)."""

from __future__ import annotations

from codeagent_jupyter.record.change_kinds import DIFF_CHANGED, describe


def _text(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def test_ten_thousand_similar_lines_are_not_matched() -> None:
    before = _text([f"x{i % 101}" for i in range(10_000)])
    after = _text([f"x{(i + 50) % 99}" for i in range(10_000)])
    found = describe("data.txt", before, after, 400)
    assert found.note == "diff omitted: too costly, 10,000 lines changed"
    assert found.diff == [] and found.added is None


def test_a_small_edit_in_a_long_file_is_still_diffed() -> None:
    """Only what lies between the common first and last lines counts."""
    lines = [f"row {i}" for i in range(15_000)]
    edited = [*lines[:7_000], "a new row", *lines[7_001:]]
    found = describe("data.txt", _text(lines), _text(edited), 400)
    assert (found.added, found.removed, found.note) == (1, 1, "")
    assert "+a new row" in found.diff and "-row 7000" in found.diff


def test_the_bound_itself_is_diffed_and_one_more_line_is_not() -> None:
    same = [f"same {i}" for i in range(10)]
    old = [f"old {i}" for i in range(DIFF_CHANGED)]
    new = [f"new {i}" for i in range(DIFF_CHANGED)]
    found = describe("f.txt", _text(same + old + same), _text(same + new + same), 10)
    assert (found.added, found.removed) == (DIFF_CHANGED, DIFF_CHANGED)
    found = describe("f.txt", _text(same + old + same), _text([*same, *new, "x", *same]), 10)
    assert found.note == f"diff omitted: too costly, {DIFF_CHANGED + 1:,} lines changed"
