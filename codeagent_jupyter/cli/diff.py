"""``codeagent diff SESSION.ipynb [--step N] [--stat]``: what a recorded session did to the files.

The change set is read from the snapshots the session notebook lists, in the snapshot store
of the folder the session ran in (``--workdir``; by default the folder whose ``.codeagent/``
holds the notebook, else the current folder). Nothing in the workspace is opened, and
nothing is changed. The notebook is data: it only names snapshots, which the store holds
under their own hash.

Exit codes: 0 the change set was printed (also when nothing changed), 1 the session has no
snapshots (or the store no longer has them), 2 bad usage or input (not a session notebook, a
step it does not have). Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..util.confined import RESERVED

DIFF_EXAMPLES = """\
examples:
  codeagent diff .codeagent/sessions/SESSION.ipynb            # the whole session
  codeagent diff .codeagent/sessions/SESSION.ipynb --step 3   # what step 3 changed
  codeagent diff SESSION.ipynb --stat --workdir ~/project     # one line per file
"""


def add_parser(sub: Any) -> None:
    diff = sub.add_parser(
        "diff",
        help="show the files a recorded session created, changed and deleted",
        description="Show what a recorded session did to the workspace's files, from its\n"
        "snapshots: unified diffs for text, cells for notebooks, one line for images and\n"
        "binaries.",
        epilog=DIFF_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diff.add_argument("session", type=Path, help="a session notebook (.ipynb)")
    diff.add_argument(
        "--step", type=_step, help="only what step N changed (of the last run that has a step N)"
    )
    diff.add_argument("--stat", action="store_true", help="one line per file, no diffs")
    diff.add_argument(
        "--workdir",
        type=Path,
        help="the folder the session ran in, whose snapshot store is read (default: the folder "
        f"whose {RESERVED}/ holds the notebook, else the current folder)",
    )


def _step(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive whole number")
    return value


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..record.changes import NoSnapshots, known_steps, session_changes
    from ..record.changes_cell import inside
    from ..record.changes_text import terminal
    from ..record.reader import parse_session
    from ..record.snapshots import SnapshotStore
    from . import output
    from .args import existing_workdir
    from .output import warn
    from .trust import read_session_file

    read = read_session_file(args.session, None)
    notebook = parse_session(read.text, read.path)
    workdir = existing_workdir(args.workdir or _default_workdir(read.path))
    store = SnapshotStore.for_workspace(workdir)
    meta = notebook.metadata["codeagent"]
    own = inside(workdir, read.path)
    try:
        steps = known_steps(notebook)
        changes = session_changes(meta, store, step=args.step, steps=steps, exclude=own)
    except NoSnapshots as exc:
        warn(f"codeagent: {read.path.name}: {exc}")
        return 1
    except ConfigError as exc:
        raise ConfigError(f"{read.path.name}: {exc}") from None
    output.diff(terminal(changes, stat=args.stat))
    return 0


def _default_workdir(notebook: Path) -> Path:
    """The folder above the ``.codeagent/`` the notebook lies in, else the current one."""
    for parent in notebook.parents:
        if parent.name == RESERVED:
            return parent.parent
    return Path.cwd()
