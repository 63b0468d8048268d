"""``python -m tests.scripted_model --script FILE.json [--port N]``: prints its URL, serves
until SIGTERM/Ctrl-C. For tests that run the CLI or a Jupyter server as a real subprocess."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import threading

from .quirks import QUIRKS
from .server import ScriptedModelServer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a scripted OpenAI-compatible model.")
    parser.add_argument("--script", required=True, help="JSON file: a list of turns")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-usage", action="store_true", help="omit usage from answers")
    parser.add_argument(
        "--quirk",
        action="append",
        default=[],
        choices=sorted(QUIRKS),
        help="behave like a real server in this way (repeatable; see quirks.py)",
    )
    args = parser.parse_args(argv)
    with open(args.script, encoding="utf-8") as f:
        script = json.load(f)
    if not isinstance(script, list):
        parser.error("--script must hold a JSON list of turns")
    server = ScriptedModelServer(
        script, port=args.port, send_usage=not args.no_usage, quirks=args.quirk
    ).start()
    done = threading.Event()
    # Before the URL goes out: a caller may SIGTERM as soon as it has read it.
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print(server.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        done.wait()
    server.stop()


if __name__ == "__main__":
    main()
