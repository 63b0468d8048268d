"""The options of ``%agent``: leading ``--`` options, then the request, verbatim.

argparse reads the options; the request is whatever follows them, quotes and all (a
request is prose, not shell words), so it is split off by hand before argparse sees it.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from IPython.core.error import UsageError

USAGE = (
    "usage: %agent [--model NAME] [--max-steps N] [--notebook-path PATH] [--attach ID] "
    "[--with NAME,NAME] [--cell ID] [--side | --inline] REQUEST"
)
OPTIONS = ("--model", "--max-steps", "--attach", "--notebook-path", "--with", "--cell")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"%agent: {message}; {USAGE}")


def _parser() -> _Parser:
    p = _Parser(prog="%agent", add_help=False)
    p.add_argument("--model")
    p.add_argument("--max-steps", type=int)
    p.add_argument("--attach")
    p.add_argument("--notebook-path")
    p.add_argument("--with", dest="with_names")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--side", action="store_true", default=None)
    where.add_argument("--inline", dest="side", action="store_false")
    p.add_argument("--cell")
    return p


def parse(line: str) -> tuple[argparse.Namespace, str]:
    """Split ``line`` into its leading options and the request (kept verbatim)."""
    rest = line.strip()
    tokens: list[str] = []
    while rest.startswith("--"):
        head, _, rest = rest.partition(" ")
        tokens.append(head)
        rest = rest.lstrip()
        if "=" not in head and head in OPTIONS:
            value, _, rest = rest.partition(" ")
            tokens.append(shlex.split(value)[0] if value.strip() else value)
            rest = rest.lstrip()
    args = _parser().parse_args(tokens)
    if args.max_steps is not None and args.max_steps < 1:
        raise UsageError("%agent: --max-steps must be at least 1")
    return args, rest
