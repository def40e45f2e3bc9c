"""AWS failures that reach the CLI become one line, whatever botocore raised."""

from __future__ import annotations

from botocore.exceptions import ClientError, ConnectTimeoutError
from botocore.parsers import ResponseParserError

from ecr_retention.aws.errors import describe_aws_error


def test_an_answer_botocore_cannot_parse_is_one_line() -> None:
    error = ResponseParserError(
        "Unable to parse response (no element found: line 1, column 0), invalid XML received.\nb''"
    )

    assert describe_aws_error(error) == (
        "ResponseParserError: Unable to parse response (no element found: line 1, column 0), invalid XML received."
    )


def test_client_and_transport_errors_are_one_line() -> None:
    refused = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetCallerIdentity")

    assert describe_aws_error(refused) == "GetCallerIdentity failed: AccessDenied: no"
    assert describe_aws_error(ConnectTimeoutError(endpoint_url="https://sts.amazonaws.com")) == (
        'ConnectTimeoutError: Connect timeout on endpoint URL: "https://sts.amazonaws.com"'
    )


def test_other_exceptions_are_not_described_as_aws_failures() -> None:
    assert describe_aws_error(ValueError("a bug")) is None
