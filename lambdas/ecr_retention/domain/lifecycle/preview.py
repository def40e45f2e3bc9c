"""An evaluation as `aws ecr get-lifecycle-policy-preview` returns it, plus the referrers that ECR removes
or archives with their subject (which AWS's preview does not list)."""

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ecr_retention.domain.lifecycle.evaluation import LifecycleEvaluation, PreviewActionType, evaluate
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.timestamps import UtcDatetime


class PreviewShape(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class PreviewAction(PreviewShape):
    type: PreviewActionType
    target_storage_class: Literal["ARCHIVE"] | None = None


class PreviewResult(PreviewShape):
    image_digest: str
    image_tags: tuple[str, ...]
    image_pushed_at: UtcDatetime
    action: PreviewAction
    applied_rule_priority: int
    storage_class: Literal["STANDARD", "ARCHIVE"]


class TransitioningCount(PreviewShape):
    target_storage_class: Literal["ARCHIVE"]
    image_total_count: int


class PreviewSummary(PreviewShape):
    expiring_image_total_count: int
    transitioning_image_total_counts: tuple[TransitioningCount, ...] = ()


class CascadedReferrer(PreviewShape):
    """Not in AWS's preview: a referrer that ECR removes or archives with its subject, outside any rule."""

    image_digest: str
    image_tags: tuple[str, ...]
    subject_manifest_digest: str
    action: PreviewAction


class LifecyclePolicyPreview(PreviewShape):
    """What `aws ecr get-lifecycle-policy-preview` would return for these images, once COMPLETE."""

    registry_id: str | None = None
    repository_name: str | None = None
    lifecycle_policy_text: str | None = None
    status: Literal["COMPLETE"] = "COMPLETE"
    preview_results: tuple[PreviewResult, ...]
    summary: PreviewSummary
    cascaded_referrers: tuple[CascadedReferrer, ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        if not self.summary.transitioning_image_total_counts:
            del data["summary"]["transitioningImageTotalCounts"]
        if not self.cascaded_referrers:
            del data["cascadedReferrers"]
        return data


def _preview_action(action: PreviewActionType) -> PreviewAction:
    return PreviewAction(type=action, target_storage_class="ARCHIVE" if action == "TRANSITION" else None)


def build_preview(
    evaluation: LifecycleEvaluation,
    *,
    repository_name: str | None = None,
    registry_id: str | None = None,
    policy_text: str | None = None,
) -> LifecyclePolicyPreview:
    """previewResults in rule priority order, each rule's images oldest first (the order ECR marks them)."""
    results = _preview_results(evaluation)
    transitioning = sum(1 for result in results if result.action.type == "TRANSITION")
    return LifecyclePolicyPreview(
        registry_id=registry_id,
        repository_name=repository_name,
        lifecycle_policy_text=policy_text,
        preview_results=results,
        summary=PreviewSummary(
            expiring_image_total_count=len(results) - transitioning,
            transitioning_image_total_counts=(
                (TransitioningCount(target_storage_class="ARCHIVE", image_total_count=transitioning),)
                if transitioning
                else ()
            ),
        ),
        cascaded_referrers=_cascaded_referrers(evaluation),
    )


def _preview_results(evaluation: LifecycleEvaluation) -> tuple[PreviewResult, ...]:
    results: list[PreviewResult] = []
    for rule_evaluation in evaluation.rules:
        for image in reversed(rule_evaluation.acted):
            verdict = evaluation.verdicts[image.image_digest]
            results.append(
                PreviewResult(
                    image_digest=image.image_digest,
                    image_tags=image.image_tags,
                    image_pushed_at=image.image_pushed_at,
                    action=_preview_action(verdict.action),
                    applied_rule_priority=verdict.rule.rule_priority,
                    storage_class="ARCHIVE" if image.image_status == "ARCHIVED" else "STANDARD",
                )
            )
    return tuple(results)


def _cascaded_referrers(evaluation: LifecycleEvaluation) -> tuple[CascadedReferrer, ...]:
    by_digest = {image.image_digest: image for image in evaluation.images}
    cascaded: list[CascadedReferrer] = []
    for digest, subject in sorted(evaluation.cascaded.items()):
        action = evaluation.action_of(digest)
        assert action is not None  # a cascaded referrer always has an acted-on root subject
        cascaded.append(
            CascadedReferrer(
                image_digest=digest,
                image_tags=by_digest[digest].image_tags,
                subject_manifest_digest=subject,
                action=_preview_action(action),
            )
        )
    return tuple(cascaded)


def preview(
    policy: LifecyclePolicy,
    images: Iterable[ImageDetail],
    now: datetime,
    manifests: Mapping[str, Mapping[str, Any]] | None = None,
) -> LifecyclePolicyPreview:
    return build_preview(evaluate(policy, images, now, manifests))
