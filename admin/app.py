"""The admin API's routes: a Quart-Trio app over an ``AdminView``.

Owns: ``create_app(view)``, the routes of the HTTP contract (``/v1/status/ready``,
``/v1/broker``, ``/v1/pools``, ``/v1/connections``, ``/v1/quotas``, ``/v1/metrics``,
``/v1/log-cleaner`` (the metrics' ``log_cleaner`` section: compaction per partition),
``/v1/cluster`` (controller, brokers, partitions' leaders and ISR), ``/v1/transactions``
(the transaction coordinator's ids and figures), ``/v1/users`` (in ``admin.users``),
``/v1/client-metrics`` (in ``admin.client_metrics``),
``/v1/faults`` (in ``admin.faults``), ``/metrics``, ``/v1/config``, ``/v1/openapi.json``,
``/v1/dashboard``, and the page ``/dashboard`` with its static files; ``/v1/topics`` is
registered from ``admin.topics``, ``/v1/acls`` from ``admin.acls``), the bearer-token
check, and the translation between JSON and the view's records. Handlers run on the
broker's event loop: they only call the view (whose synchronous methods return at once)
and never block.
Must not: import anything of the broker but ``admin.view``.
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from quart import Response, request
from quart_trio import QuartTrio

from .acls import register_acl_routes
from .asgi import AdminQuart
from .client_metrics import register_client_metrics_routes
from .dashboard import PAGE, StaticFiles
from .errors import ApiError, install_error_handlers, json_response
from .faults import register_fault_routes
from .inputs import boolean, parse_json_object, pool_size, quota_value, setting_text
from .openapi import openapi_document
from .topics import register_topic_routes
from .users import register_user_routes
from .view import AdminView, ClientQuota, ConfigState, PoolsState

PUBLIC_PATHS = frozenset({"/v1/status/ready", "/v1/openapi.json", "/dashboard"})
PUBLIC_PREFIXES = ("/dashboard/static/",)  # the page holds no data: its scripts ask with a token
DEFAULT_ENTITY = "<default>"
PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"
MAX_BODY_BYTES = 1 << 20


def create_app(view: AdminView) -> QuartTrio:
    """The admin app for one broker (``view``); serve it with ``admin.serve``."""
    app = AdminQuart("trio_broker.admin", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.url_map.merge_slashes = False  # a client id may hold "//": route it, do not redirect
    install_error_handlers(app)

    @app.before_request
    async def _authenticate() -> None:
        token = view.admin_token
        if token is None or request.path in PUBLIC_PATHS:
            return
        if request.path.startswith(PUBLIC_PREFIXES):
            return
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            raise ApiError(
                401,
                "unauthorized",
                "this path requires an Authorization: Bearer <admin.token> header",
                headers={"WWW-Authenticate": 'Bearer realm="trio-broker"'},
            )

    @app.after_request
    async def _consume_body(response: Response) -> Response:
        # An answer decided before the body was read (401, 404, 405 ...) reads it now:
        # with the body left unread, Hypercorn closes the keep-alive connection after
        # the response, racing the client's next request on it.
        with contextlib.suppress(Exception):
            await request.get_data()
        return response

    # ------------------------------------------------------------ status, docs

    @app.get("/v1/status/ready")
    async def ready() -> Response:
        is_ready = view.ready
        return json_response({"ready": is_ready}, 200 if is_ready else 503)

    document: dict[str, Any] | None = None

    @app.get("/v1/openapi.json")
    async def openapi() -> Response:
        nonlocal document
        if document is None:
            document = openapi_document(
                mute_states=view.mute_states(),
                quota_keys=view.quota_keys(),
                token_required=view.admin_token is not None,
                version=view.broker_info().version,
            )
        return json_response(document)

    @app.get("/v1/broker")
    async def broker() -> Response:
        info = view.broker_info()
        pools = view.pools()
        return json_response(
            {
                "broker_id": info.broker_id,
                "cluster_id": info.cluster_id,
                "version": info.version,
                "uptime_s": info.uptime_s,
                "started_at": info.started_at,
                "listeners": [asdict(lis) for lis in info.listeners],
                "admin": info.admin_url,
                "pools": {
                    "io": pools.io.size,
                    "network": {name: p.size for name, p in pools.network.items()},
                },
            }
        )

    # ------------------------------------------------------------------ pools

    @app.get("/v1/pools")
    async def pools() -> Response:
        return json_response(_pools_json(view.pools()))

    @app.put("/v1/pools/io")
    async def resize_io() -> Response:
        size = pool_size(await _body(("size",)))
        await view.resize_io_pool(size)
        return json_response(_pools_json(view.pools()))

    @app.put("/v1/pools/network/<listener>")
    async def resize_network(listener: str) -> Response:
        size = pool_size(await _body(("size",)))
        await view.resize_network_pool(listener.upper(), size)
        return json_response(_pools_json(view.pools()))

    # ------------------------------------------------------------ connections

    @app.get("/v1/connections")
    async def connections() -> Response:
        args = _query(("listener", "client_id", "mute_state"))
        listener = args.get("listener")
        client_id = args.get("client_id")
        mute_state = args.get("mute_state")
        if listener is not None:
            listener = listener.upper()
            if listener not in view.listener_names():
                raise ApiError(
                    400,
                    "unknown-listener",
                    f"no listener {listener!r}; listeners: {', '.join(view.listener_names())}",
                )
        if mute_state is not None and mute_state not in view.mute_states():
            raise ApiError(
                400,
                "unknown-mute-state",
                f"no mute state {mute_state!r}; states: {', '.join(view.mute_states())}",
            )
        selected = [
            asdict(c)
            for c in view.connections()
            if (listener is None or c.listener == listener)
            and (client_id is None or c.client_id == client_id)
            and (mute_state is None or c.mute_state == mute_state)
        ]
        return json_response({"connections": selected})

    # ----------------------------------------------------------------- quotas

    @app.get("/v1/quotas")
    async def quotas() -> Response:
        return json_response({"quotas": [_quota_json(q) for q in view.client_quotas()]})

    @app.put("/v1/quotas/clients/<path:client_id>")
    async def alter_quota(client_id: str) -> Response:
        keys = view.quota_keys()
        body = await _body(keys)
        if not body:
            raise ApiError(
                400, "missing-field", f"give at least one of {', '.join(keys)} (null removes one)"
            )
        changes = {k: quota_value(k, v) for k, v in body.items()}
        quota = await view.alter_client_quota(_entity_name(client_id), changes)
        return json_response(_quota_json(quota))

    @app.delete("/v1/quotas/clients/<path:client_id>")
    async def delete_quota(client_id: str) -> Response:
        removed = await view.delete_client_quota(_entity_name(client_id))
        return json_response(_quota_json(removed))

    register_user_routes(app, view)  # /v1/users
    register_client_metrics_routes(app, view)  # /v1/client-metrics (KIP-714)

    # ---------------------------------------------------------------- metrics

    @app.get("/v1/metrics")
    async def metrics() -> Response:
        return json_response(view.metrics_snapshot())

    @app.get("/v1/log-cleaner")
    async def log_cleaner() -> Response:
        return json_response(view.metrics_snapshot()["log_cleaner"])

    @app.get("/v1/cluster")
    async def cluster() -> Response:
        return json_response(await view.cluster())

    @app.get("/v1/transactions")
    async def transactions() -> Response:
        return json_response(view.transactions())

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(view.prometheus_text(), status=200, content_type=PROMETHEUS)

    # -------------------------------------------------------------- dashboard

    static = StaticFiles()

    @app.get("/dashboard")
    async def dashboard_page() -> Response:
        data, content_type = await static.get(PAGE)
        return Response(data, status=200, content_type=content_type)

    @app.get("/dashboard/static/<name>")
    async def dashboard_static(name: str) -> Response:
        if not static.known(name) or name == PAGE:
            raise ApiError(404, "not-found", f"no dashboard file {name!r}")
        data, content_type = await static.get(name)
        return Response(data, status=200, content_type=content_type)

    @app.get("/v1/dashboard")
    async def dashboard_data() -> Response:
        d = await view.dashboard_data()
        return json_response(
            {
                "data_dir": d.data_dir,
                "trends": d.trends,
                "recommendations": d.recommendations,
                "balance": d.balance,
                "problems": list(d.problems),
            }
        )

    register_topic_routes(app, view)  # /v1/topics
    register_acl_routes(app, view)
    register_fault_routes(app, view)  # /v1/faults (testing.faults.enable only)

    # ----------------------------------------------------------------- config

    @app.get("/v1/config")
    async def config() -> Response:
        return json_response(_config_json(view.config()))

    @app.put("/v1/config")
    async def update_config() -> Response:
        body = await _body(("settings", "dry_run"))
        settings = body.get("settings")
        if not isinstance(settings, dict):
            raise ApiError(400, "missing-field", "the body needs a 'settings' object of key: value")
        dry_run = boolean(body, "dry_run", False)
        texts = {str(k): setting_text(k, v) for k, v in settings.items()}
        before = view.config().effective
        after = await view.update_config(texts, dry_run=dry_run)
        changed = {k: v for k, v in after.effective.items() if before.get(k) != v}
        return json_response({"dry_run": dry_run, "changed": changed, **_config_json(after)})

    return app


def _query(allowed: Sequence[str]) -> dict[str, str]:
    """The request's query parameters; one it does not know is a 400 naming it."""
    unknown = sorted(k for k in request.args if k not in allowed)
    if unknown:
        raise ApiError(
            400,
            "unknown-parameter",
            f"unknown query parameter {unknown[0]!r}; known: {', '.join(allowed)}",
        )
    return {k: request.args[k] for k in allowed if k in request.args}


async def _body(allowed: Sequence[str]) -> dict[str, Any]:
    data = await request.get_data(cache=False)
    assert isinstance(data, bytes)
    return parse_json_object(data, allowed)


def _entity_name(client_id: str) -> str | None:
    return None if client_id == DEFAULT_ENTITY else client_id


def _pools_json(state: PoolsState) -> dict[str, Any]:
    return {
        "io": asdict(state.io),
        "network": {name: asdict(p) for name, p in state.network.items()},
        "request_queue": {plane: asdict(q) for plane, q in state.request_queue.items()},
    }


def _quota_json(quota: ClientQuota) -> dict[str, Any]:
    return {"entity": dict(quota.entity), "values": dict(quota.values)}


def _config_json(state: ConfigState) -> dict[str, Any]:
    return {
        "config": dict(state.effective),
        "dynamic_keys": list(state.dynamic_keys),
        "dynamic_settings": dict(state.dynamic_settings),
        "default_settings": dict(state.default_settings),
        "sources": dict(state.sources),
    }
