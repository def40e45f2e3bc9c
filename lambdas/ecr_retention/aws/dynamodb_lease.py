"""Per-repository leases in one DynamoDB table (ports.LeaseStore): conditional writes, expiry in epoch seconds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from ecr_retention.aws.errors import AWS_CALL_ERRORS, AwsCallError, AwsCallFailed, describe_failure, error_code
from ecr_retention.layout import LEASE_TABLE_KEY, LEASE_TABLE_TTL_ATTRIBUTE
from ecr_retention.ports import LeaseUnavailable

# The table's schema, shared with the CDK stack and the tests: the partition key (a string) and the attribute
# holding the expiry in epoch seconds, which is also the table's TTL attribute. TTL only removes expired items
# eventually (hours, even days), so acquire compares expiresAt itself rather than relying on the item's absence.
HOLDER_ATTRIBUTE = "holder"
CONDITION_FAILED = "ConditionalCheckFailedException"

# Placeholders for every attribute name, so that no name can collide with a DynamoDB reserved word.
NAMES = {"#key": LEASE_TABLE_KEY, "#expires": LEASE_TABLE_TTL_ATTRIBUTE}
# Free or expired. Not "already ours": two evaluations of one run (a batch's invocation that Step Functions gave up on
# while it still ran, and the fallback that evaluates its repositories each alone) must keep out of each other as two
# runs do; an evaluation of this run that ended without releasing it is found by services.evaluate_step.unfinished.
ACQUIRE_CONDITION = "attribute_not_exists(#key) OR #expires < :now"


class LeaseError(AwsCallFailed, LeaseUnavailable):
    """A lease call failed for a reason other than the lease being held (after botocore's retries)."""


class DynamoDbLeases:
    """Leases through an injected boto3 DynamoDB client; `clock` is injectable so that tests can move time."""

    def __init__(
        self,
        table_name: str,
        dynamodb_client: Any,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._table_name = table_name
        self._client = dynamodb_client
        self._clock = clock

    def acquire(self, repository: str, holder: str, seconds: int) -> bool:
        if seconds <= 0:
            raise ValueError(f"a lease lasts a positive number of seconds, not {seconds}")
        now = int(self._clock().timestamp())
        try:
            self._client.put_item(
                TableName=self._table_name,
                Item={
                    LEASE_TABLE_KEY: {"S": repository},
                    HOLDER_ATTRIBUTE: {"S": holder},
                    LEASE_TABLE_TTL_ATTRIBUTE: {"N": str(now + seconds)},
                },
                ConditionExpression=ACQUIRE_CONDITION,
                ExpressionAttributeNames=NAMES,
                ExpressionAttributeValues={":now": {"N": str(now)}},
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise self._failure("PutItem", repository, error) from None
        except AWS_CALL_ERRORS as error:
            raise self._failure("PutItem", repository, error) from None
        return True

    def release(self, repository: str, holder: str) -> None:
        """Deletes the lease only while this holder has it: once it expired and another holder took it over,
        the other holder's lease stays."""
        try:
            self._client.delete_item(
                TableName=self._table_name,
                Key={LEASE_TABLE_KEY: {"S": repository}},
                ConditionExpression="#holder = :holder",
                ExpressionAttributeNames={"#holder": HOLDER_ATTRIBUTE},
                ExpressionAttributeValues={":holder": {"S": holder}},
            )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise self._failure("DeleteItem", repository, error) from None
        except AWS_CALL_ERRORS as error:
            raise self._failure("DeleteItem", repository, error) from None

    def holder(self, repository: str) -> str | None:
        """A strongly consistent GetItem: a lease this run took a moment ago in another invocation is seen."""
        try:
            found = self._client.get_item(
                TableName=self._table_name,
                Key={LEASE_TABLE_KEY: {"S": repository}},
                ConsistentRead=True,
                ProjectionExpression="#holder",
                ExpressionAttributeNames={"#holder": HOLDER_ATTRIBUTE},
            )
        except AWS_CALL_ERRORS as error:
            raise self._failure("GetItem", repository, error) from None
        holder = found.get("Item", {}).get(HOLDER_ATTRIBUTE, {}).get("S")
        return holder if isinstance(holder, str) else None

    def _failure(self, operation: str, repository: str, error: AwsCallError) -> LeaseError:
        code, description = describe_failure(operation, error)
        return LeaseError(f"lease table {self._table_name}, repository {repository}: {description}", code=code)
