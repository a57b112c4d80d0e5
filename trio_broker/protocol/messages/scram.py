"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): SCRAM user credentials."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class DescribeUserScramCredentialsRequest(Request, api_key=50, versions="0", flexible="0+"):
    class UserName(Struct):
        name: str = field("string")

    users: list[UserName] | None = field(array(UserName), nullable="0+")


class DescribeUserScramCredentialsResponse(Response, api_key=50, versions="0", flexible="0+"):
    class Result(Struct):
        class CredentialInfo(Struct):
            mechanism: int = field("int8")
            iterations: int = field("int32")

        user: str = field("string")
        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)
        credential_infos: list[CredentialInfo] = field(array(CredentialInfo))

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    results: list[Result] = field(array(Result))


class AlterUserScramCredentialsRequest(Request, api_key=51, versions="0", flexible="0+"):
    class ScramCredentialDeletion(Struct):
        name: str = field("string")
        mechanism: int = field("int8")

    class ScramCredentialUpsertion(Struct):
        name: str = field("string")
        mechanism: int = field("int8")
        iterations: int = field("int32")
        salt: bytes = field("bytes")
        salted_password: bytes = field("bytes")

    deletions: list[ScramCredentialDeletion] = field(array(ScramCredentialDeletion))
    upsertions: list[ScramCredentialUpsertion] = field(array(ScramCredentialUpsertion))


class AlterUserScramCredentialsResponse(Response, api_key=51, versions="0", flexible="0+"):
    class Result(Struct):
        user: str = field("string")
        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)

    throttle_time_ms: int = field("int32")
    results: list[Result] = field(array(Result))


DESCRIBE_USER_SCRAM_CREDENTIALS = register(
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse
)
ALTER_USER_SCRAM_CREDENTIALS = register(
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse
)
