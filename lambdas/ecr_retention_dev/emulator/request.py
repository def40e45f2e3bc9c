"""What every faithful ECR operation reads of its request: the backend and repository it addresses, ECR's paging
(`maxResults` default 100, at most 1,000, an opaque `nextToken` bound to the listing it came from) and the limit on
image ids per call."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from moto.core.responses import ActionResult
from moto.ecr.exceptions import InvalidParameterException
from moto.ecr.models import ECRBackend, Repository
from moto.ecr.responses import ECRResponse

MAX_PAGE = 1000
DEFAULT_PAGE = 100
MAX_IDS = 100


def backend_of(response: ECRResponse) -> ECRBackend:
    return response.ecr_backend


def repository_of(response: ECRResponse) -> Repository:
    return backend_of(response)._get_repository(
        response._get_param("repositoryName"), response._get_param("registryId")
    )


def page_of(response: ECRResponse, items: list[Any], scope: str) -> tuple[list[Any], str | None]:
    limit = response._get_param("maxResults")
    token = response._get_param("nextToken")
    if limit is not None and not 1 <= int(limit) <= MAX_PAGE:
        raise InvalidParameterException(
            f"Invalid parameter at 'maxResults' failed to satisfy constraint: 'Member must have value less than or "
            f"equal to {MAX_PAGE}'"
        )
    size = int(limit) if limit is not None else DEFAULT_PAGE
    offset = 0
    if token:
        try:
            state = json.loads(base64.b64decode(token))
            offset = int(state["offset"])
            valid = state["scope"] == scope
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            raise InvalidParameterException("Invalid parameter at 'nextToken' failed to satisfy constraint")
    page = items[offset : offset + size]
    more = offset + size < len(items)
    next_token = base64.b64encode(json.dumps({"scope": scope, "offset": offset + size}).encode()).decode()
    return page, next_token if more else None


def paged_result(key: str, page: list[Any], next_token: str | None) -> ActionResult:
    result: dict[str, Any] = {key: page}
    if next_token is not None:
        result["nextToken"] = next_token
    return ActionResult(result)


def check_id_count(image_ids: Sequence[Any]) -> None:
    if len(image_ids) > MAX_IDS:
        raise InvalidParameterException(
            "Invalid parameter at 'imageIds' failed to satisfy constraint: "
            f"'Member must have length less than or equal to {MAX_IDS}'"
        )
