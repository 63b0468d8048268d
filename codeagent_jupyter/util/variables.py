"""Describe Python objects by type and shape, never by value.

The user's kernel tells the model what its variables are (so proposed cells can use the
real ``df``), and the sandbox tells it what was copied in; both use these functions so the
model reads one format: ``df: pandas.DataFrame 10,000x12, columns: date[datetime64[ns]], …``.
Only the type, the shape, the length, column names and dtypes are looked at: a value (a cell
of a frame, the text of a string, a secret in a dict) never becomes part of a description.

Pure stdlib and duck typing, so it runs in any kernel without importing pandas or numpy.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

MAX_COLUMNS = 20
"""Columns named in one description; wider frames say how many more there are."""
MAX_NAMES = 60
"""Variables in a namespace summary; the most recently defined are kept."""
MAX_NAME_CHARS = 80

_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray)


def type_name(obj: Any) -> str:
    """``pandas.DataFrame`` rather than ``pandas.core.frame.DataFrame`` where the top-level
    package exports the class; builtins by their bare name."""
    cls = type(obj)
    module = getattr(cls, "__module__", "") or ""
    if module == "builtins":
        return cls.__qualname__
    top = module.split(".")[0]
    package = sys.modules.get(top)
    if package is not None and getattr(package, cls.__name__, None) is cls:
        return f"{top}.{cls.__name__}"
    return f"{module}.{cls.__qualname__}"


def _declared(obj: Any, attribute: str) -> bool:
    """True when the class itself defines ``attribute`` (no ``__getattr__`` proxies)."""
    return any(attribute in vars(k) for k in type(obj).__mro__)


def describe(name: str, obj: Any) -> dict[str, Any]:
    """A JSON-able description of ``obj``: name, type and, where the object has them,
    shape, dtype, length and column names with dtypes. No values."""
    entry: dict[str, Any] = {"name": str(name)[:MAX_NAME_CHARS], "type": type_name(obj)}
    try:
        if _declared(obj, "shape"):
            shape = obj.shape
            if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
                entry["shape"] = list(shape)
        if _declared(obj, "dtypes") and _declared(obj, "columns"):
            pairs = list(obj.dtypes.items())
            entry["n_columns"] = len(pairs)
            entry["columns"] = [[str(c)[:MAX_NAME_CHARS], str(t)] for c, t in pairs[:MAX_COLUMNS]]
        elif _declared(obj, "dtype"):
            entry["dtype"] = str(obj.dtype)[:MAX_NAME_CHARS]
        if "shape" not in entry and isinstance(obj, _SIZED):
            entry["len"] = len(obj)
    except Exception:  # a broken object is still named by its type
        pass
    return entry


def line(entry: Mapping[str, Any]) -> str:
    """One compact line for the model, e.g. ``df: pandas.DataFrame 100x3, columns: a[int64]``."""
    text = f"{entry['name']}: {entry['type']}"
    shape = entry.get("shape")
    if shape:
        text += " " + "\u00d7".join(f"{n:,}" for n in shape)
    elif "len" in entry:
        text += f" (len {entry['len']:,})"
    if entry.get("dtype"):
        text += f" dtype {entry['dtype']}"
    columns = entry.get("columns")
    if columns:
        shown = ", ".join(f"{c}[{t}]" for c, t in columns)
        more = int(entry.get("n_columns", len(columns))) - len(columns)
        text += f", columns: {shown}" + (f", … (+{more} more)" if more > 0 else "")
    return text


def user_variables(namespace: Mapping[str, Any], hidden: Iterable[str] = ()) -> dict[str, Any]:
    """The names a user defined: not private (``_x``), not IPython's own (``hidden``, e.g.
    ``In``/``Out``/``get_ipython``), not imported modules."""
    skip = set(hidden)
    return {
        name: obj
        for name, obj in namespace.items()
        if not name.startswith("_")
        and name not in skip
        and not isinstance(obj, types.ModuleType)
        and name.isidentifier()
    }


def summarize(
    namespace: Mapping[str, Any], hidden: Iterable[str] = (), *, max_names: int = MAX_NAMES
) -> list[dict[str, Any]]:
    """Descriptions of the user's variables, the ``max_names`` most recently defined."""
    chosen = list(user_variables(namespace, hidden).items())[-max_names:]
    return [describe(name, obj) for name, obj in chosen]
