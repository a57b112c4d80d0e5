"""SCRAM credentials in a ZooKeeper cluster: one set of users for every broker.

Owns: ``ZkScramCredentials``, what a ZooKeeper-era Kafka broker does with
``AlterUserScramCredentials`` (``AdminZkClient.changeConfigs`` for users) and its
``UserConfigHandler``: a user's credentials live in ``/config/users/<user>`` (the name
sanitized as Kafka's ``Sanitizer``: URL-encoded), one key per mechanism in Kafka's form
(``SCRAM-SHA-256`` = ``salt=...,stored_key=...,server_key=...,iterations=4096``), beside
whatever else that node holds (a user's quotas, written by Kafka's tools), which is kept.

- A change, whichever door it came in by (AlterUserScramCredentials, the admin API's
  ``/v1/users``), is written to each user's node and announced as ``users/<user>``
  (``ZkConfigChanges``), then stored here.
- Every broker follows the announcements: it reads the node again and makes its own
  store (``ScramStore``, in its data dir: what it logs clients in against) match it.
- At start and after a new session every node is read again, and the store made to match
  ZooKeeper: a user ZooKeeper does not have is removed here, unless ZooKeeper has no users
  at all yet, when this broker's users (from before it joined a cluster) are written there.

Before, each broker kept only what it had been told itself, so a user created through one
broker could not log in to another (nor could the inter-broker user, unless created on
every broker).
"""

from __future__ import annotations

import base64
import logging
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Protocol

import trio

from ...security.scram import MECHANISMS, ScramCredential
from ..access import ScramStore
from .config_changes import ZkConfigChanges
from .session import ZkSession

log = logging.getLogger("trio_broker.server")

CONFIG_USERS = "/config/users"


class ScramBroker(Protocol):
    scram: ScramStore


def sanitize(user: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: a user name as a ZooKeeper node name."""
    return urllib.parse.quote(user, safe="").replace("~", "%7E")


def user_path(user: str) -> str:
    return f"{CONFIG_USERS}/{sanitize(user)}"


def credential_text(c: ScramCredential) -> str:
    """Kafka's ``ScramCredentialUtils.credentialToString``."""
    salt, stored, server = (b64(b) for b in (c.salt, c.stored_key, c.server_key))
    return f"salt={salt},stored_key={stored},server_key={server},iterations={c.iterations}"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def credential_of(mechanism: str, text: str) -> ScramCredential:
    """Kafka's ``credentialFromString``; ``ValueError`` for text that is not one."""
    fields = dict(part.split("=", 1) for part in text.split(","))
    return ScramCredential(
        mechanism,
        base64.b64decode(fields["salt"], validate=True),
        int(fields["iterations"]),
        base64.b64decode(fields["stored_key"], validate=True),
        base64.b64decode(fields["server_key"], validate=True),
    )


class ZkScramCredentials:
    kind = "users"

    def __init__(self, session: ZkSession, changes: ZkConfigChanges, broker: ScramBroker) -> None:
        self.session = session
        self.changes = changes
        self.store = broker.scram
        changes.follow(self)

    async def alter(
        self,
        upserts: Sequence[tuple[str, ScramCredential]],
        deletions: Sequence[tuple[str, str]],
    ) -> None:
        """AlterUserScramCredentials for the cluster: each user's node written and
        announced, then this broker's store."""
        users = sorted({u for u, _ in upserts} | {u for u, _ in deletions})
        for user in users:
            configs = await self._read(user) or {}
            for name, mechanism in deletions:
                if name == user:
                    configs.pop(mechanism, None)
            for name, cred in upserts:
                if name == user:
                    configs[cred.mechanism] = credential_text(cred)
            await self._write(user, configs)
        await trio.to_thread.run_sync(self.store.apply, upserts, deletions)
        for user, _ in upserts:
            log.info("SCRAM credentials of user %r changed (in ZooKeeper)", user)
        for user, mechanism in deletions:
            log.info("SCRAM credential %s of user %r deleted (in ZooKeeper)", mechanism, user)

    async def _read(self, user: str) -> dict[str, str] | None:
        return await self.changes.read(self.kind, sanitize(user))

    async def _write(self, user: str, configs: Mapping[str, str]) -> None:
        await self.changes.publish(self.kind, sanitize(user), configs)

    # ------------------------------------------------------------ following

    async def read_all(self) -> None:
        names = [urllib.parse.unquote(n) for n in await self.session.children(CONFIG_USERS)]
        local = self.store.users()
        if not names and local:  # users from before ZooKeeper had any: the cluster keeps them
            for user, creds in local.items():
                await self._write(user, {m: credential_text(c) for m, c in creds.items()})
            return
        for user in set(names) | set(local):
            await self._adopt(user, await self._read(user) or {})

    async def changed(self, name: str) -> None:
        if "/" in name:  # users/<user>/clients/<client>: a quota (``ZkClientQuotas``)
            return
        user = urllib.parse.unquote(name)
        await self._adopt(user, await self._read(user) or {})

    async def _adopt(self, user: str, configs: Mapping[str, str]) -> None:
        """Make this broker's credentials of ``user`` what ZooKeeper has."""
        wanted: dict[str, ScramCredential] = {}
        for mechanism in MECHANISMS:
            text = configs.get(mechanism)
            if text is None:
                continue
            try:
                wanted[mechanism] = credential_of(mechanism, text)
            except (ValueError, KeyError) as exc:
                path = user_path(user)
                log.error("%s: unreadable %s credential, not applied: %s", path, mechanism, exc)
        have = self.store.users().get(user, {})
        upserts = [(user, c) for m, c in wanted.items() if have.get(m) != c]
        deletions = [(user, m) for m in have if m not in wanted]
        if upserts or deletions:
            await trio.to_thread.run_sync(self.store.apply, upserts, deletions)
            log.info("SCRAM credentials of user %r from ZooKeeper: %s", user, sorted(wanted))
