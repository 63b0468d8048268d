"""The sandbox as an MCP server, for agents we did not write.

``codeagent mcp`` (stdio: one client, one sandbox) and ``/codeagent/mcp`` in the server
extension (streamable HTTP under the Jupyter server's auth: one sandbox per MCP session)
offer the sandbox's tools through the official ``mcp`` SDK. A call goes through our own
tool runner and tools (the same confinement, limits and bounds as our agent's calls) and
every MCP session is recorded as a session notebook, like ours.

- ``results.py``: our tool schemas and outcomes in MCP's terms (text, images, isError);
- ``session.py``: one MCP client's tool session (its calls, its events, its recording);
- ``server.py``: the SDK server that serves tool sessions;
- ``registry.py``: the tools registered with ``jupyter-server-mcp`` (Jupyter AI).

The server extension's side is in ``server/``: ``mcp_sessions.py`` (its MCP sessions: per
owner, capped, culled when idle; no SDK needed), ``mcp_endpoint.py`` and ``mcp_handler.py``
(``/codeagent/mcp`` over them).

The ``mcp`` package is an optional dependency (``pip install codeagent-jupyter[mcp]``):
nothing here is imported unless an MCP server is asked for.
"""
