"""EcrRegistry.repository_names against moto with fault injection: a DescribeRepositories that fails after its retries
is RepositoriesUnlistable, naming the call and AWS's error (a run of several Regions reports that Region as failed,
issue 44), and AwsCallFailed too (a command that lists one registry says it in one line, exit 1)."""

from __future__ import annotations

import pytest

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.aws.errors import AwsCallFailed, describe_aws_error
from ecr_retention.ports import RepositoriesUnlistable
from ecr_retention_dev.emulator.fidelity import EcrFidelity


def test_access_denied_to_list_is_unlistable_and_names_the_call(fidelity: EcrFidelity, registry: EcrRegistry) -> None:
    fidelity.fail("DescribeRepositories", "AccessDeniedException", message="not authorized")

    with pytest.raises(RepositoriesUnlistable) as caught:
        registry.repository_names()

    assert str(caught.value) == "DescribeRepositories failed: AccessDeniedException: not authorized"
    assert isinstance(caught.value, AwsCallFailed)
    assert describe_aws_error(caught.value) == str(caught.value)


def test_throttling_past_the_retries_is_unlistable(fidelity: EcrFidelity, registry: EcrRegistry) -> None:
    fidelity.throttle("DescribeRepositories", times=100)

    with pytest.raises(RepositoriesUnlistable, match="ThrottlingException"):
        registry.repository_names()
    assert fidelity.served["DescribeRepositories"] > 1  # botocore retried first
