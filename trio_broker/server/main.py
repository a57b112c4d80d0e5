"""The ``trio-broker`` command: parse arguments, load the config, run until a signal.

Usage, as ``kafka-server-start.sh``::

    trio-broker [--config FILE | FILE] [--override key=value ...] [--debug]

One configuration story wherever the broker starts (this command, ``scripts/start``, the
container image): the file, then every ``TRIO_BROKER_*`` environment variable
(``TRIO_BROKER_ADMIN_TOKEN`` is ``admin.token``, see ``config.env``), then ``--override``;
a later layer wins. ``--from-env`` is still accepted and does nothing (the variables always
apply). ``GET /v1/config`` shows which layer set each key.

A failure the user can fix (a bad key or value, an unloadable TLS file, a port in use, a
log directory held by another broker or not writable) stops start-up with one line on
stderr and exit status 2; ``--debug`` (or ``--log-level DEBUG``) adds the traceback.
SIGTERM and SIGINT start a graceful shutdown; the process exits 0 once it is done. The
command (``run``) then leaves without the interpreter's teardown (``os._exit`` after
flushing the log and stdio): what the broker must leave on disk is written and synced by
then, and freeing its objects one by one took about a second a 5,000 partitions.
``main`` itself returns, for callers in-process.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import NoReturn

import trio

from .. import __version__
from .config import ConfigError, load_config
from .startup import startup_error

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
        help="accepted for compatibility and ignored: TRIO_BROKER_* variables always apply "
        "(file < environment < --override)",
    )
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    parser.add_argument(
        "--debug", action="store_true", help="print the traceback of a start-up failure"
    )
    parser.add_argument("--version", action="version", version=f"trio-broker {__version__}")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    debug = args.debug or args.log_level.upper() == "DEBUG"
    path = args.config_opt or args.config_file
    try:
        config = load_config(path, args.override, os.environ)
    except ConfigError as exc:
        return _fail(f"configuration error: {exc}", exc, debug)
    except OSError as exc:
        return _fail(f"cannot read the configuration: {exc}", exc, debug)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            trio.run(serve, config)
    except BaseException as exc:  # a bug keeps its traceback: re-raised below
        error = startup_error(exc)
        if error is None:
            raise
        return _fail(str(error), exc, debug)
    return 0


def run() -> NoReturn:
    """The ``trio-broker`` command and ``python -m trio_broker``: ``main``, then exit at
    once with its status (an exception still propagates, with its traceback)."""
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fail(line: str, exc: BaseException, debug: bool) -> int:
    """Exit status 2 with one line on stderr (after the traceback with ``--debug``)."""
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"trio-broker: {line}", file=sys.stderr, flush=True)
    return 2


async def serve(config: object) -> None:
    from .node import new_broker

    broker = new_broker(config)  # type: ignore[arg-type]
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
    run()
