"""Tracebacks whose source lines are the lines that ran, installed in the sandbox kernel.

IPython 9.12 and later send a frame through a "fast path" when its file name ends in ``.py``
but no such file exists. ipykernel names every cell that way (``/tmp/ipykernel_<pid>/<hash>.py``)
and keeps its source only in ``linecache``, so every frame of a cell takes that path. It shows
the lines ``inspect.getsourcelines(frame)`` returns as if they began at the code object's
``co_firstlineno``. For a generator expression (and, up to Python 3.11, a comprehension or a
class body) Python 3.12 and older ``inspect.findsource`` walk back to the nearest line that
looks like ``def``, ``lambda`` or a decorator, or to line 1: the traceback then says
``Cell In[2], line 14, in <genexpr>`` above the text of another line. The model reads that
and fixes the wrong line; a stock ``python3`` kernel shows the same.

``install`` makes ``get_line_number_of_frame`` do what its docstring says: for a frame whose
file is not on disk, count the lines of the source the frame does have (``linecache``). A
cell then takes stack_data's path again, which finds the right lines, as IPython did before
9.12. Nothing changes where IPython has no such function, or where a file is on disk.
"""

from __future__ import annotations

import importlib
import linecache
from collections.abc import Callable
from types import FrameType
from typing import Any

_MODULES = ("IPython.core.ultratb", "IPython.core.doctb")
_MARK = "_codeagent_counts_cells"


def _counting_cells(original: Callable[[FrameType], int]) -> Callable[[FrameType], int]:
    def get_line_number_of_frame(frame: FrameType) -> int:
        try:
            return original(frame)
        except OSError:
            lines = linecache.getlines(frame.f_code.co_filename)
            if not lines:
                raise  # no source anywhere: IPython's own "could not get source" stays
            return len(lines)

    setattr(get_line_number_of_frame, _MARK, True)
    get_line_number_of_frame.__doc__ = original.__doc__
    return get_line_number_of_frame


def install() -> list[str]:
    """Correct the line count IPython uses to choose how to show a frame; the modules fixed.

    Safe to call twice, and a no-op on an IPython without the function.
    """
    fixed = []
    for name in _MODULES:
        try:
            module: Any = importlib.import_module(name)
        except ImportError:
            continue
        original = getattr(module, "get_line_number_of_frame", None)
        if original is None or getattr(original, _MARK, False):
            continue
        module.get_line_number_of_frame = _counting_cells(original)
        fixed.append(name)
    return fixed
