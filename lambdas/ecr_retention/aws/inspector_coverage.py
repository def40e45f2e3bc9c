"""Amazon Inspector's coverage of ECR in one account and region, read-only (ports.CoverageReader): ListCoverage of
the account's ECR repositories and images, with each image's inUseCount and lastInUseAt (inspectorInUse,
docs/aws-inventory.md). The only call, and the only action the collector's role gets for it: inspector2:ListCoverage.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ecr_retention.aws.reading import read
from ecr_retention.domain.inventory.inspector_manifest import Coverage, CoveredImage, CoveredRepository

PAGE_SIZE = 200  # the most ListCoverage returns
ECR_IMAGE = "AWS_ECR_CONTAINER_IMAGE"
ECR_REPOSITORY = "AWS_ECR_REPOSITORY"


class InspectorCoverage:
    def __init__(self, inspector_client: Any, region: str) -> None:
        self._client = inspector_client
        self._region = region

    def coverage(self, account: str) -> Coverage:
        def listed() -> list[dict[str, Any]]:
            # Several values of one filter are OR-ed: the account's repositories and images, in one listing.
            pages = self._client.get_paginator("list_coverage").paginate(
                filterCriteria={
                    "accountId": [{"comparison": "EQUALS", "value": account}],
                    "resourceType": [
                        {"comparison": "EQUALS", "value": ECR_REPOSITORY},
                        {"comparison": "EQUALS", "value": ECR_IMAGE},
                    ],
                },
                PaginationConfig={"PageSize": PAGE_SIZE},
            )
            return [resource for page in pages for resource in page.get("coveredResources", [])]

        resources = read("ListCoverage", f"Inspector in {account} {self._region}", listed)
        return Coverage(
            images=tuple(_image(resource) for resource in resources if resource.get("resourceType") == ECR_IMAGE),
            repositories=tuple(
                _repository(resource) for resource in resources if resource.get("resourceType") == ECR_REPOSITORY
            ),
        )


def _image(resource: dict[str, Any]) -> CoveredImage:
    metadata = resource.get("resourceMetadata") or {}
    image = metadata.get("ecrImage") or {}
    count = image.get("inUseCount")
    return CoveredImage(
        resource_id=str(resource["resourceId"]),
        repository=(metadata.get("ecrRepository") or {}).get("name"),
        in_use_count=count if isinstance(count, int) and count >= 0 else None,
        last_in_use_at=_utc(image.get("lastInUseAt")),
    )


def _repository(resource: dict[str, Any]) -> CoveredRepository:
    metadata = resource.get("resourceMetadata") or {}
    status = resource.get("scanStatus") or {}
    name = (metadata.get("ecrRepository") or {}).get("name") or str(resource["resourceId"]).rsplit("repository/", 1)[-1]
    return CoveredRepository(
        name=str(name), status=str(status.get("statusCode", "UNKNOWN")), reason=str(status.get("reason", "UNKNOWN"))
    )


def _utc(value: object) -> datetime | None:
    """botocore's timestamps are aware datetimes; anything else is "unknown", never "unused"."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    return None
