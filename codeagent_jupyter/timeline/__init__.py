"""A session's state as a timeline of items, folded from its event stream (``fold``), for
every display: the panel, the server's summaries, the terminal."""
