"""A command's start without work nobody asked for.

jsonschema (imported by nbformat, our tool schemas and the hub's policy) loads
``rfc3987_syntax`` when that is installed — jupyter-events' ``jsonschema[format-nongpl]``
brings it — only to check the "iri" string formats, which nothing here validates. Building
that module's grammar costs about 2.7 s of CPU at every start of a process (``codeagent
replay`` of the demo: 7.5 s -> 4.2 s). jsonschema treats the module as optional, so our own
commands go without it, unless something in the process imported it already.
"""

from __future__ import annotations

import sys


def skip_iri_grammar() -> None:
    """Mark ``rfc3987_syntax`` as absent for this process (before jsonschema is imported)."""
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
