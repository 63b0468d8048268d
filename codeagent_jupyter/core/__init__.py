"""The agent's core: its ports, the tool outcome, the event bus, the loop, the runner, stopping,
usage and the one assembly of a session.

Nothing here imports openai, jupyter_client, tornado or ipywidgets: the same core serves the
CLI, the server extension, the MCP server and offline replay.
"""
