"""Untagged rules next to multi-arch image indexes, whose platform and attestation children are untagged.

ECR documents that an image a manifest list references "cannot be expired or archived without the manifest list
being deleted or archived first" (LifecyclePolicies.html), and the preview never acts on a child of a live index.
So an untagged cleanup rule is kept: without it untagged images grow without bound. What the note names is what
remains: the children of an index that this policy removes go on a later run, once their index is gone, and the
children of an index whose manifest is not in the input are not known to the preview."""

from __future__ import annotations

from ecr_retention.domain.doctor.context import DoctorContext, removes
from ecr_retention.domain.doctor.models import Finding
from ecr_retention.domain.lifecycle.evaluation import index_children
from ecr_retention.domain.lifecycle.policy import LifecycleRule
from ecr_retention.domain.registry import INDEX_MEDIA_TYPES, ImageDetail

ECR_GUARANTEE = (
    'ECR documents that an image referenced by a manifest list "cannot be expired or archived without the manifest '
    'list being deleted or archived first" (docs.aws.amazon.com/AmazonECR/latest/userguide/LifecyclePolicies.html), '
    "so the children of the indexes that stay are safe"
)
KEEP_THE_RULE = (
    "nothing to change: keep {rule} (without it, untagged images grow without bound). If the children must go "
    "with their index at once, prune with ecr-retention, which deletes an index with the children no kept index "
    "references; builds with --provenance=false --sbom=false push no attestation children"
)


def check_untagged_with_multi_arch(context: DoctorContext) -> list[Finding]:
    """A note per untagged rule when the preview shows children at risk of the rule: those of an index the policy
    removes now, or those it cannot see (an index without its manifest). Nothing otherwise."""
    untagged = [r for r in context.policy.ordered_rules if r.selection.tag_status == "untagged"]
    if not untagged or not _image_indexes(context):
        return []
    orphaned = _children_of_removed_indexes(context)
    unknown = len(context.evaluation.indexes_without_manifest)
    if not orphaned and not unknown:
        return []
    return [_note(rule, orphaned, unknown) for rule in untagged]


def _image_indexes(context: DoctorContext) -> list[ImageDetail]:
    """Images that are indexes by their media type, or by a manifest in the input that lists manifests."""
    return [
        image
        for image in context.evaluation.images
        if image.image_manifest_media_type in INDEX_MEDIA_TYPES
        or "manifests" in context.manifests.get(image.image_digest, {})
    ]


def _children_of_removed_indexes(context: DoctorContext) -> dict[str, str]:
    """Child digest -> what this policy does to every index that references it, for children whose indexes
    all go now: ECR removes such a child on a later run, when a rule selects it."""
    parents, _ = index_children(context.evaluation.images, context.manifests)
    orphaned: dict[str, str] = {}
    for child, indexes in parents.items():
        actions = {context.evaluation.action_of(index) for index in indexes}
        if None not in actions and context.evaluation.action_of(child) is None:
            orphaned[child] = " or ".join(sorted(f"{removes(action)}d" for action in actions if action))
    return orphaned


def _note(rule: LifecycleRule, orphaned: dict[str, str], unknown: int) -> Finding:
    remaining: list[str] = []
    if orphaned:
        fates = " or ".join(sorted(set(orphaned.values())))
        remaining.append(
            f"{len(orphaned)} children of indexes this policy {fates} now go on a later run, once their index is "
            f"gone, under {rule.label} if it selects them then"
        )
    if unknown:
        remaining.append(
            f"{unknown} indexes have no manifest in the input, so the preview cannot tell their children from plain "
            f"untagged images (give the manifests to see them; ECR's guard still holds)"
        )
    return Finding(
        severity="info",
        code="untagged-rule-multi-arch",
        message=f"{rule.label} selects untagged images next to multi-arch image indexes: {ECR_GUARANTEE}. "
        f"What remains: {'; '.join(remaining)}",
        fix=KEEP_THE_RULE.format(rule=rule.label),
        rule_priority=rule.rule_priority,
    )
