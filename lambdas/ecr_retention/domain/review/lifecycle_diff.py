"""`ecr-retention lifecycle-diff`: what a change of a native ECR lifecycle policy changes. Both policies are evaluated
by the lifecycle simulator on the same images and time; the images whose fate changes are listed, with the
workloads that run them (the in-use manifests), so that a team keeping native policies in git reviews them as the
rules file is reviewed."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ecr_retention.domain.in_use.index import InUseIndex
from ecr_retention.domain.lifecycle.evaluation import LifecycleEvaluation, PreviewActionType, evaluate
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy
from ecr_retention.domain.planning.plan_model import PlanModel
from ecr_retention.domain.registry.images import ImageDetail
from ecr_retention.domain.timestamps import UtcDatetime


class LifecycleFate(PlanModel):
    action: PreviewActionType | None = None  # EXPIRE, TRANSITION (to archive), or None: left alone
    rule_priority: int | None = None


class LifecycleChange(PlanModel):
    image_digest: str
    image_tags: tuple[str, ...]
    image_pushed_at: UtcDatetime
    image_size_in_bytes: int | None = None
    before: LifecycleFate
    after: LifecycleFate
    running: tuple[str, ...] = ()  # `cluster/namespace/workload` of each workload that runs it

    @property
    def newly_removed(self) -> bool:
        return self.before.action is None and self.after.action is not None


class LifecycleDiff(PlanModel):
    repository_name: str | None = None
    generated_at: UtcDatetime
    changes: tuple[LifecycleChange, ...]
    # Image indexes whose manifest the inputs lack: ECR keeps the children of an index that stays, the simulator cannot
    # know which they are and treats them as ordinary images, so the figures may name children ECR would keep.
    indexes_without_manifest: tuple[str, ...] = ()
    # Why the diff cannot say which images run (no in-use manifest was read, or one could not be read), or None when
    # it can: then "no running image is newly expired" would claim what nobody checked (issue 43).
    in_use_unknown: str | None = None

    @property
    def newly_expired(self) -> list[LifecycleChange]:
        return [
            change for change in self.changes if change.after.action == "EXPIRE" and change.before.action != "EXPIRE"
        ]

    @property
    def newly_archived(self) -> list[LifecycleChange]:
        return [
            change for change in self.changes if change.after.action == "TRANSITION" and change.before.action is None
        ]

    @property
    def spared(self) -> list[LifecycleChange]:
        return [change for change in self.changes if change.after.action is None]

    @property
    def removed(self) -> list[LifecycleChange]:
        """Images the new policy expires or archives and the old one did not (or did otherwise)."""
        return [change for change in self.changes if change.after.action is not None]

    @property
    def unknown_removed(self) -> list[LifecycleChange]:
        """The images the change removes, when whether they run is unknown: none when it is known."""
        return self.removed if self.in_use_unknown is not None else []

    @property
    def running_removed(self) -> list[LifecycleChange]:
        """Images a workload runs that the new policy expires or archives and the old one did not."""
        return [change for change in self.changes if change.running and change.after.action is not None]


def diff_lifecycle(
    base: LifecyclePolicy,
    new: LifecyclePolicy,
    images: Sequence[ImageDetail],
    now: datetime,
    *,
    manifests: Mapping[str, Mapping[str, Any]] | None = None,
    repository_name: str | None = None,
    in_use: InUseIndex | None = None,
    in_use_unknown: str | None = None,
) -> LifecycleDiff:
    """`in_use_unknown`: why the in-use manifests do not tell which images run, if they do not."""
    before, after = evaluate(base, images, now, manifests), evaluate(new, images, now, manifests)
    changes = [
        _change(image, before, after, repository_name, in_use)
        for image in images
        if before.action_of(image.image_digest) != after.action_of(image.image_digest)
    ]
    changes.sort(key=lambda change: (change.after.action is None, -change.image_pushed_at.timestamp()))
    return LifecycleDiff(
        repository_name=repository_name,
        generated_at=now,
        changes=tuple(changes),
        indexes_without_manifest=before.indexes_without_manifest,
        in_use_unknown=in_use_unknown,
    )


def _fate(evaluation: LifecycleEvaluation, digest: str) -> LifecycleFate:
    verdict = evaluation.verdicts.get(digest)
    return LifecycleFate(
        action=evaluation.action_of(digest), rule_priority=verdict.rule.rule_priority if verdict else None
    )


def _change(
    image: ImageDetail,
    before: LifecycleEvaluation,
    after: LifecycleEvaluation,
    repository_name: str | None,
    in_use: InUseIndex | None,
) -> LifecycleChange:
    workloads = in_use.usages(repository_name or "", image) if in_use is not None else []
    return LifecycleChange(
        image_digest=image.image_digest,
        image_tags=image.image_tags,
        image_pushed_at=image.image_pushed_at,
        image_size_in_bytes=image.image_size_in_bytes,
        before=_fate(before, image.image_digest),
        after=_fate(after, image.image_digest),
        running=tuple(dict.fromkeys(f"{w.cluster}/{w.namespace}/{w.workload}" for w in workloads)),
    )


def _fate_parts(diff: LifecycleDiff) -> list[str]:
    """The images newly expired, newly archived and spared, those there are."""
    expired, archived, spared = diff.newly_expired, diff.newly_archived, diff.spared
    parts = []
    if expired:
        parts.append(f"expires {len(expired)} more image{'s' if len(expired) != 1 else ''}")
    if archived:
        parts.append(f"archives {len(archived)} more")
    if spared:
        parts.append(f"spares {len(spared)} that {'was' if len(spared) == 1 else 'were'} to expire or be archived")
    return parts


def lifecycle_headline(diff: LifecycleDiff) -> str:
    parts = _fate_parts(diff)
    text = "this policy change " + (" and ".join(parts) if parts else "changes no image's fate")
    running = diff.running_removed
    if diff.unknown_removed:
        return f"{text}; whether any of them runs is unknown: {diff.in_use_unknown}"
    if not running:
        return f"{text}; no running image is newly expired or archived"
    return f"{text}; {len(running)} of them run: {', '.join(running[0].running[:2])}{'...' if len(running) > 1 else ''}"
