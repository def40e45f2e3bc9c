"""Time as ECR reads it: which moment ranks an image (youngest first), and which moment a
`sinceImage*` rule ages it by."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from ecr_retention.domain.lifecycle.policy import CountType
from ecr_retention.domain.registry.images import ImageDetail

DAY = timedelta(days=1)


def ordering_time(image: ImageDetail) -> datetime:
    """Push time, or `lastActivatedAt` for an image restored from archive (restored = newly pushed)."""
    if image.last_activated_at is not None and image.last_activated_at > image.image_pushed_at:
        return image.last_activated_at
    return image.image_pushed_at


def pull_time(image: ImageDetail) -> datetime:
    """Last recorded pull; push time when never pulled; `lastActivatedAt` when restored and not pulled since."""
    pull = image.last_recorded_pull_time
    activated = image.last_activated_at
    if activated is not None and (pull is None or pull < activated):
        return activated
    return pull or image.image_pushed_at


def age_reference(image: ImageDetail, count_type: CountType) -> datetime | None:
    if count_type == "sinceImagePulled":
        return pull_time(image)
    if count_type == "sinceImageTransitioned":
        return image.last_archived_at
    return ordering_time(image)


def is_older_than(moment: datetime | None, days: int, now: datetime) -> bool:
    """Strictly more than `days` exact 24-hour periods before `now` (house convention)."""
    # No datetime is more than timedelta.max before another, and `days * DAY` would overflow past it.
    return moment is not None and days <= timedelta.max.days and now - moment > days * DAY


def rank(images: Iterable[ImageDetail]) -> list[ImageDetail]:
    """Youngest first by ordering time; equal times break by digest, ascending first."""
    by_digest = sorted(images, key=lambda image: image.image_digest)
    return sorted(by_digest, key=ordering_time, reverse=True)  # stable: ties keep digest order
