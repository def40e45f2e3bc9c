"""Repository creation templates: what `aws ecr describe-repository-creation-templates` returns.

A template gives the settings (lifecycle policy, tag mutability, encryption, ...) of repositories that ECR creates
itself: on the first push to a name that does not exist (`CREATE_ON_PUSH`), for a replication destination
(`REPLICATION`) or for a pull-through cache (`PULL_THROUGH_CACHE`). It applies to new repositories whose names
begin with its prefix; the prefix `ROOT` applies to every repository that no other template matches. It never
changes a repository that exists already.
"""

from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from ecr_retention.domain.aws_shape import AwsShape
from ecr_retention.domain.timestamps import UtcDatetime

ROOT_PREFIX = "ROOT"


class MutabilityExclusionFilter(AwsShape):
    filter_type: str
    filter: str


class RepositoryCreationTemplate(AwsShape):
    """One template. `lifecyclePolicy` is the policy JSON as text, as in `get-lifecycle-policy`."""

    prefix: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    description: str | None = None
    applied_for: tuple[str, ...] = ()
    lifecycle_policy: str | None = None
    image_tag_mutability: str | None = None
    image_tag_mutability_exclusion_filters: tuple[MutabilityExclusionFilter, ...] = ()
    custom_role_arn: str | None = None
    created_at: UtcDatetime | None = None
    updated_at: UtcDatetime | None = None

    @field_validator("applied_for", "image_tag_mutability_exclusion_filters", mode="before")
    @classmethod
    def _lists_may_be_null(cls, value: object) -> object:
        return () if value is None else value

    @property
    def has_lifecycle_policy(self) -> bool:
        return bool(self.lifecycle_policy and self.lifecycle_policy.strip())

    @property
    def label(self) -> str:
        """How findings name the template: by its prefix, and what ROOT means."""
        if self.prefix == ROOT_PREFIX:
            return "template ROOT (every new repository that no other template's prefix matches)"
        return f"template {self.prefix}"

    @property
    def applied_for_text(self) -> str:
        return ", ".join(self.applied_for) if self.applied_for else "nothing (appliedFor is empty)"


class CreationTemplatesDocument(AwsShape):
    """`aws ecr describe-repository-creation-templates` output (all pages joined, as the CLI prints it)."""

    registry_id: str | None = None
    repository_creation_templates: tuple[RepositoryCreationTemplate, ...] = Field(default=())
