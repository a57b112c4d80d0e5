"""SCRAM user credentials: stored, looked up and persisted (never a password).

Owns: ``ScramStore``, persisted as ``scram_credentials.json`` in the first log dir (written to
a temporary file, fsynced and renamed, as ``quotas.json``): per user and mechanism the salt,
the iteration count, StoredKey and ServerKey (RFC 5802), base64-encoded. SASL/SCRAM and
SASL/PLAIN authenticate against it; DescribeUserScramCredentials,
AlterUserScramCredentials and the admin API's ``/v1/users`` manage it.
Blocking file I/O: the broker calls ``load``, ``apply`` and ``delete`` from a worker
thread; ``lookup`` reads an immutable snapshot and never waits (it is called from the
network layer and from worker threads).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ...security.scram import MECHANISMS, CredentialError, ScramCredential
from ..datadir import JsonDocument, StoreError

Users = Mapping[str, Mapping[str, ScramCredential]]


class ScramStore:
    FILE = "scram_credentials.json"

    def __init__(self, directory: Path) -> None:
        self.document = JsonDocument(directory / self.FILE, what="SCRAM credential")
        self._users: Users = MappingProxyType({})
        self._write_lock = threading.Lock()

    # ------------------------------------------------------------------ reading

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        creds = self._users.get(user)
        return None if creds is None else creds.get(mechanism)

    def users(self) -> Users:
        """user -> mechanism -> credential (an immutable snapshot)."""
        return self._users

    # ------------------------------------------------------------------ writing

    def load(self) -> None:
        data = self.document.read()
        if data is None:
            return
        users: dict[str, dict[str, ScramCredential]] = {}
        for user, creds in data["users"].items():
            for mechanism, c in creds.items():
                if mechanism not in MECHANISMS:
                    raise StoreError(
                        f"{self.document.path}: unknown mechanism {mechanism!r} for {user!r}"
                    )
                users.setdefault(user, {})[mechanism] = ScramCredential(
                    mechanism,
                    _unb64(c["salt"]),
                    int(c["iterations"]),
                    _unb64(c["stored_key"]),
                    _unb64(c["server_key"]),
                )
        self._users = _frozen(users)

    def apply(
        self,
        upserts: Iterable[tuple[str, ScramCredential]] = (),
        deletions: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Store credentials and remove (user, mechanism) pairs, all in one write."""
        with self._write_lock:
            users = {u: dict(c) for u, c in self._users.items()}
            for user, mechanism in deletions:
                users.get(user, {}).pop(mechanism, None)
                if user in users and not users[user]:
                    del users[user]
            for user, cred in upserts:
                if not user:
                    raise CredentialError("the user name must not be empty")
                users.setdefault(user, {})[cred.mechanism] = cred
            self._save(users)
            self._users = _frozen(users)

    def delete(self, user: str, mechanism: str | None = None) -> list[str]:
        """Remove one user's credential of ``mechanism`` (None: all); the mechanisms
        removed."""
        current = self._users.get(user, {})
        removed = [m for m in current if mechanism is None or m == mechanism]
        if removed:
            self.apply(deletions=[(user, m) for m in removed])
        return removed

    def _save(self, users: Mapping[str, Mapping[str, ScramCredential]]) -> None:
        data: dict[str, Any] = {
            "users": {
                user: {
                    m: {
                        "salt": _b64(c.salt),
                        "iterations": c.iterations,
                        "stored_key": _b64(c.stored_key),
                        "server_key": _b64(c.server_key),
                    }
                    for m, c in sorted(creds.items())
                }
                for user, creds in sorted(users.items())
            },
        }
        self.document.write(data)


def _frozen(users: Mapping[str, Mapping[str, ScramCredential]]) -> Users:
    return MappingProxyType({u: MappingProxyType(dict(c)) for u, c in users.items()})


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)
