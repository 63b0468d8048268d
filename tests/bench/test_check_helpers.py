"""The checkers' building blocks on real files: what they accept, what they refuse."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.tasks import load_tasks
from bench.tasks._common import numbers_in, png_axes, png_bar_lengths, png_bars, read_png


def _save(fig, path: Path) -> None:
    fig.savefig(path)
    plt.close(fig)


def test_bars_and_panels_are_read_back_from_the_png(tmp_path: Path) -> None:
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.bar(range(12), range(5, 17), color="tab:orange")
    ax.grid(True)  # grid lines drawn across the bars must not split them
    _save(fig, tmp_path / "bars.png")
    fig, ax = plt.subplots()
    ax.barh(["a", "b", "c"], [3, 1, 2])
    _save(fig, tmp_path / "barh.png")
    fig, _ = plt.subplots(2, 2)
    _save(fig, tmp_path / "grid.png")
    assert png_bars(read_png(tmp_path, "bars.png")) == 12
    assert png_bars(read_png(tmp_path, "barh.png")) == 3
    assert png_axes(read_png(tmp_path, "bars.png")) == 1
    assert png_axes(read_png(tmp_path, "grid.png")) == 4


def test_bar_lengths_are_read_back_in_reading_order(tmp_path: Path) -> None:
    values = [930, 700, 420, 400, 150, 60]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(list("abcdef"), values)
    ax.grid(True)  # a grid line runs down the middle of every bar
    _save(fig, tmp_path / "bars.png")
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.barh(list("abcdef"), values)  # drawn bottom-up: "a" is the lowest bar
    _save(fig, tmp_path / "barh.png")
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(list("abcdef"), [60, 930, 150, 700, 420, 400])
    _save(fig, tmp_path / "shuffled.png")

    def relative(name: str) -> list[float]:
        lengths = png_bar_lengths(read_png(tmp_path, name))
        return [round(length / max(lengths), 2) for length in lengths]

    want = [round(v / 930, 2) for v in values]
    assert all(abs(a - b) <= 0.01 for a, b in zip(relative("bars.png"), want, strict=True))
    assert all(abs(a - b) <= 0.01 for a, b in zip(relative("barh.png"), want[::-1], strict=True))
    assert relative("shuffled.png")[:2] == [0.06, 1.0]


def test_a_result_linked_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    """A session may leave a symlink where a result should be; the checker does not follow it."""
    (tmp_path / "ws").mkdir()
    outside = tmp_path / "secret.csv"
    outside.write_text("id,price\n1,2\n")
    task = load_tasks("clean_prices")[0]
    task.setup(tmp_path / "ws")
    (tmp_path / "ws" / "clean.csv").symlink_to(outside)
    passed, reason = task.check(tmp_path / "ws", "")
    assert not passed and reason.startswith("unreadable result"), reason


def test_numbers_are_read_from_prose() -> None:
    assert numbers_in("total 328,939.89 over 57 rows; p = 0.0342, z=-2.1") == [
        328939.89,
        57.0,
        0.0342,
        -2.1,
    ]


def test_a_missing_result_says_which_file() -> None:
    task = load_tasks("bar_chart")[0]
    passed, reason = task.check(Path("/nonexistent-workspace"), "")
    assert not passed and "totals.png" in reason
