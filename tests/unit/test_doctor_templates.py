"""The doctor's structural checks on the lifecycle policies of repository creation templates (no images)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ecr_retention.domain.doctor.models import KeepTags
from ecr_retention.domain.doctor.template_finding import TemplateFinding
from ecr_retention.domain.doctor.templates import diagnose_template, diagnose_templates
from ecr_retention.domain.registry.creation_templates import CreationTemplatesDocument, RepositoryCreationTemplate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lifecycle"
INCIDENT = (EXAMPLES / "policy-incident.json").read_text()
FIXED = (EXAMPLES / "policy-fixed.json").read_text()


def rule(
    priority: int, patterns: list[str] | None, count: str = "imageCountMoreThan", number: int = 3, **extra: Any
) -> dict[str, Any]:
    selection: dict[str, Any] = {"countType": count, "countNumber": number}
    if patterns is None:
        selection["tagStatus"] = extra.pop("status", "any")
    else:
        selection |= {"tagStatus": "tagged", "tagPatternList": patterns}
    if count != "imageCountMoreThan":
        selection["countUnit"] = "days"
    return {
        "rulePriority": priority,
        "selection": selection,
        "action": {"type": extra.pop("action", "expire")},
        **extra,
    }


def policy(*rules: dict[str, Any]) -> str:
    return json.dumps({"rules": list(rules)}, indent=2)


def template(text: str | None, prefix: str = "team-a/", **extra: Any) -> RepositoryCreationTemplate:
    data: dict[str, Any] = {"prefix": prefix, "appliedFor": ["CREATE_ON_PUSH", "REPLICATION"], **extra}
    if text is not None:
        data["lifecyclePolicy"] = text
    return RepositoryCreationTemplate.model_validate(data)


def codes(findings: list[TemplateFinding]) -> list[tuple[str, int | None]]:
    return [(finding.code, finding.rule_priority) for finding in findings]


def test_seed_002_incident_policy_in_a_template_loses_mutable_tags_with_version_tags() -> None:
    [finding] = diagnose_template(template(INCIDENT))

    assert (finding.severity, finding.code, finding.rule_priority) == ("warning", "mutable-tag-unprotected", 1)
    assert finding.prefix == "team-a/"
    assert finding.applied_for == ("CREATE_ON_PUSH", "REPLICATION")
    assert finding.message.startswith("template team-a/, applied for CREATE_ON_PUSH, REPLICATION: rule 1 (tags *.*")
    assert "ECR expires images, not tags" in finding.message
    assert '"tagPatternList":["latest"]' in finding.fix


def test_seed_002_fix_with_keep_1_rules_per_mutable_tag_ahead_has_no_finding() -> None:
    assert diagnose_template(template(FIXED)) == []


def test_keep_1_rule_below_the_version_rule_does_not_protect_its_tag() -> None:
    text = policy(rule(1, ["latest"], number=1), rule(2, ["*.*"]), rule(3, ["dev"], number=1))

    [finding] = diagnose_template(template(text))

    assert codes([finding]) == [("mutable-tag-unprotected", 2)]
    assert "mutable tag dev" in finding.message
    assert finding.policy_edit == KeepTags(tags=("dev",))


def test_age_and_transition_rules_and_tag_status_any_lose_mutable_tags_too() -> None:
    text = policy(
        rule(1, ["v*"], count="sinceImagePushed", number=30),
        rule(2, ["release-*"], count="sinceImagePulled", number=60, action="transition"),
        rule(3, None, count="sinceImagePushed", number=365),
    )
    text = text.replace('"type": "transition"', '"type": "transition", "targetStorageClass": "archive"')

    findings = diagnose_template(template(text))

    assert codes(findings) == [
        ("mutable-tag-unprotected", 1),
        ("mutable-tag-unprotected", 2),
        ("mutable-tag-unprotected", 3),
    ]
    assert "ECR archives images" in findings[1].message
    assert "every image" in findings[2].message


def test_rules_that_never_select_a_build_tag_are_not_flagged() -> None:
    untagged = rule(2, None, count="sinceImagePushed", number=1, status="untagged")
    text = policy(rule(1, ["latest"], number=1), untagged)
    assert diagnose_template(template(text)) == []


def test_an_immutable_template_has_no_mutable_tag_to_lose() -> None:
    assert diagnose_template(template(INCIDENT, imageTagMutability="IMMUTABLE")) == []


def test_exclusion_filters_of_an_immutable_with_exclusion_template_name_its_mutable_tags() -> None:
    text = policy(rule(1, ["latest"], number=1), rule(2, ["*.*"]))
    filters = [{"filterType": "WILDCARD", "filter": "latest"}, {"filterType": "WILDCARD", "filter": "nightly"}]

    [finding] = diagnose_template(
        template(text, imageTagMutability="IMMUTABLE_WITH_EXCLUSION", imageTagMutabilityExclusionFilters=filters)
    )

    assert finding.policy_edit == KeepTags(tags=("nightly",))


def test_count_rule_over_tags_that_a_lower_rule_names_shares_their_images() -> None:
    text = policy(
        rule(1, ["latest"], number=1),
        rule(2, ["release-*"], number=10),
        rule(3, ["sha-*"], count="sinceImagePushed", number=90),
    )

    [finding] = diagnose_template(template(text, prefix="ROOT"))

    assert (finding.severity, finding.code, finding.rule_priority) == ("warning", "count-rule-shares-tags", 2)
    assert finding.message.startswith(
        "template ROOT (every new repository that no other template's prefix matches), applied for "
        "CREATE_ON_PUSH, REPLICATION: rule 2 (tags release-*, beyond the newest 10, expire) counts images, not tags"
    )
    assert "rule 3: sha-*" in finding.message
    assert "give rule 3 a lower rulePriority number than rule 2" in finding.fix


def test_count_rule_whose_patterns_cover_the_lower_rule_is_not_sharing() -> None:
    text = policy(
        rule(1, ["latest"], number=1), rule(2, ["*"], number=10), rule(3, ["v*"], count="sinceImagePushed", number=9)
    )
    assert diagnose_template(template(text)) == []


def test_template_without_lifecycle_policy_yields_nothing() -> None:
    assert diagnose_template(template(None)) == []
    assert diagnose_template(template("  ")) == []


def test_unparsable_template_policy_is_one_finding_naming_the_prefix() -> None:
    text = policy(rule(1, ["*.*"], count="sinceImagePushed", number=3) | {"extra": 1})

    [finding] = diagnose_template(template(text, prefix="ROOT"))

    assert (finding.code, finding.prefix) == ("policy-invalid", "ROOT")
    assert finding.message.startswith("template ROOT: lifecyclePolicy: rule 1 (rules[0]): extra: unknown key")


def test_templates_document_ignores_unknown_fields_and_orders_findings_by_prefix() -> None:
    document = CreationTemplatesDocument.model_validate(
        {
            "registryId": "123456789012",
            "repositoryCreationTemplates": [
                {"prefix": "team-b/", "appliedFor": ["PULL_THROUGH_CACHE"], "lifecyclePolicy": INCIDENT},
                {"prefix": "ROOT", "appliedFor": ["CREATE_ON_PUSH"], "lifecyclePolicy": INCIDENT, "brandNew": {"x": 1}},
                {
                    "prefix": "team-a/",
                    "appliedFor": ["CREATE_ON_PUSH"],
                    "encryptionConfiguration": {"encryptionType": "KMS"},
                },
            ],
        }
    )

    findings = diagnose_templates(document.repository_creation_templates)

    assert [finding.prefix for finding in findings] == ["ROOT", "team-b/"]
    assert findings[1].to_json_dict()["appliedFor"] == ["PULL_THROUGH_CACHE"]
    assert "imageTags" not in findings[1].to_json_dict()
