"""Accepted cells get what the sandbox had and the user's kernel has not: the imports of
the preloaded names they use, and a note on the ``--with`` variables they read.

The sources are run for real in a fresh Python process, as a fresh user kernel would run
them: the sandbox's cell fails there (NameError), the handed-off cell does not.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from codeagent_jupyter.widget.handoff import (
    DEFAULT_PRELOADED,
    handoff_source,
    import_lines,
    needed_imports,
)

SANDBOX_CELL = "df = pd.DataFrame({'x': np.arange(3)})\nplt.plot(df['x'])\nprint(df['x'].sum())"


def run_fresh(source: str) -> subprocess.CompletedProcess[str]:
    """``source`` in a new interpreter (no preload, no IPython), non-interactive plots."""
    env_code = "import matplotlib\nmatplotlib.use('Agg')\n" + source
    return subprocess.run(
        [sys.executable, "-c", env_code], capture_output=True, text=True, timeout=120
    )


def test_a_sandbox_cell_runs_in_a_fresh_kernel_once_handed_off() -> None:
    assert "NameError" in run_fresh(SANDBOX_CELL).stderr  # what the user got before
    source = handoff_source(SANDBOX_CELL)
    assert source.splitlines()[:3] == [
        "import matplotlib.pyplot as plt",
        "import numpy as np",
        "import pandas as pd",
    ]
    done = run_fresh(source)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"


@pytest.mark.parametrize(
    "source",
    [
        "import pandas as pd\npd.Series([1]).sum()",  # imports it itself
        "np = 3\nprint(np)",  # its own variable of that name
        "def f(pd):\n    return pd\n",  # a parameter
        "[pd for pd in range(3)]",  # a comprehension variable
        "%%bash\necho pd",  # a cell magic: not Python
        "print('no preloaded name here')",
        "this is not python (",
    ],
)
def test_nothing_is_added_where_nothing_is_missing(source: str) -> None:
    assert handoff_source(source) == source


def test_ipython_syntax_is_read_as_ipython_reads_it() -> None:
    source = "!echo start\ntotal = pd.Series([1, 2]).sum()\n%ls"
    assert needed_imports(source, DEFAULT_PRELOADED) == ["import pandas as pd"]


def test_the_servers_preload_list_is_followed() -> None:
    preloaded = ["pandas as pd", "scipy.stats", "polars"]
    assert import_lines(preloaded) == {
        "pd": "import pandas as pd",
        "scipy": "import scipy.stats",
        "polars": "import polars",
    }
    assert handoff_source("scipy.stats.norm.cdf(0)", preloaded).startswith("import scipy.stats\n")
    assert handoff_source("np.zeros(2)", preloaded) == "np.zeros(2)"  # numpy not preloaded
    assert import_lines(["os; import evil", "x as y; z"]) == {}  # only module names


def test_with_variables_are_named_in_a_note() -> None:
    source = handoff_source("df = pd.DataFrame(sales)\ntotal = df.sum()", brought=["sales", "x"])
    lines = source.splitlines()
    assert lines[0] == "# uses sales from your kernel (copied into the agent's sandbox with --with)"
    assert lines[1] == "import pandas as pd"
    unused = handoff_source("print(1)", brought=["sales"])
    assert unused == "print(1)"  # a cell that does not read it gets no note
