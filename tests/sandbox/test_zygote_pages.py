"""What the zygote does once so its forks share more pages (``sandbox.zygote_pages``), in
this process: ipykernel's walk over the loaded modules reads stand-ins that say the same,
and only while a kernel starts; a figure drawn ahead leaves no font file open."""

from __future__ import annotations

import os
import sys
import types

import pytest

from codeagent_jupyter.sandbox.zygote_pages import ModuleFiles, first_uses


def _walk() -> list[str]:
    """ipykernel's own walk (``IPythonKernel.__init__``), run in its module's globals."""
    from ipykernel import ipkernel

    code = (
        '[m.__file__ for m in sys.modules.copy().values() if hasattr(m, "__file__") and m.__file__]'
    )
    return eval(code, vars(ipkernel))  # our own fixed expression, in its globals


def test_the_kernels_walk_sees_the_same_files_and_only_while_it_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ipykernel import ipkernel

    files = ModuleFiles()
    later = types.ModuleType("codeagent_imported_after_the_snapshot")
    later.__file__ = "/nowhere/after.py"
    monkeypatch.setitem(sys.modules, later.__name__, later)
    real = set(_walk())
    with files.read_by_kernel():
        assert ipkernel.sys is not sys and ipkernel.sys.modules is not sys.modules
        seen = _walk()
        assert ipkernel.sys.version == sys.version  # everything else is the real sys
    assert ipkernel.sys is sys
    assert set(seen) == real and "/nowhere/after.py" in seen
    assert all(type(m).__name__ == "_File" for n, m in files._now().items() if n != later.__name__)


def test_an_ipykernel_without_that_global_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from ipykernel import ipkernel

    other = types.SimpleNamespace(modules={})
    monkeypatch.setattr(ipkernel, "sys", other)
    with ModuleFiles().read_by_kernel():
        assert ipkernel.sys is other
    assert ipkernel.sys is other


def test_the_figure_drawn_ahead_leaves_no_font_open() -> None:
    pyplot = pytest.importorskip("matplotlib.pyplot")
    pyplot.switch_backend("Agg")

    def fonts() -> set[str]:
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.endswith((".ttf", ".otf", ".afm")):
                found.add(target)
        return found

    before = fonts()
    first_uses()
    assert fonts() == before
