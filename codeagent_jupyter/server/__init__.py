"""The Jupyter server extension: agent sessions over REST and WebSocket under ``/codeagent/api``.

The agent runs in the server, not in the user's kernel: the API key stays in the server's
config, sessions outlive browser reloads, and any number of clients can watch one session.
Configure it with ``c.CodeAgent.…`` (see ``CodeAgent``); the package's jupyter-config file
enables it on ``pip install``. Routes (all behind the server's auth, resource ``codeagent``)::

    GET    health                                  model (no key), enforcement, pool
    POST   warm                {notebook_path?}    hold a sandbox for my next session
    GET    sessions                                every session (also from earlier runs)
    POST   sessions            {prompt, notebook_path?, model?, limits?}  -> 201
    GET    sessions/ID                             state + all events so far
    DELETE sessions/ID                             stop the run, shut the sandbox down
    WS     sessions/ID/events?since=N              events from seq N, then live
    POST   sessions/ID/messages  {text}            follow-up in the same sandbox (202)
    POST   sessions/ID/cancel                      interrupt the cell, stop the run
    POST   sessions/ID/approvals/CALL {approve}    decide a tool call under "ask"
    POST   sessions/ID/cells/CALL/accept|reject    record the user's decision
    GET    sessions/ID/notebook                    the session .ipynb

Errors are ``{"message": ...}`` with 400 (bad JSON or fields), 403 (model or limit not
allowed), 404 (unknown id), 409 (not possible in the current state), 429 (too many open
sessions), 503 (no model configured, or no sandbox could start).
"""

from __future__ import annotations

from typing import Any

from .app import CodeAgent, CodeAgentApp

__all__ = ["CodeAgent", "CodeAgentApp", "_jupyter_server_extension_points"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """How ``jupyter server`` finds the extension (re-exported by the top-level package)."""
    return [{"module": "codeagent_jupyter.server", "app": CodeAgentApp}]
