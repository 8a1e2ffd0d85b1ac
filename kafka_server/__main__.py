"""``python -m kafka_server serve``: run brokers that real Kafka clients can use.

    python -m kafka_server serve --brokers 3 --port 9092 --topic orders:6:3

Logs where each broker listens; Ctrl-C or SIGTERM (a process manager's stop) stops it cleanly
(exit status 0).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import trio

from kafka_server.server import KafkaServer, TopicSpec
from trio_http import stop_on_sigterm


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m kafka_server")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve an in-process cluster over TCP")
    serve.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument(
        "--port", type=int, default=9092,
        help="first broker's port, the others follow (0: ephemeral ports; default 9092)",
    )  # fmt: skip
    serve.add_argument(
        "--topic", action="append", default=[], metavar="NAME[:PARTITIONS[:RF]]",
        help="create a topic at start-up (repeatable)",
    )  # fmt: skip
    serve.add_argument("--no-auto-create", action="store_true", help="do not create unknown topics")
    serve.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    args = parser.parse_args(argv)
    try:
        topics = [TopicSpec.parse(text) for text in args.topic]
        if args.brokers < 1:
            raise ValueError(f"--brokers must be >= 1, got {args.brokers}")
    except ValueError as exc:
        parser.error(str(exc))
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    server = KafkaServer(
        args.brokers,
        host=args.host,
        port=args.port,
        topics=topics,
        auto_create_topics=not args.no_auto_create,
    )

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(stop_on_sigterm)
            await server.serve()

    status = 0
    try:
        trio.run(run)
    except* KeyboardInterrupt:
        logging.getLogger("kafka_server").info("stopped")
    except* OSError as failed:
        print(f"kafka_server: cannot listen: {failed.exceptions[0]}", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
