"""codeagent-jupyter: a Jupyter-native coding agent with a sandboxed kernel."""

from __future__ import annotations

__version__ = "0.1.0"
