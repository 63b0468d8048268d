"""Predictive warming: pooled sandboxes import the usual libraries before a session asks.

Importing pandas and matplotlib takes a second or more; a pooled sandbox does it while it
waits, so the first cell of a session does not. The model is told what is already there
(``sandbox.preloaded``), and conventional aliases are bound (``np``, ``pd``, ``plt``), so its first
cell can use them straight away. A module that fails to import is simply not preloaded.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)
ALIASES = {"numpy": "np", "pandas": "pd", "matplotlib.pyplot": "plt"}
DEFAULT_CANDIDATES = ("numpy", "pandas", "matplotlib.pyplot")
MARK = "CODEAGENT-PRELOADED "
WARM = {"pandas": ("pyarrow.parquet", "pyarrow.dataset", "pandas.io.parquet")}
"""Imported quietly after a module (neither bound nor told to the model): what loading a
``%agent --with`` DataFrame needs, so the load does not pay for the import."""


def default_preload() -> list[str]:
    """Whichever of numpy, pandas and matplotlib.pyplot are installed (looked up without
    importing them here)."""
    return [m for m in DEFAULT_CANDIDATES if importlib.util.find_spec(m.split(".")[0])]


def preload_code(modules: Sequence[str]) -> str:
    """Kernel code importing ``modules`` (each under its alias or its top name); prints
    which succeeded on one marked line."""
    # [module, name to bind, bind the top package (a plain ``import a.b`` binds ``a``)]
    pairs = [[m, ALIASES.get(m, m.split(".")[0]), m not in ALIASES] for m in modules]
    warm = [w for m in modules for w in WARM.get(m, ())]
    return (
        "def _codeagent_preload(pairs, warm):\n"
        "    import importlib, json\n"
        "    done = []\n"
        "    for module, alias, top in pairs:\n"
        "        try:\n"
        "            imported = importlib.import_module(module)\n"
        "        except Exception:\n"
        "            continue\n"
        "        globals()[alias] = importlib.import_module(alias) if top else imported\n"
        "        done.append(module)\n"
        "    for module in warm:\n"
        "        try:\n"
        "            importlib.import_module(module)\n"
        "        except Exception:\n"
        "            pass\n"
        f"    print({MARK!r} + json.dumps(done))\n"
        f"_codeagent_preload({pairs!r}, {warm!r})\n"
        "del _codeagent_preload\n"
    )


async def preload(sandbox: Any, modules: Sequence[str]) -> list[str]:
    """Import ``modules`` in ``sandbox``; what imported, as the model is told it
    (``numpy as np``), also set on ``sandbox.preloaded``."""
    done: list[str] = []
    if modules:
        try:
            result = await sandbox.execute(preload_code(modules), store_history=False)
        except Exception as e:  # a sandbox without preloads is still a good sandbox
            log.warning("sandbox preload failed: %s", e)
            sandbox.preloaded = done
            return done
        for output in result.outputs:
            text = output.get("text", "") if output.get("output_type") == "stream" else ""
            for row in ("".join(text) if isinstance(text, list) else text).splitlines():
                if row.startswith(MARK):
                    done = [shown(str(m)) for m in json.loads(row.removeprefix(MARK))]
    sandbox.preloaded = done
    return done


def shown(module: str) -> str:
    """How the model is told about a preloaded module: ``pandas as pd``, ``scipy.stats``."""
    return f"{module} as {ALIASES[module]}" if module in ALIASES else module
