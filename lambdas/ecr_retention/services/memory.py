"""Update the in-use memory once per run (the report step, and `ecr-retention run` at its end): the references of the
manifests the run read, each tag reference with the digest the evaluations found its tag pointing to.

The memory only ever grows protection by itself; it is written after the evaluations, and an evaluation that reads
it while it is being replaced reads the old or the new object whole (S3 writes are atomic). A memory that cannot be
read is never overwritten: every run stays blocked until someone looks (docs/operations.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime

from ecr_retention.defects import Defect, contain
from ecr_retention.domain.config import Safety
from ecr_retention.domain.in_use.memory import ResolvedTags, reading_warnings, remember
from ecr_retention.domain.inventory.manifest import Inventory, memory_json
from ecr_retention.domain.limits import IN_USE_MEMORY, format_limit
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.reporting.report import ImageEntry, RepositoryReport
from ecr_retention.layout import IN_USE_MEMORY_KEY
from ecr_retention.ports import Bucket

logger = logging.getLogger(__name__)


def resolved_in_use_tags(reports: Iterable[RepositoryReport]) -> ResolvedTags:
    """(Region, repository, tag) -> digest for every tag of every image the evaluations found in use: the tags that
    in-use tag references name point there now (a tag names one image of its repository)."""
    return {
        (report.region, report.repository_name, tag): entry.image_digest
        for report in reports
        for entry in (*report.kept_images, *report.restored, *report.restore_failed)
        if _in_use(entry)
        for tag in entry.image_tags
    }


def _in_use(entry: ImageEntry) -> bool:
    """Kept (or restored) because a manifest names it, not by a rule."""
    return any(reason.kind == "in-use" and reason.rule is None for reason in entry.reasons)


def update_memory(
    bucket: Bucket,
    safety: Safety,
    inventory: Inventory,
    reports: Iterable[RepositoryReport],
    now: datetime,
    *,
    registries: Sequence[RegistryCoordinates],
) -> tuple[str, ...]:
    """Write the memory after this run's reading; return the run's warnings about it (a cluster that dropped most of
    its references, a memory that could not be read or written). Never raises: the run's report is worth more."""
    if not safety.in_use_grace:
        return ()
    warnings = reading_warnings(inventory.memory, inventory, now, safety.in_use_grace)
    if inventory.memory_problem is not None:
        return (*warnings, f"{inventory.memory_problem}; it was not updated, and every run stays blocked until it is")
    memory = remember(
        inventory.memory,
        inventory,
        now,
        safety.in_use_grace,
        resolved=resolved_in_use_tags(reports),
        registries=registries,
    )
    body = memory_json(memory)
    return (*warnings, *_size_warnings(body), *_written(bucket, body))


def _size_warnings(body: bytes) -> tuple[str, ...]:
    if len(body) <= IN_USE_MEMORY.max_bytes // 2:
        return ()
    # Over the cap, the next run cannot read it and is blocked.
    return (
        f"the in-use memory is {len(body) / 2**20:.1f} MiB, over half its {format_limit(IN_USE_MEMORY.max_bytes)} cap: "
        "past it, every run is blocked; shorten safety.in_use_grace or split the registry's clusters",
    )


def _written(bucket: Bucket, body: bytes) -> tuple[str, ...]:
    """The memory written, or the warning that it was not (never raised: the run's report is worth more)."""
    written = contain(lambda: bucket.write(IN_USE_MEMORY_KEY, body), log=logger, what="writing the in-use memory")
    if not isinstance(written, Defect):
        return ()
    return (
        f"the in-use memory could not be written to s3://{bucket.name}/{IN_USE_MEMORY_KEY} ({written}); "
        "it protects what it named before this run, and the next run tries again",
    )
