"""What the doctor reports: findings, the policy edit that fixes each, and one repository's diagnosis."""

from __future__ import annotations

from typing import Annotated, Any, Literal

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


class RepositoryDiagnosis(DoctorModel):
    repository_name: str | None = None
    findings: tuple[Finding, ...]
    in_use_checked: bool = True  # False: no in-use manifest was given, so no image was checked against one
    # Every policy edit of the findings applied together, re-checked until the doctor finds nothing left
    # that a policy edit fixes. None when no finding has an edit, or when `fixed_policy_problem` says why not.
    fixed_policy: dict[str, Any] | None = None
    fixed_policy_problem: str | None = None
    # What the doctor still finds with the fixed policy: findings that no policy edit can fix.
    fixed_policy_findings: tuple[Finding, ...] = ()
    # Registries where ECR repeats this policy's expiries (replication rules with deleteReplication).
    expiries_replicate_to: tuple[str, ...] = ()

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

    @property
    def notes(self) -> tuple[str, ...]:
        notes: tuple[str, ...] = () if self.in_use_checked else (IN_USE_SKIPPED,)
        if self.expiries_replicate_to:
            notes += (replicated_expiries_note(self.expiries_replicate_to),)
        return notes

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for finding in (*data["findings"], *data["fixedPolicyFindings"]):
            for key in ("imageTags", "inUseBy"):
                if not finding[key]:
                    del finding[key]
        if not data["fixedPolicyFindings"]:
            del data["fixedPolicyFindings"]
        data["notes"] = list(self.notes)
        data["summary"] = {severity + "s": self.count(severity) for severity in SEVERITY_ORDER}
        return data


def replicated_expiries_note(registries: tuple[str, ...]) -> str:
    return (
        f"this policy's expiries replicate to {', '.join(registries)} (deleteReplication): every image it expires "
        "is deleted there too, so the in-use check counts the clusters that pull from there"
    )


IN_USE_SKIPPED = (
    "in-use check skipped: no in-use manifest was given, so the doctor cannot tell whether the policy "
    "would remove an image that runs in a cluster (pass --manifests DIR)"
)


def _unnamed(region: str | None) -> bool:
    return region is None


class TemplateFinding(Finding):
    """A finding on a template's lifecycle policy: `prefix` names the template; `region` the Region of its registry
    when the run prunes several (each Region's registry has its own templates), left out of one Region's report."""

    prefix: str
    applied_for: tuple[str, ...] = ()
    region: str | None = Field(default=None, exclude_if=_unnamed)

    @property
    def template(self) -> str:
        """How people name the template: `ROOT`, or with its Region when the run prunes several (`us-east-1:ROOT`)."""
        return f"{self.region}:{self.prefix}" if self.region is not None else self.prefix

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for key in ("imageTags", "inUseBy"):
            if not data[key]:
                del data[key]
        return data
