"""Work over sandbox-written bytes runs here, never on the server's event loop.

Change sets, diffs, reverts and the session notebooks they read are computed from files the
sandbox wrote; their cost is the sandbox's choice (difflib on ten thousand similar lines,
a notebook of many megabytes). The event loop answers every user of the server, so such
work is handed to a small pool of threads: the loop only waits for the answer, and other
users' requests are served meanwhile. What each piece of work may cost is bounded where it
is computed (``record.changes``: files, bytes, lines, ``DETAIL_SECONDS``); the pool bounds
how many run at once, so one user cannot take every core however many requests they send.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

WORKERS = 4
"""Threads for work over sandbox files, shared by every session of the server."""

_POOL = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="codeagent-sandbox-files")


async def off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in the pool; its result or its exception, awaited."""
    call = functools.partial(fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_POOL, call)
