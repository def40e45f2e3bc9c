"""DynamoDbLeases.holder against moto DynamoDB: who the lease names, read only, expired or not."""

from __future__ import annotations

from typing import Any

import pytest

from ecr_retention.aws.dynamodb_lease import DynamoDbLeases, LeaseError
from tests.integration.aws.storage.faults import fail_with
from tests.integration.aws.storage.test_dynamodb_lease import TABLE, Clock, clock, dynamodb, leases, stored

__all__ = ["clock", "dynamodb", "leases"]  # the fixtures, shared


def test_the_holder_is_the_run_that_took_the_lease(leases: DynamoDbLeases) -> None:
    assert leases.acquire("app/api", "run-1", 900)

    assert leases.holder("app/api") == "run-1"


def test_a_repository_without_a_lease_has_no_holder(leases: DynamoDbLeases) -> None:
    assert leases.holder("app/api") is None


def test_a_released_lease_has_no_holder(leases: DynamoDbLeases) -> None:
    leases.acquire("app/api", "run-1", 900)
    leases.release("app/api", "run-1")

    assert leases.holder("app/api") is None


def test_an_expired_lease_still_names_its_holder_and_reading_it_changes_nothing(
    dynamodb: Any, leases: DynamoDbLeases, clock: Clock
) -> None:
    leases.acquire("app/api", "run-1", 900)
    clock.advance(901)
    before = stored(dynamodb, "app/api")

    assert leases.holder("app/api") == "run-1"
    assert stored(dynamodb, "app/api") == before


def test_a_failed_read_is_a_lease_error(dynamodb: Any, leases: DynamoDbLeases) -> None:
    fail_with(dynamodb, "GetItem", "AccessDeniedException", message="not authorized")

    with pytest.raises(LeaseError, match=f"lease table {TABLE}, repository app/api: GetItem failed: AccessDenied"):
        leases.holder("app/api")
