"""The ``trio-broker`` command: parse arguments, load the config, run until a signal.

Usage, as ``kafka-server-start.sh``::

    trio-broker [--config FILE | FILE] [--from-env] [--override key=value ...]

``--from-env`` applies ``TRIO_BROKER_*`` variables over the file, as container images do.

A bad config key or value stops start-up with a message naming it (exit status 2).
SIGTERM and SIGINT start a graceful shutdown; the process exits 0 once it is done.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

import trio

from .. import __version__
from .config import ConfigError, load_config
from .env_config import overrides_from_env

log = logging.getLogger("trio_broker")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="trio-broker", description="A Kafka-protocol message broker on Trio."
    )
    parser.add_argument("config_file", nargs="?", type=Path, help="server.properties file")
    parser.add_argument("--config", type=Path, dest="config_opt", help="server.properties file")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a property, overriding the file (repeatable)",
    )
    parser.add_argument(
        "--from-env",
        action="store_true",
        help="apply TRIO_BROKER_* environment variables over the file (--override wins)",
    )
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    parser.add_argument("--version", action="version", version=f"trio-broker {__version__}")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    path = args.config_opt or args.config_file
    overrides = (
        [*overrides_from_env(os.environ), *args.override] if args.from_env else args.override
    )
    try:
        config = load_config(path, overrides)
    except ConfigError as exc:
        print(f"trio-broker: configuration error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"trio-broker: cannot read the configuration: {exc}", file=sys.stderr)
        return 2
    try:
        with contextlib.suppress(KeyboardInterrupt):
            trio.run(serve, config)
    except ConfigError as exc:  # found while building the broker (a TLS key file ...)
        print(f"trio-broker: configuration error: {exc}", file=sys.stderr)
        return 2
    return 0


async def serve(config: object) -> None:
    from .broker import Broker

    broker = Broker(config)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            await nursery.start(broker.run)

            async def watch_signals() -> None:
                async for signum in signals:
                    log.info("received %s", signal.Signals(signum).name)
                    broker.shutdown()

            nursery.start_soon(watch_signals)
            await broker.stopped.wait()
            nursery.cancel_scope.cancel()


if __name__ == "__main__":
    sys.exit(main())
