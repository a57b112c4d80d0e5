"""``trio-broker-admin``: a running broker's admin API from the command line.

Owns: the command line (``build_parser``) and ``main``: which admin API to ask (``--admin
URL``, else ``listeners.json`` in ``--log-dir``, else http://127.0.0.1:9644), the bearer
token (``--token`` or ``TRIO_BROKER_ADMIN_TOKEN``, the variable that also sets the
broker's ``admin.token``), the output (tables for people, ``--json`` for scripts: the
server's JSON as it came) and the exit status: 0 done, 1 refused or unreachable (the
server's message on standard error), 2 a malformed command line (nothing was sent).
``status`` also exits 1 while the broker is not ready.

    trio-broker-admin status
    trio-broker-admin resize io 16
    trio-broker-admin connections --mute-state MUTED_AND_THROTTLED
    trio-broker-admin quota set app-1 producer_byte_rate=1048576
    trio-broker-admin config set max.connections=1000 --dry-run
    trio-broker-admin topic create orders --partitions 3 --config retention.ms=86400000

Must not: import anything of the broker: the tool speaks only HTTP (an import-linter
contract in pyproject.toml holds it to that).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

from ... import __version__
from . import commands, topics
from .client import DEFAULT_ADMIN_URL, AdminClient, AdminError, admin_url

TOKEN_VARIABLE = "TRIO_BROKER_ADMIN_TOKEN"
PROG = "trio-broker-admin"
Command = Callable[[AdminClient, argparse.Namespace], commands.Output]
Subparsers = argparse._SubParsersAction  # the type of add_subparsers()' result


def _common(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """The connection and output options, accepted before or after the command.

    Repeated on each sub-command with ``SUPPRESS`` defaults, so that a value given before
    the command is not reset by the sub-command's parser.
    """

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--admin",
        metavar="URL",
        default=default(None),
        help=f"the admin API's base URL (default: from --log-dir, else {DEFAULT_ADMIN_URL})",
    )
    parser.add_argument(
        "--log-dir",
        metavar="DIR",
        default=default(None),
        help="the broker's first log dir: its listeners.json names the admin API",
    )
    parser.add_argument(
        "--token",
        default=default(None),
        help=f"the bearer token (admin.token; default: ${TOKEN_VARIABLE})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=default(30.0),
        help="how long to wait for an answer (30)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print the server's JSON answer (for scripts) instead of a table",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Inspect and tune a running trio-broker through its admin HTTP API.",
        epilog=f"Exit status: 0 done; 1 the broker refused or could not be reached (its "
        f"message on stderr), or `status` found it not ready; 2 a bad command line. "
        f"The token is best given as ${TOKEN_VARIABLE} (a --token shows in `ps`).",
    )
    _common(parser, suppress=False)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, run: Command, help: str, parent: Subparsers | None = None
    ) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = (parent or sub).add_parser(name, help=help, description=help)
        _common(p, suppress=True)
        p.set_defaults(run=run)
        return p

    command("status", commands.status, "the broker, its listeners and whether it is ready")
    command("pools", commands.pools, "io and network pools: size, busy, idle; request queues")

    resize = command("resize", commands.pools, "resize a pool live (1..256)")
    rsub = resize.add_subparsers(dest="pool", required=True, metavar="POOL")
    io = command("io", commands.resize, "the data plane's request handlers (num.io.threads)", rsub)
    io.add_argument("size", type=int, metavar="N")
    net = command("network", commands.resize, "a listener's processors (num.network.threads)", rsub)
    net.add_argument("listener", metavar="LISTENER")
    net.add_argument("size", type=int, metavar="N")

    conns = command("connections", commands.connections, "open client connections")
    conns.add_argument("--listener", help="only this listener's")
    conns.add_argument("--client-id", metavar="C", help="only this client id's")
    conns.add_argument(
        "--mute-state", metavar="S", help="only connections in this mute state (MUTED, ...)"
    )

    quota = command("quota", commands.quota_list, "client quotas (list, set, delete)")
    qsub = quota.add_subparsers(dest="action", metavar="ACTION")
    command("list", commands.quota_list, "every quota entity and its values", qsub)
    qset = command(
        "set",
        commands.quota_set,
        "set values: quota set CLIENT KEY=VALUE ... (keys: producer_byte_rate, "
        "consumer_byte_rate, request_percentage); values not named are kept",
        qsub,
    )
    qdel = command(
        "delete",
        commands.quota_delete,
        "remove a client's quotas: quota delete CLIENT [KEY ...] (no KEY: all of them)",
        qsub,
    )
    qset.usage = f"{PROG} quota set [options] (CLIENT | --default) KEY=VALUE ..."
    qdel.usage = f"{PROG} quota delete [options] (CLIENT | --default) [KEY ...]"
    for p in (qset, qdel):
        p.add_argument(
            "--default", action="store_true", help="the default client quota (no CLIENT)"
        )
        p.add_argument("items", nargs="*", metavar="CLIENT, KEY=VALUE or KEY")

    command("metrics", commands.metrics, "request rates and latencies, pools, connections")

    command("topics", topics.topics_list, "every topic: partitions, replication, config overrides")
    topic = command("topic", topics.topics_list, "topics (list, describe, create, delete)")
    tsub = topic.add_subparsers(dest="action", metavar="ACTION")
    command("list", topics.topics_list, "every topic (as the topics command)", tsub)
    tdesc = command(
        "describe", topics.topic_describe, "a topic's partitions: leader, replicas, ISR", tsub
    )
    tcreate = command(
        "create",
        topics.topic_create,
        "create a topic, as CreateTopics does (without --partitions or "
        "--replication-factor: the broker's num.partitions, default.replication.factor)",
        tsub,
    )
    tcreate.add_argument("--partitions", type=int, metavar="N")
    tcreate.add_argument("--replication-factor", type=int, metavar="R")
    tcreate.add_argument(
        "--config", action="append", metavar="KEY=VALUE", help="a config override (repeatable)"
    )
    tcreate.add_argument(
        "--assignment",
        action="append",
        metavar="B,B:B,B",
        help="the brokers of each partition, instead of --partitions and "
        "--replication-factor: a partition's separated by ',', partitions by ':' "
        "(0,1:1,2: partition 0 on brokers 0 and 1, partition 1 on 1 and 2); repeatable, "
        "each adding the partitions that follow",
    )
    tcreate.add_argument(
        "--validate-only", action="store_true", help="only check it; create nothing"
    )
    tdel = command("delete", topics.topic_delete, "delete a topic, as DeleteTopics does", tsub)
    for p in (tdesc, tcreate, tdel):
        p.add_argument("name", metavar="NAME")

    config = command("config", commands.config_get, "broker configuration (get, set, delete)")
    csub = config.add_subparsers(dest="action", metavar="ACTION")
    cget = command("get", commands.config_get, "effective values (all, or the KEYs named)", csub)
    cget.add_argument("keys", nargs="*", metavar="KEY")
    cset = command(
        "set", commands.config_set, "change dynamic keys at run time: KEY=VALUE ...", csub
    )
    cset.add_argument("settings", nargs="+", metavar="KEY=VALUE")
    cdel = command(
        "delete",
        commands.config_delete,
        "revert this broker's run-time changes (to the cluster-wide default, else the "
        "start-up value)",
        csub,
    )
    cdel.add_argument("keys", nargs="+", metavar="KEY")
    for p in (cset, cdel):
        p.add_argument(
            "--dry-run", action="store_true", help="only check the change; change nothing"
        )

    users = command("users", commands.users_list, "SCRAM users (list, set, delete)")
    usub = users.add_subparsers(dest="action", metavar="ACTION")
    command("list", commands.users_list, "users and their mechanisms (never secrets)", usub)
    uset = command(
        "set",
        commands.users_set,
        "set a user's SCRAM credential; the password is read from standard input "
        "(or asked for on a terminal), never from the command line",
        usub,
    )
    uset.add_argument("name", metavar="NAME")
    uset.add_argument("--mechanism", default="SCRAM-SHA-512", help="(SCRAM-SHA-512)")
    uset.add_argument("--iterations", type=int, help="4096..16384 (4096)")
    udel = command("delete", commands.users_delete, "remove a user's credentials", usub)
    udel.add_argument("name", metavar="NAME")
    udel.add_argument("--mechanism", help="only this mechanism's credential")

    acls = command("acls", commands.acls_list, "ACLs (list, add, delete), Kafka's names")
    asub = acls.add_subparsers(dest="action", metavar="ACTION")
    alist = command("list", commands.acls_list, "ACLs matching the filter (none: all)", asub)
    aadd = command("add", commands.acls_add, "add one ACL binding", asub)
    adel = command(
        "delete", commands.acls_delete, "delete the ACLs matching the filter (one at least)", asub
    )
    for p in (acls, alist, aadd, adel):
        # on the actions, absent means "as given before the action" (acls --principal X list)
        unset = None if p is acls else argparse.SUPPRESS
        p.add_argument("--principal", default=unset, help="e.g. User:alice")
        p.add_argument("--permission-type", default=unset, metavar="ALLOW|DENY")
        p.add_argument("--operation", default=unset, metavar="OP", help="READ, WRITE, ALL ...")
        p.add_argument(
            "--resource-type", default=unset, metavar="TYPE", help="TOPIC, GROUP, CLUSTER ..."
        )
        p.add_argument("--pattern-type", default=unset, metavar="PATTERN", help="LITERAL, PREFIXED")
        p.add_argument("--resource-name", default=unset, metavar="NAME")
        p.add_argument("--host", default=unset, help="a client address, or * (any)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    token = args.token or os.environ.get(TOKEN_VARIABLE) or None
    try:
        client = AdminClient(admin_url(args.admin, args.log_dir), token, args.timeout)
        output = args.run(client, args)
    except AdminError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except commands.UsageError as exc:
        print(f"{PROG} {args.command}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(output.data, indent=2))
    else:
        print(output.text)
    if not output.ok:
        print(f"{PROG}: the broker is not ready", file=sys.stderr)
        return 1
    return 0
