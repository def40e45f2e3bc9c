"""Amazon Inspector's in-use reading (inspectorInUse, docs/aws-inventory.md): what Inspector's enhanced scanning saw
run in ECS tasks and EKS pods, per ECR image of one account and region, as an ordinary in-use manifest named
`inspector-<account>-<region>` (SPEC "Who is a cluster").

An image is in use by Inspector's word when `inUseCount` > 0, or when `lastInUseAt` is within safety.in_use_grace of
the run's clock (exactly the grace ago still is, one second more is not, as every duration here). A missing
`lastInUseAt` means "unknown", never "unused": Inspector only adds protection, it never removes any.

Pure. Here: how every reader of manifests reads an Inspector entry. What the collector builds the manifest from
(ListCoverage's values, which aws/inspector_coverage.py hands over) is domain/inventory/inspector_manifest.py, apart,
so that the functions that only read manifests build none of its classes at their cold start.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from ecr_retention.domain.inventory.manifest import InUseImage

INSPECTOR_SOURCE: Final = "inspector"


def in_use_since(entry: InUseImage, generated_at: datetime) -> datetime | None:
    """When an entry was last known in use: its manifest's reading for an entry of any other source, and for an
    Inspector entry the reading when Inspector counted it in use, else its lastInUseAt; None when Inspector says
    neither (it protects nothing)."""
    if entry.source != INSPECTOR_SOURCE or entry.in_use_count:
        return generated_at
    return entry.last_in_use_at


def in_use_at(entry: InUseImage, generated_at: datetime, now: datetime, grace: timedelta) -> bool:
    """Whether an entry protects its image at `now`: every entry of another source does; an Inspector entry when
    Inspector counts it in use, or saw it in use no longer than the grace ago."""
    since = in_use_since(entry, generated_at)
    if since is None:
        return False
    return entry.source != INSPECTOR_SOURCE or bool(entry.in_use_count) or not now - since > grace


def inspector_words(entry: InUseImage) -> str:
    """How a reason names Inspector's reading: `Inspector: in use by 2 (last 2026-12-04 10:12 UTC)`."""
    last = f"last {_minute(entry.last_in_use_at)}" if entry.last_in_use_at is not None else "last in use unknown"
    if entry.in_use_count:
        return f"Inspector: in use by {entry.in_use_count} ({last})"
    return f"Inspector: {last}, within safety.in_use_grace"


def _minute(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
