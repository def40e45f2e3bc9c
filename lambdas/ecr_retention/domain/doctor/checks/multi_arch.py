"""Untagged rules next to multi-arch image indexes, whose platform and attestation children are untagged.

ECR documents that an image a manifest list references "cannot be expired or archived without the manifest list
being deleted or archived first" (LifecyclePolicies.html), and the preview never acts on a child of a live index.
So an untagged cleanup rule is kept: without it untagged images grow without bound. What the note names is what
remains: the children of an index that this policy removes go on a later run, once their index is gone, and the
children of an index whose manifest is not in the input are not known to the preview."""

from __future__ import annotations

from ecr_retention.domain.doctor.context import DoctorContext
from ecr_retention.domain.doctor.models import Finding
from ecr_retention.domain.lifecycle.evaluation import index_children
from ecr_retention.domain.lifecycle.policy import LifecycleRule

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
    orphaned = _children_of_removed_indexes(context)
    unknown = len(context.evaluation.indexes_without_manifest)
    return [_note(rule, len(orphaned), unknown) for rule in untagged] if orphaned or unknown else []


def _children_of_removed_indexes(context: DoctorContext) -> list[str]:
    """The children whose every index this policy removes now, and that no rule takes now: ECR removes such a
    child on a later run, when a rule selects it."""
    parents, _ = index_children(context.evaluation.images, context.manifests)
    return [child for child, indexes in parents.items() if _goes_later(context, child, indexes)]


def _goes_later(context: DoctorContext, child: str, indexes: set[str]) -> bool:
    evaluation = context.evaluation
    return evaluation.action_of(child) is None and all(evaluation.action_of(index) is not None for index in indexes)


def _note(rule: LifecycleRule, orphaned: int, unknown: int) -> Finding:
    remaining: list[str] = []
    if orphaned:
        remaining.append(
            f"{orphaned} children of indexes this policy removes now go on a later run, once their index is gone, "
            f"under {rule.label} if it selects them then"
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
