"""``python -m codeagent_jupyter.cli``: the ``codeagent`` command without its console script."""

import sys

from .main import main

sys.exit(main())
