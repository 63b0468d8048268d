"""A byte count as people read it, written one way everywhere.

The install approval card and the install's result both name a wheel's size; with two
formulas a 38.9 kB wheel read "(0.0 MB)" once installed. Both use ``size_text``.
"""

from __future__ import annotations

KB = 1024
MB = 1024 * 1024


def size_text(size: float) -> str:
    """ "38.9 kB" below 100 kB, "1.2 MB" from there on (binary units, one decimal)."""
    return f"{size / MB:.1f} MB" if size >= 100 * KB else f"{size / KB:.1f} kB"
