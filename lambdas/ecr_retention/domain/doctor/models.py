"""What the doctor reports: findings and the policy edit that fixes each. One repository's diagnosis is in
diagnosis_model.py, a creation template's finding in template_finding.py."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ecr_retention.domain.inventory.manifest import Workload

Severity = Literal["error", "warning", "info"]
FindingCode = Literal[
    "policy-invalid",
    "expires-in-use",
    "expires-kept-image",
    "archives-in-use",
    "archives-kept-image",
    "mutable-tag-expires",
    "mutable-tag-at-risk",
    "rule-shadowed",
    "count-reduced",
    "untagged-rule-multi-arch",
    "tag-list-is-and",
    "rule-names-mutable-tag",
    "differs-from-plan",
    "plan-not-compared",
    # structural, on a policy's text alone (repository creation templates): checks/structural.py
    "mutable-tag-unprotected",
    "count-rule-shares-tags",
]
SEVERITY_ORDER: tuple[Severity, ...] = ("error", "warning", "info")


class DoctorModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class KeepTags(DoctorModel):
    """Add a keep-1 rule per tag ahead of every rule: the image carrying the tag is selected first by a rule
    that never acts on it, and a lower rule cannot act on an image that a higher rule selects."""

    kind: Literal["keep-tags"] = "keep-tags"
    tags: tuple[str, ...]

    def __str__(self) -> str:
        return "a keep-1 rule ahead of every rule for " + ", ".join(f"tag {tag}" for tag in self.tags)


class RemoveRule(DoctorModel):
    kind: Literal["remove-rule"] = "remove-rule"
    rule_priority: int

    def __str__(self) -> str:
        return f"rule {self.rule_priority} removed"


class RaiseCount(DoctorModel):
    """Raise a count rule's countNumber. `own_images` is set when the raise makes room for images that the
    rule ranks but can never act on: the fixed policy then records, in the rule's description, how many
    images of its own the rule is meant to keep, so that the added slots are not read as its own."""

    kind: Literal["raise-count"] = "raise-count"
    rule_priority: int
    count_number: int
    own_images: int | None = None

    def __str__(self) -> str:
        own = f", keeping {self.own_images} of its own images" if self.own_images is not None else ""
        return f"rule {self.rule_priority} with countNumber {self.count_number} or more{own}"


class SplitRule(DoctorModel):
    """Replace a rule whose tag list has several entries with one rule per entry, each with the same count or
    age and action: ECR selects an image for a multi-entry list only when it carries a tag for each entry (AND),
    and a list of alternatives is OR, which is several rules. The rules after it are renumbered."""

    kind: Literal["split-rule"] = "split-rule"
    rule_priority: int
    entries: tuple[str, ...]

    def __str__(self) -> str:
        return f"rule {self.rule_priority} split into one rule per entry ({', '.join(self.entries)}), renumbered"


PolicyEdit = Annotated[KeepTags | RemoveRule | RaiseCount | SplitRule, Field(discriminator="kind")]


class Finding(DoctorModel):
    severity: Severity
    code: FindingCode
    message: str
    fix: str
    rule_priority: int | None = None
    image_digest: str | None = None
    image_tags: tuple[str, ...] = ()
    in_use_by: tuple[Workload, ...] = ()
    policy_edit: PolicyEdit | None = None  # the change to the policy that fixes it; all are merged per repository
