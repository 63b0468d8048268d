"""The classroom model gateway: a JupyterHub service between students and the provider.

On JupyterHub a student's kernels run as the student, so a key in the student's server is a
key every student can read. The gateway keeps the class key in its own environment and
spends it on behalf of hub users: each request is authenticated with the student's own hub
token, checked against the class policy (allowed models, quotas, concurrency, AI switches),
forwarded, and written to a usage ledger the instructor reads. Modules: ``app`` (the
service and its settings), ``handlers`` (the OpenAI-compatible API), ``views`` and
``report`` (the instructor's side), ``service`` (decisions), ``policy``, ``ledger``,
``upstream`` (forwarding), ``student`` (how a student's server finds the gateway).
"""

DEFAULT_SERVICE = "codeagent-gateway"
"""The service name a student's server looks for unless ``c.CodeAgent.hub_gateway`` says
otherwise."""
