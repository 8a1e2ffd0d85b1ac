"""The command line: ``python -m consume_proxy serve --bootstrap HOST:PORT --topic T --group G
[--port P] ...``.

``serve`` runs one proxy server (:func:`consume_proxy.server.serve`) until Ctrl-C (SIGINT)
or SIGTERM: it logs where it listens, and on either commits, leaves the group and exits 0. ``-X
NAME=VALUE`` (repeatable) passes a setting to the Kafka clients (librdkafka's names; prefixed
``consumer.`` or ``producer.`` for the consumers or the producer only, e.g. ``-X
consumer.session.timeout.ms=6000``). Bad options get one line and exit 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from functools import partial

import trio

from consume_proxy.errors import InvalidProxyConfigError
from consume_proxy.feed import DEFAULT_LOG_TOPIC, DEFAULT_WINDOW
from consume_proxy.http import DEFAULT_MAX_BODY
from consume_proxy.proxy import (
    DEFAULT_DELIVERY_COUNT_LIMIT,
    DEFAULT_LEASE_DURATION,
    DEFAULT_MAX_RECORD_LOCKS,
)
from trio_http import stop_on_sigterm

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m consume_proxy", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="run one proxy server until Ctrl-C")
    run.add_argument("--bootstrap", required=True, help="Kafka's bootstrap servers, HOST:PORT,...")
    run.add_argument("--topic", required=True, help="the data topic to serve")
    run.add_argument("--group", required=True, help="the consumer group the servers share")
    run.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    run.add_argument("--port", type=int, default=8080, help="port (8080; 0 picks a free one)")
    run.add_argument(
        "--lease-ms",
        type=int,
        default=DEFAULT_LEASE_DURATION,
        help=f"ack timeout of a record handed out ({DEFAULT_LEASE_DURATION})",
    )
    run.add_argument(
        "--delivery-count-limit",
        type=int,
        default=DEFAULT_DELIVERY_COUNT_LIMIT,
        help=f"deliveries before a record is archived ({DEFAULT_DELIVERY_COUNT_LIMIT})",
    )
    run.add_argument(
        "--max-record-locks",
        type=int,
        default=DEFAULT_MAX_RECORD_LOCKS,
        help=f"records a partition may have pending at once ({DEFAULT_MAX_RECORD_LOCKS})",
    )
    run.add_argument(
        "--log-topic",
        default=DEFAULT_LOG_TOPIC,
        help=f"the state log topic, partitioned like the data topic ({DEFAULT_LOG_TOPIC})",
    )
    run.add_argument(
        "--dead-letter-topic",
        help="where archived records go (default: nowhere, only logged)",
    )
    run.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        help=f"records a partition may hold before its fetching pauses ({DEFAULT_WINDOW})",
    )
    run.add_argument(
        "--max-body", type=int, default=DEFAULT_MAX_BODY, help="largest request body in bytes"
    )
    run.add_argument(
        "-X",
        dest="kafka",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Kafka client setting (librdkafka's name; consumer./producer. prefixes)",
    )
    run.add_argument("--log-level", default="INFO", help="logging level (INFO)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return the exit status."""
    parser = _parser()
    options = parser.parse_args(argv)
    kafka = {}
    for item in options.kafka:
        name, sep, value = item.partition("=")
        if not (sep and name):
            parser.error(f"-X must be NAME=VALUE, got {item!r}")
        kafka[name] = value
    if options.window < 2:
        parser.error(f"--window must be >= 2, got {options.window}")
    logging.basicConfig(
        level=options.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    from consume_proxy.server import serve  # the Kafka client is needed only to serve

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(stop_on_sigterm)
            port = await nursery.start(
                partial(
                    serve,
                    bootstrap=options.bootstrap,
                    topic=options.topic,
                    group_id=options.group,
                    host=options.host,
                    port=options.port,
                    lease_ms=options.lease_ms,
                    delivery_count_limit=options.delivery_count_limit,
                    max_record_locks=options.max_record_locks,
                    window=options.window,
                    log_topic=options.log_topic,
                    dead_letter_topic=options.dead_letter_topic,
                    kafka_config=kafka,
                    max_body=options.max_body,
                )
            )
            print(
                f"consume_proxy: serving {options.topic} for group {options.group} "
                f"on http://{options.host}:{port}",
                flush=True,
            )

    try:
        trio.run(run)
    except* KeyboardInterrupt:  # raised in the task that was running, so maybe in a group
        print("consume_proxy: stopped", file=sys.stderr, flush=True)
    except* InvalidProxyConfigError as group:
        parser.error(str(group.exceptions[0]))
    return 0
