"""The order test files are handed to the workers: the longest first.

With ``--dist loadfile`` each file runs whole on one worker, in the order the files are
handed out. pytest-xdist's own order (most tests first) hands out the files with few but
long tests last: the browser files (one JupyterLab and one Chromium per file) and the CLI,
gateway and bench files, so one worker could run a two-minute file at the end while the
others had nothing left. Handing those out first (longest-processing-time first) leaves the
short files to fill in at the end. The list is measured (``--durations``, docs/testing.md);
a file not in it keeps xdist's order after the listed ones, so a stale list only costs time.
"""

from __future__ import annotations

from collections import Counter

import pytest

LONGEST_FIRST = (
    # measured longest first; a folder ("tests/e2e/browser/") stands for each file in it
    "tests/e2e/browser/test_first_hour_e2e.py",
    "tests/e2e/browser/test_panel_hour_e2e.py",
    "tests/bench/test_hard_tier.py",
    "tests/e2e/gateway/test_contract.py",
    "tests/e2e/browser/",
    "tests/security/test_panel_surfaces.py",
    "tests/security/test_panel_html.py",
    "tests/bench/test_agent_eval.py",
    "tests/security/test_session_authority.py",
    "tests/cli/test_cli.py",
    "tests/mcp/test_stdio.py",
    "tests/e2e/gateway/test_failures.py",
    "tests/packages/test_installer.py",
    "tests/hub/test_classroom.py",
    "tests/cli/test_changes_cli.py",
    "tests/cli/test_cli_netreplay.py",
    "tests/security/test_install_attacks.py",
    "tests/security/test_disk_lifetime.py",
    "tests/security/test_disk_budget.py",
    "tests/tools/test_delegate_events.py",
    "tests/packages/test_cli_install.py",
    "tests/packages/test_install_tool.py",
    "tests/cli/test_capable_tools.py",
)


def keep_our_order(config: pytest.Config) -> None:
    """xdist would sort the files by their number of tests again: it keeps ours instead."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _rank(path: str) -> int:
    for rank, entry in enumerate(LONGEST_FIRST):
        if path == entry or (entry.endswith("/") and path.startswith(entry)):
            return rank
    return len(LONGEST_FIRST)


def longest_first(items: list[pytest.Item]) -> None:
    """Sort ``items`` file by file: the listed files in their order, then the others with
    the most tests first (xdist's own order); tests keep their order within a file."""
    files = [item.nodeid.split("::")[0] for item in items]
    counts = Counter(files)
    first_seen = {path: n for n, path in reversed(list(enumerate(files)))}
    order = {path: (_rank(path), -counts[path], first_seen[path]) for path in counts}
    ranked = sorted(range(len(items)), key=lambda n: (order[files[n]], n))
    items[:] = [items[n] for n in ranked]
