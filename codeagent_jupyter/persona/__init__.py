"""``@codeagent`` in Jupyter AI's chat (Jupyter AI 3.2): our agent as a Jupyter AI persona.

``persona.CodeAgentPersona`` is registered with the ``jupyter_ai.personas`` entry point, so
only Jupyter AI's persona manager ever imports it (``pip install "codeagent-jupyter
[jupyter-ai]"``); ``render``, ``requests`` and ``mirror`` import nothing of Jupyter AI.
This package's ``__init__`` imports nothing, so ``import codeagent_jupyter`` never
imports Jupyter AI.
"""
