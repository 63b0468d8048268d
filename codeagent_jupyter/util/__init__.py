"""Small pieces every layer may use, knowing nothing of the agent: text bounds, atomic writes,
redaction, the confined workspace, disk budgets, process hardening, variable summaries."""
