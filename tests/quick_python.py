"""``python -m MODULE`` for the servers the tests start, without jsonschema's IRI grammar.

jsonschema builds the grammar of the optional ``rfc3987_syntax`` (its checker of the "iri"
string formats) when it is imported: about 3-4 s of CPU at every start of a Jupyter server,
JupyterLab, kernel gateway, JupyterHub or single-user server, and the suite starts dozens.
Nothing those servers do for the tests validates an IRI, and jsonschema treats the module as
optional, so a server started this way is the same server with one optional format checker
fewer: what the ``codeagent`` command does for itself (``codeagent_jupyter.util.quick_start``).
"""

from __future__ import annotations

import sys

_RUN = (
    "from codeagent_jupyter.util.quick_start import skip_iri_grammar; skip_iri_grammar(); "
    "import runpy; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
)


def python_m(module: str) -> list[str]:
    """The argv of ``python -m module`` (arguments follow it) with the grammar skipped."""
    return [sys.executable, "-c", _RUN.format(module=module)]
