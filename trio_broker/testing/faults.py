"""``broker.faults``: fault rules from a test, the same in-process and over HTTP.

Owns: ``Faults`` (one method per action: ``error``, ``delay``, ``disconnect``,
``leader_unavailable``, ``throttle``; and ``rules``, ``clear``), ``Rule`` (a rule added,
whose ``hits`` and ``matched`` are read back from the broker each time they are asked)
and the two ways to reach a broker's rules: on its event loop (a broker in a thread of
this process) or through ``/v1/faults`` of its admin API (a broker in a process). A rule's
meaning is the broker's (``trio_broker.server.handlers.fault_rules``); a refused one raises
``ValueError`` with the broker's reason.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, Protocol

ApiFilter = str | int | Sequence[str | int] | None


class FaultBackend(Protocol):
    def add(self, spec: dict[str, Any]) -> dict[str, Any]: ...
    def rules(self) -> list[dict[str, Any]]: ...
    def get(self, rule_id: int) -> dict[str, Any]: ...
    def remove(self, rule_id: int) -> dict[str, Any]: ...
    def clear(self) -> list[dict[str, Any]]: ...


class Rule:
    """A fault rule in force in the broker; its counts are read back live."""

    def __init__(self, backend: FaultBackend, state: dict[str, Any]) -> None:
        self._backend = backend
        self.id: int = state["id"]
        self.action: str = state["action"]

    def state(self) -> dict[str, Any]:
        """The rule as the broker reports it (``GET /v1/faults/{id}``)."""
        return self._backend.get(self.id)

    @property
    def hits(self) -> int:
        """Requests the rule acted on so far."""
        return int(self.state()["hits"])

    @property
    def matched(self) -> int:
        """Requests that passed the rule's filters while it was in force."""
        return int(self.state()["matched"])

    @property
    def active(self) -> bool:
        return bool(self.state()["active"])

    def remove(self) -> dict[str, Any]:
        return self._backend.remove(self.id)

    def __repr__(self) -> str:
        return f"<fault rule {self.id} {self.action}>"


class Faults:
    """The fault rules of one broker (``testing.faults.enable=true``)."""

    def __init__(self, backend: Callable[[], FaultBackend]) -> None:
        self._backend = backend  # the broker's current one (a restart makes a new one)

    def add(self, **spec: Any) -> Rule:
        """A rule from its fields as ``POST /v1/faults`` takes them (``None`` left out)."""
        backend = self._backend()
        return Rule(backend, backend.add({k: v for k, v in spec.items() if v is not None}))

    def error(
        self,
        api: ApiFilter,
        error_code: int | str,
        *,
        count: int | None = 1,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
    ) -> Rule:
        """Answer the next ``count`` requests of ``api`` with ``error_code`` (a Kafka error
        code or its name, e.g. ``"NOT_LEADER_OR_FOLLOWER"``); ``count=None``: every one."""
        return self._add("error", api, count, topic, partition, client_id, error_code=error_code)

    def delay(
        self,
        api: ApiFilter,
        delay_ms: int,
        *,
        count: int | None = 1,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
    ) -> Rule:
        """Hold the next ``count`` requests of ``api`` for ``delay_ms`` before handling them."""
        return self._add("delay", api, count, topic, partition, client_id, delay_ms=delay_ms)

    def disconnect(
        self,
        api: ApiFilter = None,
        *,
        after: int = 0,
        count: int | None = 1,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
    ) -> Rule:
        """Let ``after`` matching requests through, then close the connection of the next
        ``count`` ones."""
        return self._add("disconnect", api, count, topic, partition, client_id, after=after)

    def leader_unavailable(self, topic: str, partition: int = 0, *, duration_ms: int) -> Rule:
        """For ``duration_ms``, the partition's leader answers NOT_LEADER_OR_FOLLOWER to
        Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and DeleteRecords; then it is back."""
        return self.add(
            action="leader_unavailable", topic=topic, partition=partition, duration_ms=duration_ms
        )

    def throttle(
        self,
        client_id: str | None,
        throttle_ms: int,
        *,
        api: ApiFilter = None,
        count: int | None = None,
        duration_ms: int | None = None,
    ) -> Rule:
        """Throttle ``client_id``'s requests (KIP-219: ``throttle_time_ms`` in the response,
        then the connection muted that long), until removed, ``count`` or ``duration_ms``."""
        return self.add(
            action="throttle",
            client_id=client_id,
            throttle_ms=throttle_ms,
            api=_api(api),
            count=count,
            duration_ms=duration_ms,
        )

    def rules(self) -> list[dict[str, Any]]:
        """Every rule with its counts, as the broker reports them."""
        return self._backend().rules()

    def clear(self) -> list[dict[str, Any]]:
        """Remove every rule; what they were, counts included."""
        return self._backend().clear()

    def _add(
        self,
        action: str,
        api: ApiFilter,
        count: int | None,
        topic: str | None,
        partition: int | None,
        client_id: str | None,
        **extra: Any,
    ) -> Rule:
        spec: dict[str, Any] = {
            "action": action,
            "api": _api(api),
            "topic": topic,
            "partition": partition,
            "client_id": client_id,
            **extra,
        }
        backend = self._backend()
        spec = {k: v for k, v in spec.items() if v is not None}
        spec["count"] = count  # None is meaningful here: no limit
        return Rule(backend, backend.add(spec))


def _api(api: ApiFilter) -> Any:
    return list(api) if isinstance(api, list | tuple) else api


class LocalFaults:
    """The rules of a broker running in this process, changed on its event loop."""

    def __init__(self, call: Callable[..., Any], injector: Any) -> None:
        self._call = call
        self._injector = injector

    def add(self, spec: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call(self._injector.add, spec)
        return result

    def rules(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call(self._injector.rules)
        return result

    def get(self, rule_id: int) -> dict[str, Any]:
        result: dict[str, Any] = self._call(self._injector.get, rule_id)
        return result

    def remove(self, rule_id: int) -> dict[str, Any]:
        result: dict[str, Any] = self._call(self._injector.remove, rule_id)
        return result

    def clear(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call(self._injector.clear)
        return result


class HttpFaults:
    """The rules of a broker reached through its admin API's ``/v1/faults``."""

    def __init__(self, admin_url: str) -> None:
        self._url = admin_url.rstrip("/") + "/v1/faults"

    def _ask(self, method: str, path: str = "", body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self._url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read())["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = str(exc)
            if exc.code == 404:
                raise KeyError(message) from None
            raise ValueError(message) from None

    def add(self, spec: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._ask("POST", body=spec)
        return result

    def rules(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._ask("GET")["rules"]
        return result

    def get(self, rule_id: int) -> dict[str, Any]:
        result: dict[str, Any] = self._ask("GET", f"/{rule_id}")
        return result

    def remove(self, rule_id: int) -> dict[str, Any]:
        result: dict[str, Any] = self._ask("DELETE", f"/{rule_id}")
        return result

    def clear(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._ask("DELETE")["rules"]
        return result
