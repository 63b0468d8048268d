"""The code that loads uploaded variables inside a sandbox, and the reading of its answer.

It runs in the sandbox, so it is sent as source: ``read_staged`` below and the
description helpers of ``variables`` travel in one cell, and a sandbox on another machine
(a gateway kernel) needs nothing of this package installed. Pickles are loaded here, in
the sandbox, which already runs untrusted code; never in the server or the user's kernel.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from typing import Any

from ..util import variables

MARK = "CODEAGENT-LOADED "


def read_staged(fmt: str, path: str) -> Any:
    """(Runs in the sandbox.) The object in the staged file ``path``; the file is removed.

    Parquet is memory-mapped and turned into a frame without a consolidating copy
    (``split_blocks``), freeing the Arrow table as it goes (``self_destruct``) where pandas
    passes those options on: one copy of the data in the sandbox's memory, not three.
    """
    import os
    import pickle

    try:
        if fmt == "parquet":
            import pandas

            options: dict[str, Any] = {"memory_map": True}
            if "to_pandas_kwargs" in inspect.signature(pandas.read_parquet).parameters:
                options["to_pandas_kwargs"] = {"self_destruct": True, "split_blocks": True}
            return pandas.read_parquet(path, **options)
        with open(path, "rb") as f:
            return pickle.load(f)
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)


def loader_code(staged: list[list[str]]) -> str:
    """Sandbox code defining each ``[name, format, path]`` of ``staged`` in the kernel's
    namespace, printing one JSON line (``MARK``) with a description per variable."""
    helper = inspect.getsource(variables)  # first: it opens with its __future__ import
    helper += "\nimport contextlib, inspect\n" + inspect.getsource(read_staged)
    return (
        "def _codeagent_load(staged, helper):\n"
        "    import json\n"
        "    ns = {}\n"
        "    exec(helper, ns)\n"
        "    lines = []\n"
        "    for name, fmt, path in staged:\n"
        "        try:\n"
        "            obj = ns['read_staged'](fmt, path)\n"
        "            globals()[name] = obj\n"
        "            lines.append(ns['line'](ns['describe'](name, obj)))\n"
        "        except Exception as e:\n"
        "            lines.append(f'{name}: not loaded ({type(e).__name__}: {e})'[:300])\n"
        f"    print({MARK!r} + json.dumps(lines))\n"
        f"_codeagent_load({json.dumps(staged)}, {helper!r})\n"
        "del _codeagent_load\n"
    )


def parse_loaded(result: Any, names: list[str]) -> list[str]:
    """The loader's lines, or one line per name saying the load failed."""
    for output in result.outputs:
        text = output.get("text", "") if output.get("output_type") == "stream" else ""
        text = text if isinstance(text, str) else "".join(text)
        for row in text.splitlines():
            if row.startswith(MARK):
                with contextlib.suppress(ValueError):
                    lines = json.loads(row.removeprefix(MARK))
                    return [str(x)[:400] for x in lines][: len(names)]
    why = (result.note or result.status or "no answer")[:200]
    return [f"{name}: not loaded (the sandbox failed: {why})" for name in names]
