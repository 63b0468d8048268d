"""``python -m codeagent_jupyter.cli``: the ``codeagent`` command (the tests run it so)."""

import sys

from .main import main

sys.exit(main())
