"""Amazon Inspector's in-use reading as the collector builds it (inspectorInUse, docs/aws-inventory.md): what
ListCoverage reports of one account and region's ECR, as an ordinary in-use manifest named `inspector-<account>-<region>`
(SPEC "Who is a cluster"). How a reader of manifests reads its entries is domain/inventory/inspector.py.

Pure: the AWS reading is aws/inspector_coverage.py, which hands over the small values defined here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from ecr_retention.domain.inventory.inspector import INSPECTOR_SOURCE
from ecr_retention.domain.inventory.manifest import InUseImage, InUseManifest
from ecr_retention.layout import INSPECTOR_NAME_PREFIX

INSPECTOR_NAMESPACE = "inspector"
INSPECTOR_CONTAINER = "image"

# arn:aws:ecr:<region>:<account>:repository/<name>/sha256:<hex>, as ListCoverage names an ECR image.
_IMAGE_ARN = re.compile(
    r"^arn:aws[a-z-]*:ecr:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):repository/(?P<repository>[a-z0-9._/-]+?)"
    r"/(?P<digest>sha256:[a-f0-9]{64})$"
)


def inspector_name(account: str, region: str) -> str:
    """The manifest's `cluster` and file name: `inspector-123456789012-eu-west-1` (a valid ClusterName)."""
    return f"{INSPECTOR_NAME_PREFIX}{account}-{region}"


@dataclass(frozen=True)
class CoveredImage:
    """One ECR image as ListCoverage reports it (resourceType AWS_ECR_CONTAINER_IMAGE)."""

    resource_id: str  # arn:aws:ecr:<region>:<account>:repository/<name>/sha256:<hex>
    repository: str | None  # resourceMetadata.ecrRepository.name
    in_use_count: int | None  # resourceMetadata.ecrImage.inUseCount
    last_in_use_at: datetime | None  # resourceMetadata.ecrImage.lastInUseAt


@dataclass(frozen=True)
class CoveredRepository:
    """One ECR repository as ListCoverage reports it (resourceType AWS_ECR_REPOSITORY)."""

    name: str
    status: str  # scanStatus.statusCode: ACTIVE or INACTIVE
    reason: str  # scanStatus.reason: SCAN_FREQUENCY_MANUAL, ACCESS_DENIED, ...


@dataclass(frozen=True)
class Coverage:
    """What ListCoverage returned for the ECR of one account and region."""

    images: tuple[CoveredImage, ...]
    repositories: tuple[CoveredRepository, ...]


def coverage_gaps(coverage: Coverage, account: str, region: str) -> list[str]:
    """Why Inspector may not see an image run here: no ECR resource covered at all (Inspector or its enhanced scanning
    is off), or repositories it does not monitor (manual scanning, excluded, access denied)."""
    where = f"Inspector in {account} {region}"
    if not coverage.images and not coverage.repositories:
        return [f"{where}: no ECR repository or image is covered; is enhanced scanning on for this registry?"]
    return [
        f"{where}: repository {repository.name} is not covered ({repository.status}, {repository.reason})"
        for repository in sorted(coverage.repositories, key=lambda repository: repository.name)
        if repository.status != "ACTIVE"
    ]


def image_reference(image: CoveredImage) -> tuple[str, str] | None:
    """(`<account>.dkr.ecr.<region>.amazonaws.com/<repository>@<digest>`, digest) of a covered image, or None when its
    resourceId is not an ECR image ARN."""
    match = _IMAGE_ARN.match(image.resource_id)
    if match is None:
        return None
    repository = image.repository or match["repository"]
    host = f"{match['account']}.dkr.ecr.{match['region']}.amazonaws.com"
    return f"{host}/{repository}@{match['digest']}", match["digest"]


def ever_in_use(image: CoveredImage) -> bool:
    """What the manifest keeps: an image Inspector counts in use now, or has seen in use at some time."""
    return bool(image.in_use_count) or image.last_in_use_at is not None


def build_inspector_manifest(
    name: str, generated_at: datetime, images: Iterable[CoveredImage], *, complete: bool
) -> tuple[InUseManifest, list[str]]:
    """The manifest of the images Inspector has seen in use, sorted (an unchanged coverage gives a byte-identical
    manifest apart from `generatedAt`), and the resourceIds that are no ECR image ARN (problems of the reading)."""
    entries: dict[tuple[str, str], InUseImage] = {}
    unreadable: list[str] = []
    for image in images:
        if not ever_in_use(image):
            continue
        reference = image_reference(image)
        if reference is None:
            unreadable.append(f"ListCoverage named {image.resource_id!r}, which is not an ECR image ARN")
            continue
        entries[reference] = InUseImage(
            image=reference[0],
            digest=reference[1],
            namespace=INSPECTOR_NAMESPACE,
            workload=f"Repository/{reference[0].split('/', 1)[1].split('@', 1)[0]}",
            container=INSPECTOR_CONTAINER,
            source=INSPECTOR_SOURCE,
            in_use_count=image.in_use_count,
            last_in_use_at=image.last_in_use_at,
        )
    manifest = InUseManifest(
        schema_version=1,
        cluster=name,
        generated_at=generated_at,
        complete=complete,
        images=tuple(entries[key] for key in sorted(entries)),
    )
    return manifest, unreadable
