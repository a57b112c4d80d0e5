"""DescribeUserScramCredentials v0 and AlterUserScramCredentials v0: SCRAM users.

The same credential store as the admin API's ``/v1/users`` and as SASL authentication.
Describe answers mechanisms and iteration counts, never salts or keys; a null or empty
user list means every user. Alter takes deletions and upsertions (the client sends the
salted password, Hi(password, salt, iterations), never the password itself); as Kafka,
a user with any invalid alteration has none of its alterations applied, and each user gets
one result: UNACCEPTABLE_CREDENTIAL (empty name, iterations out of bounds, a salted
password of the wrong size), UNSUPPORTED_SASL_MECHANISM, DUPLICATE_RESOURCE (one user and
mechanism twice) or RESOURCE_NOT_FOUND (deleting a credential that does not exist).
Authorization as in Kafka: describing needs DESCRIBE on the cluster, altering ALTER; without
it, every user's result is CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from ...protocol.errors import ErrorCode
from ...protocol.messages.scram import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from ...security.scram import (
    MECHANISM_NAMES,
    MECHANISMS,
    CredentialError,
    ScramCredential,
    credential_from_salted_password,
)
from ..authz import Op, cluster_allowed
from ..context import RequestContext

DescribeResult = DescribeUserScramCredentialsResponse.Result
AlterResult = AlterUserScramCredentialsResponse.Result


async def describe(
    ctx: RequestContext, req: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE):
        return DescribeUserScramCredentialsResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message="the cluster DESCRIBE permission is needed",
            results=[],
        )
    stored = ctx.broker.scram_credentials()
    names = [u.name for u in req.users] if req.users else sorted(stored)
    results: list[DescribeResult] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            continue
        creds = stored.get(name)
        if names.count(name) > 1:
            code, message = (
                ErrorCode.DUPLICATE_RESOURCE,
                "Cannot describe SCRAM credentials for the same user twice in a single request",
            )
        elif not creds:
            code, message = (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to describe a user credential that does not exist",
            )
        else:
            code, message = ErrorCode.NONE, None
        seen.add(name)
        infos = [
            DescribeResult.CredentialInfo(mechanism=MECHANISMS[m], iterations=c.iterations)
            for m, c in sorted((creds or {}).items())
            if code == ErrorCode.NONE
        ]
        results.append(
            DescribeResult(
                user=name, error_code=code, error_message=message, credential_infos=infos
            )
        )
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=ErrorCode.NONE,
        error_message=None,
        results=results,
    )


async def alter(
    ctx: RequestContext, req: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    if not cluster_allowed(ctx, Op.ALTER):
        names = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
        return AlterUserScramCredentialsResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            results=[
                AlterResult(
                    user=name,
                    error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    error_message="the cluster ALTER permission is needed",
                )
                for name in names
            ],
        )
    stored = ctx.broker.scram_credentials()
    users: list[str] = []
    errors: dict[str, tuple[int, str]] = {}
    seen: set[tuple[str, int]] = set()
    upserts: dict[str, list[ScramCredential]] = {}
    deletions: dict[str, list[str]] = {}

    def fail(user: str, code: int, message: str) -> None:
        errors.setdefault(user, (code, message))

    def check(user: str, mechanism: int) -> str | None:
        if user not in users:
            users.append(user)
        if not user:
            fail(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
            return None
        name = MECHANISM_NAMES.get(mechanism)
        if name is None:
            fail(user, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
            return None
        if (user, mechanism) in seen:
            fail(
                user,
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
            return None
        seen.add((user, mechanism))
        return name

    for d in req.deletions:
        name = check(d.name, d.mechanism)
        if name is None:
            continue
        if name not in stored.get(d.name, {}):
            fail(
                d.name,
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
            continue
        deletions.setdefault(d.name, []).append(name)
    for u in req.upsertions:
        name = check(u.name, u.mechanism)
        if name is None:
            continue
        try:
            cred = credential_from_salted_password(name, u.salt, u.salted_password, u.iterations)
        except CredentialError as exc:
            fail(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, str(exc))
            continue
        upserts.setdefault(u.name, []).append(cred)
    ok = [user for user in users if user not in errors]
    if ok:
        await ctx.broker.alter_scram_credentials(
            [(user, c) for user in ok for c in upserts.get(user, [])],
            [(user, m) for user in ok for m in deletions.get(user, [])],
        )
    results = [
        AlterResult(
            user=user,
            error_code=errors[user][0] if user in errors else ErrorCode.NONE,
            error_message=errors[user][1] if user in errors else None,
        )
        for user in users
    ]
    return AlterUserScramCredentialsResponse(throttle_time_ms=ctx.throttle_time_ms, results=results)
