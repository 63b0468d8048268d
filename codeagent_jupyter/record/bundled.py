"""The project's own example sessions, known by the SHA-256 of their exact text.

``codeagent replay examples/demo.ipynb`` is the README's first command. A notebook the CLI
did not sign gets a warning (``cli/trust.py``), rightly for a file someone shared, but the
project's demo is not someone's file: a fresh checkout would open on a warning about the
project itself. The demo cannot carry a machine's signature (each machine's secret is its
own), so the package carries its digest instead: text that hashes to it is the demo as the
project shipped it, byte for byte. Knowing it grants nothing: the limits, the workspace and
the network are still the command's; it only spares the warning. Change one byte and the
warning is back. ``tests/record/test_bundled.py`` fails when the demo is rebuilt
(``examples/make_demo.py``) without its new digest here.
"""

from __future__ import annotations

import hashlib

BUNDLED = {
    "15140e5d1ab720c6fad15048269157886aa2c9a3265c1c83d01093029a24de04": "examples/demo.ipynb",
}
"""SHA-256 of the text -> the example it is (path in the project's source tree)."""


def bundled_example(text: str) -> str | None:
    """The project's example ``text`` is, unchanged; None for any other notebook."""
    return BUNDLED.get(hashlib.sha256(text.encode("utf-8")).hexdigest())
