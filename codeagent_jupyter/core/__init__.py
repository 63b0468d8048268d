"""The agent's core: its ports, toolsets and the tool context, the tool outcome, the event
bus, the loop, the runner, stopping, usage, the sandbox still starting, and ``build_agent``.

Nothing here imports openai, jupyter_client, tornado or ipywidgets: the same core serves the
CLI, the server extension, the MCP server and offline replay.
"""
