"""Read calls of the AWS inventory collector: one place that turns a failed call (after botocore's retries) into
InventoryReadFailed naming what was being read, and a resource deleted meanwhile into "absent"."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ecr_retention.aws.errors import AwsCallFailed, describe_failure, error_code
from ecr_retention.ports import ReadFailed

T = TypeVar("T")


class InventoryReadFailed(AwsCallFailed, ReadFailed):
    """A read of the inventory failed after its retries, or answered what the collector cannot use."""


def read(operation: str, where: str, call: Callable[[], T]) -> T:
    """`call()` (one request, or a whole paginated listing); InventoryReadFailed("<where>: <Operation> failed: ...")."""
    try:
        return call()
    except (ClientError, BotoCoreError) as error:
        code, description = describe_failure(operation, error)
        raise InventoryReadFailed(f"{where}: {description}", code=code) from None


def read_unless_gone(operation: str, where: str, call: Callable[[], T], gone: Collection[str]) -> T | None:
    """As `read`, but None when AWS answers one of the `gone` error codes: the resource was deleted between
    the list that named it and this read, so there is nothing of it left to protect."""
    try:
        return call()
    except ClientError as error:
        if error_code(error) in gone:
            return None
        code, description = describe_failure(operation, error)
        raise InventoryReadFailed(f"{where}: {description}", code=code) from None
    except BotoCoreError as error:
        code, description = describe_failure(operation, error)
        raise InventoryReadFailed(f"{where}: {description}", code=code) from None
