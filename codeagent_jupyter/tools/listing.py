"""Which workspace file a cell's output lists, so a cut listing can name ``read_file``.

A model often reads a file with ``cat path``, ``sed -n '200,320p' path`` or
``print(open("path").read())`` rather than ``read_file``. When such output is too long the
hidden lines are lines of that file, and the cut can say which ``read_file`` call shows them.
Only these plain, single-command forms are recognised: anything else (pipes, several files,
a computed path) gets the generic "print a slice" hint, never a wrong line number.
"""

from __future__ import annotations

import re
import shlex

from ..util.elision import Hint, read_hint

_SHELL = re.compile(r"^!?\s*(?P<cmd>cat|sed\s+-n\s+\S+)\s+(?P<path>[^\s|;&<>`$]+)\s*$")
_SED_RANGE = re.compile(r"^(?P<first>\d+)(?:,\d+)?p$")
_PYTHON = re.compile(
    r"""^print\(\s*(?:open\(\s*(?P<q1>['"])(?P<p1>[^'"\\]+)(?P=q1)\s*\)\.read\(\)"""
    r"""|(?:pathlib\.)?Path\(\s*(?P<q2>['"])(?P<p2>[^'"\\]+)(?P=q2)\s*\)\.read_text\(\))"""
    r"""\s*(?:,\s*end\s*=\s*(?P<q3>['"])(?P=q3)\s*)?\)$"""
)


def listed_file(code: str) -> tuple[str, int] | None:
    """``(path, offset)`` when ``code`` only prints a workspace file from its line
    ``offset + 1`` (``cat``, ``sed -n 'A,Bp'``, ``print(open(p).read())``), else None."""
    code = code.strip()
    if "\n" in code:
        return None
    shell = _SHELL.match(code)
    if shell:
        cmd = shell.group("cmd")
        offset = 0
        if cmd.startswith("sed"):
            try:
                script = shlex.split(cmd)[-1]
            except ValueError:
                return None
            sed = _SED_RANGE.match(script)
            if sed is None:
                return None
            offset = int(sed.group("first")) - 1
        return _relative(shell.group("path"), offset)
    py = _PYTHON.match(code)
    if py:
        return _relative(py.group("p1") or py.group("p2"), 0)
    return None


def _relative(path: str, offset: int) -> tuple[str, int] | None:
    """Only relative paths name a file ``read_file`` can open (the workspace's)."""
    if path.startswith(("/", "~")) or ".." in path.split("/"):
        return None
    return path.removeprefix("./"), offset


def hint_for(code: str) -> Hint | None:
    """The elision hint for a cell's output: a ``read_file`` call when the cell lists a file."""
    listed = listed_file(code)
    return read_hint(*listed) if listed else None


def lists_source(code: str) -> bool:
    """Whether ``code`` only prints a Python file: its cut then keeps whole definitions."""
    listed = listed_file(code)
    return listed is not None and listed[0].endswith(".py")
