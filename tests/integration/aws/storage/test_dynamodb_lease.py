"""DynamoDbLeases against moto DynamoDB: one holder at a time, takeover after expiry, safe release."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from ecr_retention.aws.dynamodb_lease import DynamoDbLeases, LeaseError
from ecr_retention.layout import LEASE_TABLE_KEY, LEASE_TABLE_TTL_ATTRIBUTE
from tests.integration.aws.conftest import REGION
from tests.integration.aws.storage.faults import fail_with

TABLE = "ecr-retention-leases"
START = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def dynamodb() -> Any:
    """The table as the stack defines it: the shared key constant, on-demand, TTL on the expiry attribute."""
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": LEASE_TABLE_KEY, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": LEASE_TABLE_KEY, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.update_time_to_live(
        TableName=TABLE, TimeToLiveSpecification={"Enabled": True, "AttributeName": LEASE_TABLE_TTL_ATTRIBUTE}
    )
    return client


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def leases(dynamodb: Any, clock: Clock) -> DynamoDbLeases:
    return DynamoDbLeases(TABLE, dynamodb, clock=clock)


def stored(dynamodb: Any, repository: str) -> dict[str, str] | None:
    item = dynamodb.get_item(TableName=TABLE, Key={LEASE_TABLE_KEY: {"S": repository}}, ConsistentRead=True)
    if "Item" not in item:
        return None
    return {name: next(iter(value.values())) for name, value in item["Item"].items()}


class TestAcquire:
    def test_stores_the_holder_and_the_expiry_in_epoch_seconds(self, dynamodb: Any, leases: DynamoDbLeases) -> None:
        assert leases.acquire("app/api", "run-1", 900)

        assert stored(dynamodb, "app/api") == {
            "repository": "app/api",
            "holder": "run-1",
            "expiresAt": str(int(START.timestamp()) + 900),
        }

    def test_a_second_holder_is_refused_while_the_lease_lasts(
        self, dynamodb: Any, leases: DynamoDbLeases, clock: Clock
    ) -> None:
        assert leases.acquire("app/api", "run-1", 900)
        clock.advance(900)  # the last second of the lease: not expired yet

        assert not leases.acquire("app/api", "run-2", 900)
        assert stored(dynamodb, "app/api") == {
            "repository": "app/api",
            "holder": "run-1",
            "expiresAt": str(int(START.timestamp()) + 900),
        }

    def test_an_expired_lease_is_taken_over(self, dynamodb: Any, leases: DynamoDbLeases, clock: Clock) -> None:
        assert leases.acquire("app/api", "run-1", 900)
        clock.advance(901)

        assert leases.acquire("app/api", "run-2", 600)
        assert stored(dynamodb, "app/api") == {
            "repository": "app/api",
            "holder": "run-2",
            "expiresAt": str(int(START.timestamp()) + 901 + 600),
        }

    def test_a_second_evaluation_of_the_same_run_is_refused_while_the_lease_lasts(
        self, leases: DynamoDbLeases, clock: Clock
    ) -> None:
        # A batch's invocation that Step Functions gave up on while it still ran, and the fallback evaluating the same
        # repository: one run, two evaluations, one lease.
        assert leases.acquire("app/api", "run-1", 900)
        clock.advance(600)

        assert not leases.acquire("app/api", "run-1", 900)
        clock.advance(301)  # past the lease's end
        assert leases.acquire("app/api", "run-1", 900)

    def test_repositories_are_leased_independently(self, leases: DynamoDbLeases) -> None:
        assert leases.acquire("app/api", "run-1", 900)

        assert leases.acquire("app/web", "run-2", 900)

    def test_a_lease_of_no_time_is_a_bug(self, leases: DynamoDbLeases) -> None:
        with pytest.raises(ValueError, match="positive number of seconds, not 0"):
            leases.acquire("app/api", "run-1", 0)

    def test_a_missing_table_is_a_lease_error(self, dynamodb: Any, clock: Clock) -> None:
        with pytest.raises(LeaseError) as raised:
            DynamoDbLeases("no-such-table", dynamodb, clock=clock).acquire("app/api", "run-1", 900)

        assert str(raised.value).startswith(
            "lease table no-such-table, repository app/api: PutItem failed: ResourceNotFoundException"
        )

    def test_throttling_after_retries_is_a_lease_error_not_busy(self, dynamodb: Any, leases: DynamoDbLeases) -> None:
        fail_with(dynamodb, "PutItem", "ProvisionedThroughputExceededException")

        with pytest.raises(LeaseError, match="PutItem failed: ProvisionedThroughputExceededException"):
            leases.acquire("app/api", "run-1", 900)


class TestRelease:
    def test_the_holder_releases_and_another_may_acquire(self, dynamodb: Any, leases: DynamoDbLeases) -> None:
        assert leases.acquire("app/api", "run-1", 900)

        leases.release("app/api", "run-1")

        assert stored(dynamodb, "app/api") is None
        assert leases.acquire("app/api", "run-2", 900)

    def test_release_by_another_holder_does_nothing(self, dynamodb: Any, leases: DynamoDbLeases) -> None:
        assert leases.acquire("app/api", "run-1", 900)

        leases.release("app/api", "run-2")

        assert stored(dynamodb, "app/api") is not None
        assert not leases.acquire("app/api", "run-2", 900)

    def test_a_lease_taken_over_after_expiry_is_not_released_by_the_old_holder(
        self, dynamodb: Any, leases: DynamoDbLeases, clock: Clock
    ) -> None:
        assert leases.acquire("app/api", "run-1", 900)
        clock.advance(901)
        assert leases.acquire("app/api", "run-2", 900)

        leases.release("app/api", "run-1")  # run-1 finishes late

        assert stored(dynamodb, "app/api") == {
            "repository": "app/api",
            "holder": "run-2",
            "expiresAt": str(int(START.timestamp()) + 901 + 900),
        }

    def test_releasing_a_lease_nobody_holds_does_nothing(self, dynamodb: Any, leases: DynamoDbLeases) -> None:
        leases.release("app/api", "run-1")

        assert stored(dynamodb, "app/api") is None

    def test_a_failed_release_is_a_lease_error(self, dynamodb: Any, leases: DynamoDbLeases) -> None:
        fail_with(dynamodb, "DeleteItem", "AccessDeniedException", message="not authorized")

        with pytest.raises(LeaseError, match="DeleteItem failed: AccessDeniedException: not authorized"):
            leases.release("app/api", "run-1")
