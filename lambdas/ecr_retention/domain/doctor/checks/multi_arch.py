"""Untagged rules next to multi-arch image indexes, whose children are untagged."""

from __future__ import annotations

from collections.abc import Sequence

from ecr_retention.domain.doctor.context import DoctorContext, describe_image
from ecr_retention.domain.doctor.models import Finding, RemoveRule
from ecr_retention.domain.lifecycle.policy import LifecycleRule
from ecr_retention.domain.registry import INDEX_MEDIA_TYPES, ImageDetail


def check_untagged_with_multi_arch(context: DoctorContext) -> list[Finding]:
    untagged = [r for r in context.policy.ordered_rules if r.selection.tag_status == "untagged"]
    indexes = _image_indexes(context)
    if not untagged or not indexes:
        return []
    return [_untagged_rule(context, rule, len(indexes)) for rule in untagged]


def _image_indexes(context: DoctorContext) -> list[ImageDetail]:
    """Images that are indexes by their media type, or by a manifest in the input that lists manifests."""
    return [
        image
        for image in context.evaluation.images
        if image.image_manifest_media_type in INDEX_MEDIA_TYPES
        or "manifests" in context.manifests.get(image.image_digest, {})
    ]


def _untagged_rule(context: DoctorContext, rule: LifecycleRule, indexes: int) -> Finding:
    endangered = context.endangered_without(rule)
    return Finding(
        severity="warning",
        code="untagged-rule-multi-arch",
        message=(
            f"{rule.label} selects untagged images in a repository with {indexes} multi-arch "
            f"image indexes, whose platform and attestation children are untagged images{_blind_spot(context)}. "
            f"ECR's guard applies only while the index exists, and untagged rules are reported to have "
            f"removed children of live indexes (aws/containers-roadmap#2613)"
        ),
        fix=_narrow_lower_rules_fix(rule, endangered) if endangered else _removal_fix(rule),
        rule_priority=rule.rule_priority,
        policy_edit=None if endangered else RemoveRule(rule_priority=rule.rule_priority),
    )


def _blind_spot(context: DoctorContext) -> str:
    unknown = len(context.evaluation.indexes_without_manifest)
    if not unknown:
        return ""
    return f"; {unknown} of them have no manifest in the input, so their children look like plain untagged images"


def _narrow_lower_rules_fix(rule: LifecycleRule, endangered: Sequence[ImageDetail]) -> str:
    """Removing the rule is no fix when a lower rule would then remove what must stay."""
    return (
        f"removing {rule.label} would let a lower rule remove untagged images it keeps now, and with "
        f"them {', '.join(describe_image(image) for image in endangered[:3])}, which must stay (in use, "
        f"a mutable tag, or kept by the rules file): narrow the lower rules first, or stop using native "
        f"rules for this repository and let ecr-retention prune it (it keeps every child of a kept index)"
    )


def _removal_fix(rule: LifecycleRule) -> str:
    return (
        f"remove {rule.label} from the native policy (the fixed policy does) and let ecr-retention delete "
        f"untagged images (`delete: {{untagged: true, older_than: 1d}}`): it keeps every child of a "
        f"kept index; or build with --provenance=false --sbom=false to avoid attestation children"
    )
