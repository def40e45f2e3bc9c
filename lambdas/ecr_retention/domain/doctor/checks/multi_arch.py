"""Untagged rules next to multi-arch image indexes, whose children are untagged."""

from __future__ import annotations

from ecr_retention.domain.doctor.context import DoctorContext, describe_image
from ecr_retention.domain.doctor.models import Finding, RemoveRule
from ecr_retention.domain.registry import INDEX_MEDIA_TYPES


def check_untagged_with_multi_arch(context: DoctorContext) -> list[Finding]:
    findings: list[Finding] = []
    untagged = [r for r in context.policy.ordered_rules if r.selection.tag_status == "untagged"]
    indexes = [
        image
        for image in context.evaluation.images
        if image.image_manifest_media_type in INDEX_MEDIA_TYPES
        or "manifests" in context.manifests.get(image.image_digest, {})
    ]
    if not untagged or not indexes:
        return findings
    unknown = len(context.evaluation.indexes_without_manifest)
    blind = (
        f"; {unknown} of them have no manifest in the input, so their children look like plain untagged images"
        if unknown
        else ""
    )
    for rule in untagged:
        endangered = context.endangered_without(rule)
        if endangered:
            fix = (
                f"removing {rule.label} would let a lower rule remove untagged images it keeps now, and with "
                f"them {', '.join(describe_image(image) for image in endangered[:3])}, which must stay (in use, "
                f"a mutable tag, or kept by the rules file): narrow the lower rules first, or stop using native "
                f"rules for this repository and let ecr-retention prune it (it keeps every child of a kept index)"
            )
        else:
            fix = (
                f"remove {rule.label} from the native policy (the fixed policy does) and let ecr-retention delete "
                f"untagged images (`delete: {{untagged: true, older_than: 1d}}`): it keeps every child of a "
                f"kept index; or build with --provenance=false --sbom=false to avoid attestation children"
            )
        findings.append(
            Finding(
                severity="warning",
                code="untagged-rule-multi-arch",
                message=(
                    f"{rule.label} selects untagged images in a repository with {len(indexes)} multi-arch "
                    f"image indexes, whose platform and attestation children are untagged images{blind}. ECR's "
                    f"guard applies only while the index exists, and untagged rules are reported to have "
                    f"removed children of live indexes (aws/containers-roadmap#2613)"
                ),
                fix=fix,
                rule_priority=rule.rule_priority,
                policy_edit=None if endangered else RemoveRule(rule_priority=rule.rule_priority),
            )
        )
    return findings
