"""EcrRegistry.creation_templates against moto, whose missing DescribeRepositoryCreationTemplates and
CreateRepositoryCreationTemplate the emulator's EcrFidelity supplies (stored per account and region)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.ports import TemplatesUnreadable
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from support.api_calls import ApiCallRecorder

from .conftest import ACCOUNT, REGION

POLICY = json.dumps(
    {
        "rules": [
            {
                "rulePriority": 1,
                "description": "three version images",
                "selection": {
                    "tagStatus": "tagged",
                    "tagPatternList": ["*.*"],
                    "countType": "imageCountMoreThan",
                    "countNumber": 3,
                },
                "action": {"type": "expire"},
            }
        ]
    },
    indent=2,
)


@pytest.fixture
def seeding(fidelity: EcrFidelity) -> Any:
    return boto3.client("ecr", region_name=REGION)


def test_creation_templates_reads_every_page_without_a_registry_id(
    seeding: Any, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seeding.create_repository_creation_template(
        prefix="ROOT",
        appliedFor=["CREATE_ON_PUSH", "PULL_THROUGH_CACHE"],
        lifecyclePolicy=POLICY,
        imageTagMutability="IMMUTABLE_WITH_EXCLUSION",
        imageTagMutabilityExclusionFilters=[{"filterType": "WILDCARD", "filter": "latest"}],
        encryptionConfiguration={"encryptionType": "AES256"},
    )
    for number in range(1_001):
        seeding.create_repository_creation_template(prefix=f"team-{number:04d}", appliedFor=["REPLICATION"])

    templates = registry.creation_templates()

    assert len(templates) == 1_002
    root = next(template for template in templates if template.prefix == "ROOT")
    assert root.applied_for == ("CREATE_ON_PUSH", "PULL_THROUGH_CACHE")
    assert root.lifecycle_policy == POLICY
    assert [(f.filter_type, f.filter) for f in root.image_tag_mutability_exclusion_filters] == [("WILDCARD", "latest")]
    assert root.created_at is not None
    assert root.created_at.tzinfo is not None
    calls = recorder.of("DescribeRepositoryCreationTemplates")
    assert len(calls) == 2
    assert all(call.params["maxResults"] == 1000 and "registryId" not in call.params for call in calls)


def test_creation_templates_of_a_registry_without_templates_is_empty(registry: EcrRegistry) -> None:
    assert registry.creation_templates() == []


def test_creation_templates_access_denied_raises_templates_unreadable(
    fidelity: EcrFidelity, registry: EcrRegistry
) -> None:
    fidelity.fail("DescribeRepositoryCreationTemplates", "AccessDeniedException", message="not authorized")

    with pytest.raises(TemplatesUnreadable, match="AccessDeniedException: not authorized"):
        registry.creation_templates()


def test_creation_templates_ride_out_a_throttling_burst(
    fidelity: EcrFidelity, seeding: Any, registry: EcrRegistry
) -> None:
    seeding.create_repository_creation_template(prefix="app", appliedFor=["CREATE_ON_PUSH"])
    fidelity.throttle("DescribeRepositoryCreationTemplates", times=2)

    assert [template.prefix for template in registry.creation_templates()] == ["app"]


def test_creation_templates_of_another_account_are_refused(seeding: Any, ecr_client: Any) -> None:
    seeding.create_repository_creation_template(prefix="app", appliedFor=["CREATE_ON_PUSH"])
    other = EcrRegistry(ecr_client, "210987654321", REGION)

    with pytest.raises(TemplatesUnreadable, match=f"answered for registry {ACCOUNT}, not 210987654321"):
        other.creation_templates()


def test_moto_refuses_a_second_template_with_the_same_prefix(seeding: Any) -> None:
    seeding.create_repository_creation_template(prefix="app", appliedFor=["CREATE_ON_PUSH"])

    with pytest.raises(seeding.exceptions.ClientError, match="TemplateAlreadyExistsException"):
        seeding.create_repository_creation_template(prefix="app", appliedFor=["REPLICATION"])
