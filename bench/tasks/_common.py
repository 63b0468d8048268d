"""What every task module shares: its shape, deterministic data, and checks that read results.

A task module defines ``CATEGORY``, ``PROMPT``, ``TRAP`` (what a first attempt usually gets
wrong, ``""`` when nothing does), optionally ``MAX_STEPS``/``MAX_TOKENS``, ``setup(workdir)``,
``check(workdir, answer) -> (passed, reason)``, and ``SOLVED``/``WRONG``: hand-written model
turns (``Script``) that the recordings are made from, one that solves the task and one that
gets it wrong, so that every checker is proven to accept and to reject.

A hard task also sets ``TIER = "hard"`` (the default is ``"easy"``) and ``NAIVE``: the script
a strong model would write blind, from the prompt and the file list alone, which fails the
checker (the proof that the task needs looking at the data or running code). ``LIMITS``
(``SandboxLimits`` fields, e.g. a memory budget) are part of a task where they make it.
Hidden truth is computed by the checker from the task's seed, never written where the
sandbox can read it.

Checkers read what the sandbox wrote through ``confined.Workspace`` (no symlink is followed
out of the workspace, sizes are capped) and never run the sandbox's code themselves.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codeagent_jupyter.util.confined import ConfinementError, Workspace

MAX_BYTES = 20_000_000
Result = tuple[bool, str]


class Fail(Exception):
    """Raised inside a checker: the task is not solved, and the message says why."""


@dataclass(frozen=True)
class Script:
    """Hand-written model turns: each cell is one ``run_cell`` call, then the final answer."""

    cells: Sequence[str]
    answer: str
    notes: Sequence[str] = field(default_factory=tuple)
    """Text said with each cell (same length as ``cells``, or empty)."""


def checker(fn: Callable[[Path, str], str]) -> Callable[[Path, str], Result]:
    """Turn a function that returns why it passed, or raises ``Fail``, into ``check``."""

    @functools.wraps(fn)
    def check(workdir: Path, answer: str) -> Result:
        try:
            return True, fn(Path(workdir), answer or "")
        except Fail as exc:
            return False, str(exc)
        except ConfinementError as exc:
            return False, f"unreadable result: {exc}"

    return check


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- writing task data ----------------------------------------------------------------------


def write_csv(
    path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]], encoding: str = "utf-8"
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding=encoding) as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


# -- reading results ------------------------------------------------------------------------


def read_bytes(workdir: Path, name: str) -> bytes:
    try:
        return Workspace(workdir).read_bytes(name, MAX_BYTES)
    except FileNotFoundError:
        raise Fail(f"{name} was not written") from None


def read_rows(workdir: Path, name: str) -> list[dict[str, str]]:
    """A result CSV as dicts, header names stripped and lower-cased; an unnamed index dropped."""
    text = read_bytes(workdir, name).decode("utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise Fail(f"{name} is empty") from None
    rows = [dict(zip(header, (v.strip() for v in row), strict=False)) for row in reader if row]
    for row in rows:
        row.pop("", None)
    return rows


def column(rows: list[dict[str, str]], name: str, source: str) -> list[str]:
    if not rows:
        raise Fail(f"{source} has no data rows")
    if name not in rows[0]:
        raise Fail(f"{source} has no column {name!r} (it has {sorted(rows[0])})")
    return [r.get(name, "") for r in rows]


def as_float(value: str, source: str) -> float:
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        raise Fail(f"{source}: {value!r} is not a number") from None


def keyed(rows: list[dict[str, str]], key: str, value: str, source: str) -> dict[str, float]:
    """``{row[key]: float(row[value])}`` for a two-column result table."""
    keys, values = column(rows, key, source), column(rows, value, source)
    return {k: as_float(v, f"{source} {value}") for k, v in zip(keys, values, strict=True)}


def expect_close(got: float, want: float, what: str, rel: float = 1e-3, tol: float = 1e-6) -> None:
    if not math.isclose(got, want, rel_tol=rel, abs_tol=tol):
        raise Fail(f"{what} is {got:g}, expected {want:g}")


def expect_table(got: dict[str, float], want: dict[str, float], what: str, rel: float = 1e-3):
    if set(got) != set(want):
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        raise Fail(f"{what}: missing {missing[:5]}, unexpected {extra[:5]}")
    for key, value in want.items():
        expect_close(got[key], value, f"{what}[{key}]", rel=rel, tol=1e-3)


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE]-?\d+)?|-?\.\d+")


def numbers_in(text: str) -> list[float]:
    """Every number in ``text`` (``1,234.5`` read as 1234.5)."""
    found = []
    for match in _NUMBER.findall(text or ""):
        try:
            found.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return found


def answer_has_number(answer: str, want: float, what: str, rel: float = 1e-3, tol: float = 0):
    if not any(math.isclose(n, want, rel_tol=rel, abs_tol=tol) for n in numbers_in(answer)):
        raise Fail(f"the answer does not state {what} ({want:g})")


def answer_has_words(answer: str, words: Sequence[str], what: str) -> None:
    low = answer.lower()
    missing = [w for w in words if w.lower() not in low]
    if missing:
        raise Fail(f"the answer does not name {what}: missing {missing}")


# -- figures: read back from the PNG --------------------------------------------------------


def read_png(workdir: Path, name: str) -> np.ndarray:
    """RGB floats in [0, 1]; fails unless the file is a real PNG."""
    from PIL import Image

    data = read_bytes(workdir, name)
    if not data.startswith(b"\x89PNG"):
        raise Fail(f"{name} is not a PNG file")
    image = Image.open(io.BytesIO(data)).convert("RGB")
    return np.asarray(image, dtype=float) / 255.0


def _colored(img: np.ndarray) -> np.ndarray:
    """Pixels with a clear hue (bars), as opposed to white, black and greys (axes, text)."""
    return (img.max(axis=2) - img.min(axis=2)) > 0.25


def _runs(line: np.ndarray, min_len: int = 2, bridge: int = 0) -> int:
    """Runs of True at least ``min_len`` long; gaps up to ``bridge`` pixels do not split one
    (a grid line drawn across a bar)."""
    padded = np.concatenate([[False], line, [False]]).astype(int)
    starts, ends = np.flatnonzero(np.diff(padded) == 1), np.flatnonzero(np.diff(padded) == -1)
    if bridge and starts.size:
        keep = np.concatenate([[True], starts[1:] - ends[:-1] > bridge])
        starts, ends = starts[keep], np.concatenate([ends[:-1][keep[1:]], ends[-1:]])
    return int(np.sum(ends - starts >= min_len))


def png_bars(img: np.ndarray) -> int:
    """Bars in a bar chart: coloured runs across the row (or column) just inside the baseline.

    Bars share a baseline, so the line a few pixels in from it crosses every bar of a
    vertical chart (or, for ``barh``, the column a few pixels right of it). The larger of
    the two counts is returned.
    """
    mask = _colored(img)
    counts = []
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if rows.size:
        counts.append(_runs(mask[max(rows[-1] - 3, 0)], bridge=3))
    if cols.size:
        counts.append(_runs(mask[:, min(cols[0] + 3, mask.shape[1] - 1)], bridge=3))
    return max(counts, default=0)


def _run_spans(line: np.ndarray, bridge: int = 3, min_len: int = 2) -> list[tuple[int, int]]:
    """``(start, end)`` of runs of True; gaps up to ``bridge`` pixels joined, short runs dropped."""
    padded = np.concatenate([[False], line, [False]]).astype(int)
    starts, ends = np.flatnonzero(np.diff(padded) == 1), np.flatnonzero(np.diff(padded) == -1)
    spans: list[list[int]] = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        if spans and start - spans[-1][1] <= bridge:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return [(a, b) for a, b in spans if b - a >= min_len]


def _reach(line: np.ndarray) -> float:
    """How far a run of True goes from the start of ``line`` (its first pixels may be edge)."""
    spans = _run_spans(line, min_len=1)
    return float(spans[0][1]) if spans and spans[0][0] <= 3 else 0.0


def png_bar_lengths(img: np.ndarray) -> list[float]:
    """Bar lengths in pixels, in reading order (left to right; ``barh``: top to bottom).

    Each bar is found where ``png_bars`` counts it, just inside the shared baseline, and
    measured from the baseline to its far end along lines at a quarter, half and three
    quarters of its width (the longest; a grid line may run down the middle of a bar, and
    gaps where one crosses it are bridged). The orientation is the one that finds more bars.
    """
    mask = _colored(img)
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if not rows.size:
        return []
    base_y, base_x = int(rows[-1]), int(cols[0])
    across = _run_spans(mask[max(base_y - 3, 0)])
    down = _run_spans(mask[:, min(base_x + 3, mask.shape[1] - 1)])
    if len(across) >= len(down):
        lines = [
            [mask[: base_y + 1, a + (b - a) * k // 4][::-1] for k in (1, 2, 3)] for a, b in across
        ]
    else:
        lines = [[mask[a + (b - a) * k // 4, base_x:] for k in (1, 2, 3)] for a, b in down]
    return [max(_reach(line) for line in bar) for bar in lines]


def png_axes(img: np.ndarray) -> int:
    """Axes in a figure, counted from their dark frame lines (spines)."""
    dark = img.max(axis=2) < 0.35
    h, w = dark.shape
    across = max((_runs(dark[y], min_len=w // 8) for y in range(h)), default=0)
    down = max((_runs(dark[:, x], min_len=h // 8) for x in range(w)), default=0)
    # A row through the top spines crosses one long run per column of axes; a column through
    # the left spines, one per row of axes. Ticks, text and bars (not dark) are short or pale.
    return across * down


def expect_png_bars(workdir: Path, name: str, want: int) -> str:
    bars = png_bars(read_png(workdir, name))
    if bars != want:
        raise Fail(f"{name} shows {bars} bars, expected {want}")
    return f"{name} shows {want} bars"
