"""Repository creation templates, which moto 5.2.5 does not implement: CreateRepositoryCreationTemplate stores a
template per account and region (TemplateAlreadyExistsException for a prefix it has);
DescribeRepositoryCreationTemplates answers them by prefix, with the registryId and the paging of
DescribeRepositories (`prefixes` narrows them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.ecr.exceptions import InvalidParameterException
from moto.ecr.models import ECRBackend
from moto.ecr.responses import ECRResponse

from ecr_retention_dev.emulator.request import backend_of, page_of


def _creation_templates(backend: ECRBackend) -> dict[str, dict[str, Any]]:
    """The registry's templates by prefix, kept on moto's backend (one per account and region), so a backend reset
    forgets them as it forgets repositories."""
    templates: dict[str, dict[str, Any]] | None = getattr(backend, "fidelity_creation_templates", None)
    if templates is None:
        templates = {}
        backend.fidelity_creation_templates = templates  # type: ignore[attr-defined]
    return templates


TEMPLATE_FIELDS = (
    "description",
    "encryptionConfiguration",
    "resourceTags",
    "imageTagMutability",
    "imageTagMutabilityExclusionFilters",
    "repositoryPolicy",
    "lifecyclePolicy",
    "customRoleArn",
)


def create_repository_creation_template(response: ECRResponse) -> ActionResult:
    backend = backend_of(response)
    prefix = response._get_param("prefix")
    applied_for = response._get_param("appliedFor") or []
    if not prefix or not applied_for:
        raise InvalidParameterException("prefix and appliedFor are required")
    templates = _creation_templates(backend)
    if prefix in templates:
        raise JsonRESTError("TemplateAlreadyExistsException", f"The template with prefix '{prefix}' already exists")
    now = datetime.now(UTC)
    template: dict[str, Any] = {"prefix": prefix, "appliedFor": list(applied_for), "createdAt": now, "updatedAt": now}
    template.setdefault("imageTagMutability", "MUTABLE")
    for name in TEMPLATE_FIELDS:
        value = response._get_param(name)
        if value is not None:
            template[name] = value
    templates[prefix] = template
    return ActionResult({"registryId": backend.account_id, "repositoryCreationTemplate": template})


def describe_repository_creation_templates(response: ECRResponse) -> ActionResult:
    """All templates by prefix (or those `prefixes` names), paged like DescribeRepositories; no registryId
    parameter: the caller's registry."""
    backend = backend_of(response)
    templates = _creation_templates(backend)
    wanted = response._get_param("prefixes")
    chosen = [templates[prefix] for prefix in sorted(templates) if not wanted or prefix in wanted]
    page, next_token = page_of(response, chosen, "describe_repository_creation_templates")
    result: dict[str, Any] = {"registryId": backend.account_id, "repositoryCreationTemplates": page}
    if next_token is not None:
        result["nextToken"] = next_token
    return ActionResult(result)
