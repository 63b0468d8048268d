"""The project's metadata: what pip, PyPI and JupyterLab's Extension Manager read."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_extension_manager_can_find_the_prebuilt_extension() -> None:
    """JupyterLab's Extension Manager lists PyPI packages by this classifier."""
    classifiers = PROJECT["classifiers"]
    assert "Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt" in classifiers
    assert "Operating System :: POSIX :: Linux" in classifiers  # bubblewrap, namespaces
    assert "License :: OSI Approved :: BSD License" in classifiers


def test_license_file_matches_the_declared_license() -> None:
    assert PROJECT["license"] == {"text": "BSD-3-Clause"}
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Copyright (c) 2026, codeagent-jupyter contributors" in text
    assert "Neither the name of the copyright holder" in text  # the third clause


def test_authors_urls_and_keywords() -> None:
    assert PROJECT["authors"] == [{"name": "codeagent-jupyter contributors"}]
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(PROJECT["urls"])
    assert all(url.startswith("https://") for url in PROJECT["urls"].values())
    assert {"jupyter", "jupyterlab-extension", "sandbox"} <= set(PROJECT["keywords"])
