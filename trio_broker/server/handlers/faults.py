"""Fault injection in the request path, for test suites (``testing.faults.enable``).

Owns: ``FaultInjector``, the rules in force (``fault_rules``) and their application, and
``install_faults``, which puts it in a broker's request path. Applied where requests are
handled, by wrapping the handlers of the broker's API table and its throttler:

- a matching ``delay`` rule holds the request in its handler (``trio.sleep``) first;
- then the first matching ``error``/``leader_unavailable``/``disconnect`` rule answers it
  in place of its API handler: the error response of ``protocol.error_response`` (every
  error code of the response set; a response with no place for one closes the
  connection), or ``CloseConnection``. The request handler then sends it as any other;
- a matching ``throttle`` rule adds its time to what the client quotas decide.

Zero cost when off: without ``testing.faults.enable=true`` nothing here is installed; the
broker's table, request handler and throttler are the plain ones, so no request pays even
a check for the feature. When on and without rules, a request pays one test of an empty
dict. All methods run on the broker's event loop (the admin API's and
``trio_broker.testing``'s calls come in through it): no locks.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import trio

from ...apis.context import CloseConnection, RequestContext
from ...apis.table import ApiEntry, ApiTable, Handler
from ...network.request import Request
from ...protocol.api import ApiKey, ApiSpec
from ...protocol.error_response import error_response
from ..quotas import EXEMPT, Throttler
from .fault_rules import FaultRule, named_partitions, parse_rule
from .request_handler import RequestHandler

_TERMINAL = ("error", "leader_unavailable", "disconnect")


class FaultInjector:
    """The fault rules of one broker, and the wrappers that apply them."""

    def __init__(self, topic_name: Callable[[Any], str | None], clock: Callable[[], float]):
        self._rules: dict[int, FaultRule] = {}
        self._ids = itertools.count(1)
        self._topic_name = topic_name  # a topic id's name, for requests naming topics by id
        self._clock = clock

    # ------------------------------------------------------------- the rules

    def add(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """Add a rule from its JSON description; ``FaultSpecError`` when refused."""
        now = self._clock()
        rule = parse_rule(spec, next(self._ids), now)
        self._rules[rule.id] = rule
        return rule.to_json(now)

    def rules(self) -> list[dict[str, Any]]:
        now = self._clock()
        return [r.to_json(now) for r in self._rules.values()]

    def get(self, rule_id: int) -> dict[str, Any]:
        """One rule with its counts; ``KeyError`` when there is none with that id."""
        return self._rules[rule_id].to_json(self._clock())

    def remove(self, rule_id: int) -> dict[str, Any]:
        """Remove one rule (``KeyError`` if none) and return it, counts included."""
        return self._rules.pop(rule_id).to_json(self._clock())

    def clear(self) -> list[dict[str, Any]]:
        """Remove every rule; what they were, counts included."""
        removed = self.rules()
        self._rules.clear()
        return removed

    # ------------------------------------------------------- the request path

    def wrap_table(self, table: ApiTable) -> ApiTable:
        """A copy of ``table`` whose every handler passes through the rules first."""
        entries = table.entries()
        return ApiTable(
            [ApiEntry(e.spec, self._wrap(e.spec, e.handler), e.control_only) for e in entries]
        )

    def _wrap(self, spec: ApiSpec, handler: Handler) -> Handler:
        async def with_faults(ctx: RequestContext, body: Any) -> Any:
            if not self._rules:
                return await handler(ctx, body)
            delay_s, rule = self._decide(ctx.api_key, ctx.client_id, body)
            if delay_s:
                await trio.sleep(delay_s)
            if rule is None:
                return await handler(ctx, body)
            return self._answer(rule, spec, ctx, body)

        return with_faults

    def _decide(
        self, api_key: int, client_id: str | None, body: Any
    ) -> tuple[float, FaultRule | None]:
        """The delay to apply and the rule that answers instead of the API (if any);
        counts every rule the request matched."""
        now = self._clock()
        names = self._names(body)
        delay_ms = 0
        for rule in self._rules.values():
            if rule.action == "throttle" or not rule.active(now):
                continue
            if not rule.matches(api_key, client_id, names):
                continue
            rule.matched += 1
            if rule.action == "delay":
                rule.hits += 1
                delay_ms = max(delay_ms, rule.delay_ms)
            elif rule.action == "disconnect" and rule.matched <= rule.after:
                continue
            else:
                rule.hits += 1
                return delay_ms / 1000, rule
        return delay_ms / 1000, None

    def _names(self, body: Any) -> Callable[[], set[tuple[str, int]]]:
        found: list[set[tuple[str, int]]] = []

        def names() -> set[tuple[str, int]]:  # computed once, when a filter needs it
            if not found:
                found.append(named_partitions(body, self._topic_name))
            return found[0]

        return names

    def _answer(self, rule: FaultRule, spec: ApiSpec, ctx: RequestContext, body: Any) -> Any:
        reason = f"fault rule {rule.id}"
        if rule.action == "disconnect":
            return CloseConnection(reason)
        if spec.key == ApiKey.Produce and getattr(body, "acks", 1) == 0:
            return None  # acks=0: the client reads no response, whatever it is
        response = error_response(spec, ctx.response_version, body, rule.error_code, reason)
        return CloseConnection(reason) if response is None else response

    def throttle_ms(self, request: Request) -> int:
        """The throttle time the matching ``throttle`` rules give ``request``."""
        if not self._rules or request.plane == "control" or request.spec.key in EXEMPT:
            return 0
        now = self._clock()
        header = request.header
        names = self._names(request.body)
        ms = 0
        for rule in self._rules.values():
            if rule.action != "throttle" or not rule.active(now):
                continue
            if rule.matches(header.api_key, header.client_id, names):
                rule.matched += 1
                rule.hits += 1
                ms = max(ms, rule.throttle_ms)
        return ms


class FaultThrottler(Throttler):
    """The broker's throttler, with the ``throttle`` rules' time added."""

    def __init__(self, inner: Throttler, faults: FaultInjector) -> None:
        super().__init__(inner.quotas, inner.purgatory)
        self._faults = faults

    def throttle_ms(self, request: Request, response_size: int) -> int:
        return max(super().throttle_ms(request, response_size), self._faults.throttle_ms(request))


class _Broker(Protocol):  # what install_faults needs of a Broker (which imports this module)
    request_handler: RequestHandler
    faults: FaultInjector | None

    def topic_by_id(self, topic_id: Any) -> Any: ...


def install_faults(broker: _Broker) -> FaultInjector:
    """Put a ``FaultInjector`` in ``broker``'s request path (before it runs): its API
    table's handlers and its throttler pass through the rules."""

    def topic_name(topic_id: Any) -> str | None:
        info = broker.topic_by_id(topic_id)
        return None if info is None else str(info.name)

    injector = FaultInjector(topic_name, trio.current_time)
    handler = broker.request_handler
    handler.table = injector.wrap_table(handler.table)
    if handler.throttler is not None:
        handler.throttler = FaultThrottler(handler.throttler, injector)
    broker.faults = injector
    return injector
