"""What each ``trio-broker-admin`` command asks the admin API, and how it shows the answer.

Owns: one function per command, ``(client, args) -> Output`` (the topic commands' are in
``topics``): the requests it sends (paths and payloads of ``admin/app.py``,
``admin/users.py``, ``admin/acls.py``), the answer for ``--json`` (the server's JSON,
unchanged) and the same answer as text for a person. Input the server checks (sizes,
quota values, config keys) is passed on as given, so the refusal a user sees is the
server's own message.
Must not: import anything of the broker: the tool speaks only HTTP.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .client import AdminClient, AdminError, path_of
from .render import EMPTY, duration, number, ratio, table

DEFAULT_ENTITY = "<default>"  # the admin API's name of the default client-id entity
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")  # column order


class UsageError(Exception):
    """The command line is incomplete or malformed (exit status 2); nothing was sent."""


@dataclass(frozen=True)
class Output:
    """A command's answer: ``data`` for ``--json``, ``text`` for people, ``ok`` for the
    exit status (``False``: the command worked but the answer is bad news, e.g. not ready).
    """

    data: Any
    text: str
    ok: bool = True


# ------------------------------------------------------------------ status, pools


def status(client: AdminClient, args: argparse.Namespace) -> Output:
    info = client.call("GET", "/v1/broker")
    ready = client.call("GET", "/v1/status/ready", answers=(503,)).get("ready") is True
    pools = info.get("pools", {})
    network = ", ".join(f"{n}={s}" for n, s in pools.get("network", {}).items())
    lines = [
        f"broker {info['broker_id']}  cluster {info['cluster_id']}  version {info['version']}",
        f"ready: {'yes' if ready else 'NO'}   up {duration(info['uptime_s'])} "
        f"(since {info['started_at']})",
        f"admin: {info.get('admin') or EMPTY}",
        f"pools: io {pools.get('io', EMPTY)}, network {network or EMPTY}",
        "",
        table(
            ["LISTENER", "ADDRESS", "SECURITY", "PLANE"],
            [
                [
                    lis["name"],
                    f"{lis['host']}:{lis['port']}",
                    lis["security_protocol"],
                    lis["plane"],
                ]
                for lis in info["listeners"]
            ],
        ),
    ]
    return Output({"ready": ready, **info}, "\n".join(lines), ok=ready)


def _pools_text(state: Mapping[str, Any]) -> str:
    io = state["io"]
    rows: list[list[Any]] = [["io", "data", io["size"], io["busy"], ratio(io["idle_ratio"]), None]]
    for name, p in state["network"].items():
        rows.append(
            [
                f"network {name}",
                p["plane"],
                p["size"],
                None,
                ratio(p["idle_ratio"]),
                p["connections"],
            ]
        )
    queues = [[plane, q["size"], q["capacity"]] for plane, q in state["request_queue"].items()]
    return "\n\n".join(
        [
            table(["POOL", "PLANE", "SIZE", "BUSY", "IDLE", "CONNECTIONS"], rows),
            table(["REQUEST QUEUE", "SIZE", "CAPACITY"], queues),
        ]
    )


def pools(client: AdminClient, args: argparse.Namespace) -> Output:
    state = client.call("GET", "/v1/pools")
    return Output(state, _pools_text(state))


def resize(client: AdminClient, args: argparse.Namespace) -> Output:
    if args.pool == "io":
        state = client.call("PUT", "/v1/pools/io", body={"size": args.size})
        what = "io pool"
    else:
        listener = args.listener
        state = client.call(
            "PUT", path_of("v1", "pools", "network", listener), body={"size": args.size}
        )
        what = f"network pool of {listener.upper()}"
    return Output(state, f"{what} resized to {args.size}\n\n{_pools_text(state)}")


# -------------------------------------------------------------------- connections


def connections(client: AdminClient, args: argparse.Namespace) -> Output:
    query = {
        "listener": args.listener,
        "client_id": args.client_id,
        "mute_state": args.mute_state.upper() if args.mute_state else None,
    }
    answer = client.call("GET", "/v1/connections", query=query)
    rows = [
        [
            c["id"],
            c["listener"],
            c["remote"],
            c["principal"],
            c["client_id"] if c["client_id"] is not None else EMPTY,
            " ".join(filter(None, [c["client_software_name"], c["client_software_version"]]))
            or EMPTY,
            c["mute_state"],
            round(c["throttle_remaining_ms"]),
            round(c["idle_ms"]),
            c["requests"],
            c["bytes_in"],
            c["bytes_out"],
        ]
        for c in answer["connections"]
    ]
    headers = ["ID", "LISTENER", "REMOTE", "PRINCIPAL", "CLIENT ID", "SOFTWARE", "MUTE STATE"]
    headers += ["THROTTLE MS", "IDLE MS", "REQUESTS", "BYTES IN", "BYTES OUT"]
    return Output(answer, table(headers, rows, empty="(no connections)"))


# ------------------------------------------------------------------------- quotas


def _entity(entity: Mapping[str, str | None]) -> str:
    return ", ".join(f"{t}={DEFAULT_ENTITY if n is None else n}" for t, n in entity.items())


def _values(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={number(v)}" for k, v in values.items()) or "(none)"


def _quota_target(args: argparse.Namespace, items: list[str]) -> tuple[str, list[str]]:
    """(the client id or ``<default>``, the remaining items) of ``quota set|delete``."""
    if args.default:
        return DEFAULT_ENTITY, items
    if not items:
        raise UsageError("name a client id, or --default for the default client quota")
    return items[0], items[1:]


def _number(key: str, text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{key}={text}: not a number") from None


def quota_list(client: AdminClient, args: argparse.Namespace) -> Output:
    answer = client.call("GET", "/v1/quotas")
    present = {k for q in answer["quotas"] for k in q["values"]}
    keys = [k for k in QUOTA_KEYS if k in present] + sorted(present - set(QUOTA_KEYS))
    rows = [[_entity(q["entity"]), *(q["values"].get(k) for k in keys)] for q in answer["quotas"]]
    return Output(answer, table(["ENTITY", *keys], rows, empty="(no quotas)"))


def quota_set(client: AdminClient, args: argparse.Namespace) -> Output:
    name, items = _quota_target(args, args.items)
    if not items:
        raise UsageError("give at least one KEY=VALUE, e.g. producer_byte_rate=1048576")
    values: dict[str, int | float] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{item!r}: expected KEY=VALUE, e.g. producer_byte_rate=1048576")
        values[key.strip()] = _number(key, text.strip())
    quota = client.call("PUT", path_of("v1", "quotas", "clients", name), body=values)
    return Output(quota, f"{_entity(quota['entity'])}: {_values(quota['values'])}")


def quota_delete(client: AdminClient, args: argparse.Namespace) -> Output:
    name, keys = _quota_target(args, args.items)
    path = path_of("v1", "quotas", "clients", name)
    if keys:  # remove only these values
        quota = client.call("PUT", path, body=dict.fromkeys(keys))
        return Output(quota, f"{_entity(quota['entity'])}: {_values(quota['values'])}")
    removed = client.call("DELETE", path)
    return Output(removed, f"removed {_entity(removed['entity'])}: {_values(removed['values'])}")


# ------------------------------------------------------------------------ metrics


def metrics(client: AdminClient, args: argparse.Namespace) -> Output:
    s = client.call("GET", "/v1/metrics")
    pools = s["pools"]
    conns = s["connections"]
    queues = ", ".join(f"{p} {q['size']}/{q['capacity']}" for p, q in s["request_queue"].items())
    network = ", ".join(f"{n} {ratio(p['idle_ratio'])}" for n, p in pools["network"].items())
    lines = [
        f"broker {s['broker_id']}  up {duration(s['uptime_s'])}  "
        f"window {number(round(s.get('window_s', 0), 1))} s  ({s['schema']})",
        f"io handlers: {pools['io']['size']}, idle {ratio(pools['io']['idle_ratio'])}; "
        f"network idle: {network or EMPTY}",
        f"request queues: {queues}",
        f"connections: {conns['count']} open ({conns['muted']} muted, "
        f"{conns['throttled']} throttled), {conns['created']} created, "
        f"{conns['rejected']} rejected",
        "",
    ]
    rows = [
        [
            name,
            r["count"],
            r["errors"],
            r.get("rate_per_s"),
            r["queue_time_ms"]["p99"],
            r["local_time_ms"]["p99"],
            r["total_time_ms"]["p50"],
            r["total_time_ms"]["p99"],
            r["total_time_ms"]["max"],
        ]
        for name, r in s["requests"].items()
    ]
    headers = ["REQUEST", "COUNT", "ERRORS", "RATE/S", "QUEUE P99 MS", "LOCAL P99 MS"]
    headers += ["TOTAL P50 MS", "TOTAL P99 MS", "TOTAL MAX MS"]
    lines.append(table(headers, rows, empty="(no requests yet)"))
    topics = s["topics"]["by_topic"]
    if topics:
        lines.append("")
        lines.append(
            table(
                ["TOPIC", "MESSAGES IN", "BYTES IN", "BYTES OUT"],
                [[t, c["messages_in"], c["bytes_in"], c["bytes_out"]] for t, c in topics.items()],
            )
        )
    return Output(s, "\n".join(lines))


# ------------------------------------------------------------------------- config


def config_get(client: AdminClient, args: argparse.Namespace) -> Output:
    state = client.call("GET", "/v1/config")
    effective: dict[str, str | None] = state["config"]
    unknown = [k for k in args.keys if k not in effective]
    if unknown:
        raise AdminError(f"unknown config key {unknown[0]!r}")
    keys = args.keys or sorted(effective)
    dynamic = set(state["dynamic_keys"])
    overridden = {**state.get("default_settings", {}), **state["dynamic_settings"]}
    rows = [
        [
            k,
            EMPTY if effective[k] is None else effective[k],
            "run time" if k in dynamic else "restart",
            "run time" if k in overridden else "start-up",
        ]
        for k in keys
    ]
    if args.keys:
        state = {**state, "config": {k: effective[k] for k in keys}}
    return Output(state, table(["KEY", "VALUE", "CHANGEABLE AT", "SET AT"], rows))


def _change(client: AdminClient, settings: dict[str, str | None], dry_run: bool) -> Output:
    before = client.call("GET", "/v1/config")["config"]
    answer = client.call("PUT", "/v1/config", body={"settings": settings, "dry_run": dry_run})
    changed: dict[str, str | None] = answer["changed"]
    rows = [[k, before.get(k), v] for k, v in changed.items()]
    text = table(["KEY", "BEFORE", "AFTER"], rows, empty="(no value changes)")
    if dry_run:
        text = "dry run: valid, nothing was changed\n" + text
    return Output(answer, text)


def config_set(client: AdminClient, args: argparse.Namespace) -> Output:
    settings: dict[str, str | None] = {}
    for item in args.settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{item!r}: expected KEY=VALUE, e.g. max.connections=1000")
        settings[key.strip()] = value
    return _change(client, settings, args.dry_run)


def config_delete(client: AdminClient, args: argparse.Namespace) -> Output:
    return _change(client, dict.fromkeys(args.keys), args.dry_run)


# -------------------------------------------------------------------------- users


def _users_rows(users: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return [
        [
            u["name"],
            ", ".join(f"{c['mechanism']} ({c['iterations']})" for c in u["credentials"]),
        ]
        for u in users
    ]


def users_list(client: AdminClient, args: argparse.Namespace) -> Output:
    answer = client.call("GET", "/v1/users")
    text = table(["USER", "MECHANISMS (ITERATIONS)"], _users_rows(answer["users"]), "(no users)")
    return Output(answer, text)


def _password() -> str:
    """From the terminal (asked twice), or the first line of standard input."""
    if sys.stdin.isatty():
        first = getpass.getpass("password: ")
        if getpass.getpass("again: ") != first:
            raise UsageError("the passwords differ")
        return first
    return sys.stdin.readline().rstrip("\r\n")


def users_set(client: AdminClient, args: argparse.Namespace) -> Output:
    body: dict[str, Any] = {"mechanism": args.mechanism.upper(), "password": _password()}
    if args.iterations is not None:
        body["iterations"] = args.iterations
    user = client.call("PUT", path_of("v1", "users", args.name), body=body)
    return Output(user, table(["USER", "MECHANISMS (ITERATIONS)"], _users_rows([user])))


def users_delete(client: AdminClient, args: argparse.Namespace) -> Output:
    query = {"mechanism": args.mechanism.upper() if args.mechanism else None}
    user = client.call("DELETE", path_of("v1", "users", args.name), query=query)
    return Output(
        user, "removed:\n" + table(["USER", "MECHANISMS (ITERATIONS)"], _users_rows([user]))
    )


# --------------------------------------------------------------------------- acls

ACL_FIELDS = (
    "principal",
    "permission_type",
    "operation",
    "resource_type",
    "pattern_type",
    "resource_name",
    "host",
)


def _acl_filter(args: argparse.Namespace) -> dict[str, str | None]:
    upper = {"resource_type", "pattern_type", "operation", "permission_type"}
    out: dict[str, str | None] = {}
    for name in ACL_FIELDS:
        value = getattr(args, name, None)
        out[name] = value.upper() if value is not None and name in upper else value
    return out


def _acls_text(acls: Sequence[Mapping[str, Any]], empty: str) -> str:
    headers = [n.upper().replace("_", " ") for n in ACL_FIELDS]
    return table(headers, [[a[n] for n in ACL_FIELDS] for a in acls], empty=empty)


def acls_list(client: AdminClient, args: argparse.Namespace) -> Output:
    answer = client.call("GET", "/v1/acls", query=_acl_filter(args))
    return Output(answer, _acls_text(answer["acls"], "(no ACLs)"))


def acls_add(client: AdminClient, args: argparse.Namespace) -> Output:
    binding = {k: v for k, v in _acl_filter(args).items() if v is not None}
    answer = client.call("POST", "/v1/acls", body={"acls": [binding]})
    return Output(answer, "added:\n" + _acls_text(answer["acls"], ""))


def acls_delete(client: AdminClient, args: argparse.Namespace) -> Output:
    answer = client.call("DELETE", "/v1/acls", query=_acl_filter(args))
    if not answer["acls"]:
        return Output(answer, "no ACL matched the filter: nothing was deleted")
    return Output(answer, "deleted:\n" + _acls_text(answer["acls"], ""))
