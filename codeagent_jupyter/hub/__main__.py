"""``python -m codeagent_jupyter.hub [--config FILE]``: run the class's model gateway."""

from ..util.quick_start import skip_iri_grammar

skip_iri_grammar()  # before anything imports jsonschema

from .app import main  # noqa: E402

if __name__ == "__main__":
    main()
