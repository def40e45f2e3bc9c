"""The doctor on repository creation templates: the structural checks (checks/structural.py) on the lifecycle
policy of each template, each finding named by the template's prefix. Used by `doctor --templates FILE` and by
the pipeline's report step (services/templates.py)."""

from __future__ import annotations

from collections.abc import Iterable

from ecr_retention.domain.doctor.checks.and_lists import check_and_lists_in_text
from ecr_retention.domain.doctor.checks.self_naming import check_rules_naming_mutable_tags_in_text
from ecr_retention.domain.doctor.checks.structural import check_count_over_shared_tags, check_mutable_tags_unprotected
from ecr_retention.domain.doctor.models import SEVERITY_ORDER, Finding
from ecr_retention.domain.doctor.tag_kinds import DEFAULT_TAG_KINDS, TagKinds
from ecr_retention.domain.doctor.template_finding import TemplateFinding
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate

INVALID_FIX = (
    "check the policy with `ecr-retention lifecycle-preview`; ECR may accept what this simulator rejects. "
    "Repositories created from this template get the policy as it is"
)


def template_policy(template: RepositoryCreationTemplate, source: str = "") -> LifecyclePolicy | None:
    """The template's lifecycle policy, None when it has none. InputError names the source and the prefix."""
    if not template.has_lifecycle_policy or template.lifecycle_policy is None:
        return None
    where = f"{source}: " if source else ""
    return parse_policy(template.lifecycle_policy, f"{where}template {template.prefix}: lifecyclePolicy")


def diagnose_template(
    template: RepositoryCreationTemplate, tag_kinds: TagKinds = DEFAULT_TAG_KINDS
) -> list[TemplateFinding]:
    """Every structural finding on one template's policy: nothing without a policy, one `policy-invalid`
    finding for a policy this simulator cannot read."""
    try:
        policy = template_policy(template)
    except InputError as error:
        invalid = Finding(severity="warning", code="policy-invalid", message=str(error), fix=INVALID_FIX)
        return [_named(invalid, template)]
    if policy is None:
        return []
    findings = [
        *check_mutable_tags_unprotected(policy, template, tag_kinds),
        *check_count_over_shared_tags(policy, template, tag_kinds),
        *check_and_lists_in_text(policy),
        *check_rules_naming_mutable_tags_in_text(policy, tag_kinds),
    ]
    ordered = sorted(findings, key=lambda f: (SEVERITY_ORDER.index(f.severity), f.rule_priority or 0, f.code))
    return [_named(finding, template) for finding in ordered]


def diagnose_templates(
    templates: Iterable[RepositoryCreationTemplate], tag_kinds: TagKinds = DEFAULT_TAG_KINDS
) -> list[TemplateFinding]:
    """The findings of every template, by prefix."""
    return [
        finding
        for template in sorted(templates, key=lambda t: t.prefix)
        for finding in diagnose_template(template, tag_kinds)
    ]


def _named(finding: Finding, template: RepositoryCreationTemplate) -> TemplateFinding:
    return TemplateFinding(**dict(finding), prefix=template.prefix, applied_for=template.applied_for)
