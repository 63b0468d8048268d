"""File search: rank a folder of images by brightness (a stray non-image file included)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._common import Fail, Script, answer_has_words, checker, column, read_rows, rng

CATEGORY = "file search"
TRAP = ""
PROMPT = """
images/ holds a few small photos (PNG) and some other files. Compute the mean brightness of
every PNG (the mean of all pixel values) and save brightness.csv with columns file (the file
name) and brightness, brightest first. Which image is the brightest?
"""
NAMES = ["beach", "forest", "night", "snow", "desk", "street", "cave", "sky"]


def _levels() -> dict[str, float]:
    r = rng(2323)
    return {
        f"{n}.png": float(v)
        for n, v in zip(NAMES, r.permutation(np.linspace(0.1, 0.9, 8)), strict=True)
    }


def setup(workdir: Path) -> None:
    from PIL import Image

    r = rng(2324)
    folder = workdir / "images"
    folder.mkdir()
    for name, level in _levels().items():
        pixels = np.clip(level + r.normal(0, 0.05, (24, 32, 3)), 0, 1)
        Image.fromarray((pixels * 255).astype(np.uint8)).save(folder / name)
    (folder / "README.txt").write_text("Photos from the field trip.\n")
    (folder / "thumbs.db").write_bytes(bytes(range(256)))


@checker
def check(workdir: Path, answer: str) -> str:
    order = sorted(_levels(), key=lambda n: -_levels()[n])
    files = [
        Path(f).name for f in column(read_rows(workdir, "brightness.csv"), "file", "brightness.csv")
    ]
    if files != order:
        raise Fail(f"brightness.csv lists {files}, expected {order}")
    answer_has_words(answer, [order[0].removesuffix(".png")], "the brightest image")
    return f"8 images ranked; {order[0]} is the brightest"


RANK = """\
import csv
from pathlib import Path
import numpy as np
from PIL import Image
means = {p.name: np.asarray(Image.open(p).convert("RGB"), dtype=float).mean()
         for p in Path("images").glob("*.png")}
ranked = sorted(means.items(), key=lambda kv: -kv[1])
with open("brightness.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["file", "brightness"])
    w.writerows(ranked)
print(ranked)
"""
_TOP = max(_levels(), key=lambda n: _levels()[n])
SOLVED = Script([RANK], f"Saved brightness.csv; {_TOP} is the brightest image.")
WRONG = Script(
    [RANK.replace("key=lambda kv: -kv[1]", "key=lambda kv: kv[1]")],
    "Saved brightness.csv; the darkest is first.",
)
