"""Keeping a fork's pages shared: what a zygote does once so its forks do not each copy it.

A fork shares the zygote's memory until it writes to it, and CPython writes to every object
it touches (its reference count). So a walk over objects scattered through the zygote's heap
costs a fork a private copy of every page it passes, although it changes nothing. Two such
walks came with every sandbox (``bench/sandbox.py --only memory``):

- ipykernel lists the file of every loaded module when its kernel starts
  (``IPythonKernel._kernel_modules``, for the debugger): about 1,200 module objects and
  their ``__file__`` strings, spread over the zygote's heap, about 4 MiB per fork. The
  zygote packs small stand-ins for them together (``ModuleFiles``), and the fork's kernel
  walks those.
- The first figure a kernel draws builds matplotlib's lazy state (text layout, font
  lookups, path caches), and its first DataFrame with text sets up Arrow's allocator
  (pandas 3 keeps text in Arrow). The zygote does both (``first_uses``), so a fork's first
  ones use what is already there: about 3.5 and 2 MiB less per fork.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any


class _File:
    """What ipykernel reads of a module: its ``__file__``, in 24 bytes."""

    __slots__ = ("__file__",)

    def __init__(self, path: str) -> None:
        self.__file__ = path


class _SysView:
    """``sys`` as one module sees it: ``modules`` replaced, everything else the real one."""

    def __init__(self, modules: dict[str, Any]) -> None:
        self.modules = modules

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)


class ModuleFiles:
    """The loaded modules' files, copied where a fork can read them without copying pages.

    Made in the zygote after its imports and before it forks: the stand-ins and their
    strings are new objects, allocated one after another, so they fill a few pages instead
    of touching thousands.
    """

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path:  # a fresh copy, next to its stand-in
                self._files[name] = _File(
                    path.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
                )
        self._seen = len(sys.modules)

    def _now(self) -> dict[str, Any]:
        """The stand-ins, and the modules imported since they were made (the newest keys
        of ``sys.modules``: read from its end, so its other entries are not touched)."""
        newer = max(len(sys.modules) - self._seen, 0)
        recent = list(itertools.islice(reversed(sys.modules), newer))
        return {**self._files, **{name: sys.modules[name] for name in recent}}

    @contextlib.contextmanager
    def read_by_kernel(self) -> Iterator[None]:
        """While the kernel starts, ipykernel's kernel module reads the stand-ins as
        ``sys.modules``; nothing else does, and the real ``sys`` is back afterwards. An
        ipykernel without that module or that global is left as it is."""
        kernel = sys.modules.get("ipykernel.ipkernel")
        if not isinstance(kernel, ModuleType) or getattr(kernel, "sys", None) is not sys:
            yield
            return
        kernel.sys = _SysView(self._now())  # type: ignore[assignment]
        try:
            yield
        finally:
            kernel.sys = sys


def first_uses() -> None:
    """Draw a first figure and make a first DataFrame, as most sandboxes' first cells do,
    with whichever of pyplot and pandas the zygote imported."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        _draw_once(pyplot)
    pandas = sys.modules.get("pandas")
    if pandas is not None:  # text labels and values: pandas 3 keeps them in Arrow, whose
        # allocator sets itself up on first use (2 MiB written; the zygote's host tells it
        # to reserve no arena ahead, which a fork's RLIMIT_DATA would count)
        pandas.DataFrame({"x": [0, 1], "label": ["a", "b"]})


def _draw_once(pyplot: ModuleType) -> None:
    """Draw one figure with the current (Agg) backend, then close it, and close its fonts:
    matplotlib keeps a font's file open while the font is cached, and a fork closes every
    descriptor the zygote had."""
    figure = pyplot.figure()
    figure.add_subplot().plot([0, 1], label="x")
    figure.canvas.draw()
    pyplot.close(figure)
    font_manager = sys.modules.get("matplotlib.font_manager")
    cached = getattr(font_manager, "_get_font", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()
