"""The ``codeagent`` command (``codeagent_jupyter.cli:main``): run, resume and replay."""

from .main import main

__all__ = ["main"]
