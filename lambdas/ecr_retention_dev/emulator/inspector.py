"""Amazon Inspector's ListCoverage, which moto 5.2.5 does not implement (its inspector2 has filters, findings,
members and enable/disable only): `with InspectorCoverage() as inspector:` routes `POST /coverage/list` to moto's
inspector2 responses and answers it from the images `cover_image` and `cover_repository` declare, per account and
region, with the model's shape (`coveredResources[]`, `resourceMetadata.ecrImage.{inUseCount, lastInUseAt}`), the
request's `accountId` and `resourceType` filters, and paging by `maxResults` and `nextToken`.

Works for the in-process `mock_aws` and for a `ThreadedMotoServer` started inside the block (moto builds a service's
routes from its url_paths when the service's first request arrives). Used by `ecr-retention demo` (Inspector sees the
demo's ECS service run its image) and by the tests.
"""

from __future__ import annotations

import base64
import json
import threading
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from unittest import mock

from moto.inspector2 import urls as inspector2_urls
from moto.inspector2.responses import Inspector2Response

COVERAGE_PATH = "{0}/coverage/list$"
MAX_PAGE = 200  # ListCoverage's maxResults


@dataclass
class InspectorCoverage:
    """The covered ECR resources by (account, region), as ListCoverage answers them."""

    resources: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stack: ExitStack | None = None

    def cover_repository(
        self, account: str, region: str, name: str, *, status: str = "ACTIVE", reason: str = "SUCCESSFUL"
    ) -> None:
        self._add(
            account,
            region,
            {
                "resourceType": "AWS_ECR_REPOSITORY",
                "resourceId": f"arn:aws:ecr:{region}:{account}:repository/{name}",
                "accountId": account,
                "scanType": "PACKAGE",
                "scanStatus": {"statusCode": status, "reason": reason},
                "resourceMetadata": {"ecrRepository": {"name": name, "scanFrequency": "CONTINUOUS_SCAN"}},
            },
        )

    def cover_image(
        self,
        account: str,
        region: str,
        repository: str,
        digest: str,
        *,
        tags: tuple[str, ...] = (),
        in_use_count: int | None = None,
        last_in_use_at: datetime | None = None,
    ) -> None:
        image: dict[str, Any] = {"tags": list(tags)}
        if in_use_count is not None:
            image["inUseCount"] = in_use_count
        if last_in_use_at is not None:
            image["lastInUseAt"] = last_in_use_at.timestamp()
        self._add(
            account,
            region,
            {
                "resourceType": "AWS_ECR_CONTAINER_IMAGE",
                "resourceId": f"arn:aws:ecr:{region}:{account}:repository/{repository}/{digest}",
                "accountId": account,
                "scanType": "PACKAGE",
                "scanStatus": {"statusCode": "ACTIVE", "reason": "SUCCESSFUL"},
                "resourceMetadata": {
                    "ecrRepository": {"name": repository, "scanFrequency": "CONTINUOUS_SCAN"},
                    "ecrImage": image,
                },
            },
        )

    def _add(self, account: str, region: str, resource: dict[str, Any]) -> None:
        with self._lock:
            self.resources.setdefault((account, region), []).append(resource)

    def __enter__(self) -> InspectorCoverage:
        coverage = self

        def list_coverage(response: Inspector2Response) -> str:
            return coverage._answer(response)

        self._stack = ExitStack()
        self._stack.enter_context(
            mock.patch.dict(inspector2_urls.url_paths, {COVERAGE_PATH: Inspector2Response.dispatch})
        )
        self._stack.enter_context(mock.patch.object(Inspector2Response, "list_coverage", list_coverage, create=True))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        assert self._stack is not None
        self._stack.close()

    def _answer(self, response: Inspector2Response) -> str:
        criteria = response._get_param("filterCriteria") or {}
        with self._lock:
            found = [
                resource
                for resource in self.resources.get((response.current_account, response.region), [])
                if _matches(resource, criteria)
            ]
        token = response._get_param("nextToken")
        offset = int(json.loads(base64.b64decode(token))["offset"]) if token else 0
        size = min(int(response._get_param("maxResults") or MAX_PAGE), MAX_PAGE)
        document: dict[str, Any] = {"coveredResources": found[offset : offset + size]}
        if offset + size < len(found):
            document["nextToken"] = base64.b64encode(json.dumps({"offset": offset + size}).encode()).decode()
        return json.dumps(document)


def _matches(resource: dict[str, Any], criteria: dict[str, Any]) -> bool:
    """The EQUALS filters ListCoverage's callers here use: values of one filter OR-ed, filters AND-ed."""
    for name, key in (("accountId", "accountId"), ("resourceType", "resourceType")):
        wanted = [each["value"] for each in criteria.get(name, []) if each.get("comparison") == "EQUALS"]
        if wanted and resource[key] not in wanted:
            return False
    return True
