"""codeagent-jupyter: a Jupyter-native coding agent with a sandboxed kernel."""

from __future__ import annotations

__version__ = "0.1.0"


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where `jupyter labextension develop` finds the built frontend; pip installs use share/."""
    return [{"src": "labextension", "dest": "codeagent-jupyter"}]
