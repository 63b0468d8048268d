"""``python -m codeagent_jupyter.hub [--config FILE]``: run the class's model gateway."""

from .app import main

if __name__ == "__main__":
    main()
