"""The Jupyter server extension: agent sessions over REST and WebSocket under ``/codeagent/api``.

The agent runs in the server, not in the user's kernel: the API key stays in the server's
config, sessions outlive browser reloads, and any number of clients can watch one session.
Configure it with ``c.CodeAgent.…`` (see ``CodeAgent``); the package's jupyter-config file
enables it on ``pip install``. Routes (all behind the server's auth, resource ``codeagent``;
``handlers.route_table`` and ``uploads.routes`` are the code)::

    GET    health                                  model (no key), enforcement, unconfined, pool
    POST   warm                {notebook_path?}    hold a sandbox for my next session
    GET    sessions                                my sessions (also from earlier runs)
    POST   sessions            {prompt, notebook_path?, model?, limits?, max_steps?,
                                namespace?, uploads?, kernel_id?, cells?, cells_complete?}
                                                   -> 201
    GET    sessions/ID                             state + all events so far
    DELETE sessions/ID                             stop the run, shut the sandbox down
    WS     sessions/ID/events?since=N              events from seq N, then live
    POST   sessions/ID/messages  {text}            follow-up in the same sandbox (202); to a
                                                   closed session: resume it from its last step
    POST   sessions/ID/cancel                      interrupt the cell, stop the run
    POST   sessions/ID/fork    {prompt, step?}     a new session from the state after that step
                                                   (default: the end) -> 201
    POST   sessions/ID/pause                       stop after the step in flight, release the
                                                   sandbox; a message resumes it
    POST   sessions/ID/approvals/CALL {approve, remember?}  decide a tool call under "ask"
                                                ("remember": "session" allows the waiting
                                                call's own tool for the rest of the session)
    POST   sessions/ID/cells/CALL/accept|reject    record the user's decision
    GET    sessions/ID/notebook                    the session .ipynb
    POST   sessions/ID/packages {packages, reason}  install between runs, without the model
                                                   (the user's request is the approval)
    POST   uploads?name=N&format=F&sha256=H  <bytes>  one ``--with`` variable (parquet|pickle),
                                                   streamed; its ``id`` goes in ``uploads``

Sessions belong to the user who started them: anyone else gets 404 on every session route
(members of ``c.CodeAgent.read_groups`` may read and watch, not change: 403). Session
notebooks are kept outside every workspace and signed; only signed ones are loaded.

Errors are ``{"message": ...}`` with 400 (bad JSON or fields; limits or max_steps that are
not finite or above the administrator's), 403 (model not allowed; a read-only reader
changing a session), 404 (unknown id, or someone else's session), 409 (not possible in the
current state), 413 (prompt longer than ``max_prompt_chars``), 429 (every one of the
user's ``max_sessions_per_user`` open sessions is running: an idle one would have been
closed to make room), 503 (no model configured, or no sandbox could start).
"""

from __future__ import annotations

from .app import CodeAgent, CodeAgentApp

__all__ = ["CodeAgent", "CodeAgentApp"]
