"""The command line: ``python -m msgqueue serve [--host H] [--port P] [--backend B] ...``.

``serve`` runs the HTTP server (:func:`msgqueue.server.serve`) until Ctrl-C (SIGINT) or
SIGTERM, then closes the back end (for SQLite: every answered request is already committed)
and exits 0.
``--backend`` is ``memory`` or ``sqlite:PATH``; ``--token ACCOUNT=TOKEN`` (repeatable) turns
on access control; ``--max-body`` bounds request bodies. Bad options get one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from functools import partial

import trio

from msgqueue.backend import open_backend
from msgqueue.http import DEFAULT_MAX_BODY
from msgqueue.server import serve
from trio_http import stop_on_sigterm

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m msgqueue", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="run the HTTP server until Ctrl-C")
    run.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    run.add_argument("--port", type=int, default=8080, help="port (8080; 0 picks a free one)")
    run.add_argument("--backend", default="memory", help="memory (default) or sqlite:PATH")
    run.add_argument(
        "--token",
        action="append",
        default=[],
        metavar="ACCOUNT=TOKEN",
        help="require this X-Auth-Token for ACCOUNT (repeat for more accounts)",
    )
    run.add_argument(
        "--max-body", type=int, default=DEFAULT_MAX_BODY, help="largest body in bytes (65536)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return the exit status."""
    parser = _parser()
    options = parser.parse_args(argv)
    tokens = {}
    for item in options.token:
        account, sep, token = item.partition("=")
        if not (sep and account and token):
            parser.error(f"--token must be ACCOUNT=TOKEN, got {item!r}")
        tokens[account] = token
    try:
        backend = open_backend(options.backend)
    except ValueError as error:
        parser.error(str(error))

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(stop_on_sigterm)
            port = await nursery.start(
                partial(
                    serve,
                    backend,
                    host=options.host,
                    port=options.port,
                    tokens=tokens or None,
                    max_body=options.max_body,
                )
            )
            print(
                f"msgqueue: serving {options.backend} on http://{options.host}:{port}/v1.0",
                flush=True,
            )

    try:
        trio.run(run)
    except* KeyboardInterrupt:  # raised in the task that was running, so maybe in a group
        print("msgqueue: stopped", file=sys.stderr, flush=True)
    finally:
        backend.close()
    return 0
