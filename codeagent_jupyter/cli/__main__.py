"""``python -m codeagent_jupyter.cli``: the ``codeagent`` command, as the console script."""

import sys

from .main import main

sys.exit(main())
