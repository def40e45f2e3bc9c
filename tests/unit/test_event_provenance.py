"""domain/provenance.py: the one line that refuses another account's event, and the function's own account read from
its ARN (no STS call)."""

from __future__ import annotations

import pytest

from ecr_retention.domain.provenance import account_of_arn, foreign_event


def test_an_event_of_this_account_or_of_none_said_is_not_refused() -> None:
    assert foreign_event("event", "e-1", "123456789012", "123456789012") is None
    assert foreign_event("event", "e-1", None, "123456789012") is None


def test_another_accounts_event_is_refused_in_one_line_naming_both_accounts() -> None:
    line = foreign_event("push event", "e-1", "210987654321", "123456789012")
    assert line is not None
    assert "\n" not in line
    assert line.startswith("push event e-1 came from account 210987654321, not this deployment's (123456789012)")


@pytest.mark.parametrize(
    ("arn", "account"),
    [
        ("arn:aws:lambda:eu-west-1:123456789012:function:EcrRetention-Push", "123456789012"),
        ("arn:aws-cn:lambda:cn-north-1:123456789012:function:f:live", "123456789012"),
    ],
)
def test_the_functions_account_is_read_from_its_arn(arn: str, account: str) -> None:
    assert account_of_arn(arn) == account


@pytest.mark.parametrize("arn", ["", "function-name", "arn:aws:lambda:eu-west-1::function:f"])
def test_an_arn_without_an_account_is_refused(arn: str) -> None:
    with pytest.raises(ValueError, match="not an ARN with an account"):
        account_of_arn(arn)
