"""One exception family for AWS calls that failed after botocore's retries, so callers never see a bare
ClientError and every message names the resource, the operation and AWS's error code."""

from __future__ import annotations

from typing import TypeAlias

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

# Every exception a boto3 call raises once botocore gave up: an AWS error answer, a transport failure, or an answer
# botocore cannot parse (ResponseParserError is no BotoCoreError: a 429 without a body to SNS or STS raises it, and
# botocore does not retry it).
AWS_CALL_ERRORS = (ClientError, BotoCoreError, ResponseParserError)
AwsCallError: TypeAlias = ClientError | BotoCoreError | ResponseParserError


class AwsCallFailed(Exception):
    """An AWS call failed for a reason the caller cannot fix by retrying at once (retries already happened)."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code  # AWS's error code (AccessDenied, ...) or the botocore exception's class name


def error_code(error: ClientError) -> str:
    """AWS's error code (AccessDenied, ThrottlingException, ...). botocore always sets one (the HTTP status when the
    answer has no body), so the default only guards a hand-made ClientError."""
    code = error.response.get("Error", {}).get("Code")
    return str(code) if code else "UnknownError"


def error_message(error: ClientError) -> str:
    """AWS's error message, "" when the answer has none."""
    return str(error.response.get("Error", {}).get("Message") or "")


def describe_failure(operation: str, error: AwsCallError) -> tuple[str, str]:
    """(code, "<Operation> failed: <Code>: <message>") for an exception message, on one line."""
    if isinstance(error, ClientError):
        code = error_code(error)
        detail = error_message(error)
    else:
        code = type(error).__name__  # EndpointConnectionError, ReadTimeoutError, ResponseParserError, ...
        detail = str(error).splitlines()[0] if str(error) else ""
    return code, f"{operation} failed: {code}: {detail}".rstrip(": ")


def describe_aws_error(error: BaseException) -> str | None:
    """One line for an AWS failure that reached the CLI, or None when the exception is not about AWS."""
    if isinstance(error, AwsCallFailed):
        return str(error)
    if isinstance(error, ClientError):
        operation = error.operation_name or "AWS call"
        return describe_failure(operation, error)[1]
    if isinstance(error, BotoCoreError | ResponseParserError):
        first_line = str(error).splitlines()[0] if str(error) else ""
        return f"{type(error).__name__}: {first_line}"
    return None
