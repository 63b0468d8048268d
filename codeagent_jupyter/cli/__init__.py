"""The ``codeagent`` command (``codeagent_jupyter.cli:main``): run, resume and replay."""

from ..util.quick_start import skip_iri_grammar

skip_iri_grammar()  # before anything imports jsonschema

from .main import main  # noqa: E402

__all__ = ["main"]
