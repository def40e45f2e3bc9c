"""What protects an image whatever the rules say: a cluster runs it (and when it is ARCHIVED, it is to be restored),
it is being restored (ACTIVATING), it is younger than min_age, or it is
a child or referrer of an image that stays (the dependents are linked here, and followed in decisions); and
the OCI referrers whose subject is gone, which go as it went."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from ecr_retention.domain.holds.protection import HoldCheck
from ecr_retention.domain.in_use.index import InUseIndex
from ecr_retention.domain.inventory.manifest import Workload
from ecr_retention.domain.planning.explain import (
    RESTORING_REASON,
    hold_reasons,
    in_use_reasons,
    min_age_reason,
    replica_reason,
    unknown_index_reason,
)
from ecr_retention.domain.planning.repository import Findings, RepositoryImages
from ecr_retention.domain.registry.images import ImageDetail, is_index

# How the report names the drift check's findings (docs/aws-inventory.md).
DRIFT_PREFIX = "drift: "
COSIGN_TAG = re.compile(r"^(sha256)-([0-9a-f]{64})\.(sig|att|sbom)$")


def apply_guards(
    images: RepositoryImages,
    findings: Findings,
    *,
    in_use: InUseIndex,
    min_age: timedelta,
    holds: HoldCheck,
    now: datetime,
) -> None:
    """In-use images, held images, images being restored and images younger than min_age are protected, in that
    order; the in-use images found ARCHIVED are noted, for the decisions to restore them (a held one is kept as it is:
    a hold keeps an image, it does not run it). `now`: when the holds are read (required with holds)."""
    name = images.name
    for image in images.ordered:
        usages = in_use.usages(name, image)
        if usages:
            _guard_in_use(image, usages, findings)
            findings.warnings.extend(drift_warnings(name, image, usages))
    if holds.live:
        for image in images.ordered:
            held = holds.of(name, image.image_digest)
            if held:
                findings.protections[image.image_digest].extend(hold_reasons(held, image.image_tags, now))
    for rank in sorted(images.activating):
        findings.protections[images.digests[rank]].append(RESTORING_REASON)
    # Newest first, the images not older than min_age are the first ranks (a future image is younger than any).
    young = bisect_right(images.ages, min_age)
    for digest, age in zip(images.digests[:young], images.ages[:young], strict=True):
        findings.protections[digest].append(min_age_reason(age, min_age))


def defer_to_sources(images: RepositoryImages, findings: Findings, replicated: Mapping[str, str]) -> None:
    """The images replicated here (digest -> the source's Region) from a registry this deployment also prunes, whose
    deletions replicate here: the source's rules decide them (SPEC "Several Regions"), so this registry's rules
    neither delete nor count them, and a deletion there is planned once, with this registry's in-use protection."""
    for digest in images.digests:
        source = replicated.get(digest)
        if source is not None:
            findings.protections[digest].append(replica_reason(source, images.name))


def _guard_in_use(image: ImageDetail, usages: list[Workload], findings: Findings) -> None:
    findings.protections[image.image_digest].extend(in_use_reasons(usages))
    findings.in_use.add(image.image_digest)
    if image.image_status == "ARCHIVED":
        findings.archived_in_use.add(image.image_digest)


def drift_warnings(repository: str, image: ImageDetail, usages: list[Workload]) -> list[str]:
    """The drift check of Inspector's reading: an image Inspector sees in use that no cluster's manifest (nor the
    in-use memory of one) names runs somewhere nothing connected to ecr-retention reads. It stays protected."""
    if any(usage.inspector is None for usage in usages):
        return []
    words = "; ".join(sorted({str(usage) for usage in usages}))
    return [
        f"{DRIFT_PREFIX}{repository}@{image.image_digest}: {words}, but no cluster's in-use manifest names it; it "
        "runs where nothing connected to ecr-retention reads (a cluster nobody connected?); kept (docs/aws-inventory.md)"
    ]


def link_dependents(images: RepositoryImages, findings: Findings) -> None:
    """Children of indexes and referrers of subjects live and die with their parents; an OCI referrer whose
    subject is gone is an orphan, and goes as its subject went. The ARCHIVED children of an in-use index are
    restored with it: a pull of the index fetches the child of its platform."""
    _link_index_children(images, findings)
    _link_referrers(images, findings)
    _restore_children_of_in_use_indexes(images, findings)


def _restore_children_of_in_use_indexes(images: RepositoryImages, findings: Findings) -> None:
    """What a pull of an in-use index fetches: its children, theirs when they are indexes too, found by walking
    down from the in-use images (once per link, whatever the nesting)."""
    children = _children_of_indexes(findings)
    pulled = set(findings.in_use)  # in use, or the child of an index in use
    waiting = [digest for digest in pulled if digest in children]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in pulled:
                pulled.add(child)
                waiting.append(child)
                if images.by_digest[child].image_status == "ARCHIVED":
                    findings.archived_in_use.add(child)


def _children_of_indexes(findings: Findings) -> dict[str, list[str]]:
    children: defaultdict[str, list[str]] = defaultdict(list)
    for child, parents in findings.parents.items():
        for parent, kind in parents:
            if kind == "index-child":
                children[parent].append(child)
    return children


def _link_index_children(images: RepositoryImages, findings: Findings) -> None:
    """Each child an index lists follows it; an index whose manifest is unknown protects every image that
    could be its child."""
    repository, by_digest = images.repository, images.by_digest
    unknown_indexes = []
    for image in images.ordered:
        if not is_index(image, repository):
            continue
        children = repository.children_of(image.image_digest)
        if children is None:
            unknown_indexes.append(image.image_digest)
            continue
        for child in children:
            if child in by_digest and child != image.image_digest:
                findings.parents[child].append((image.image_digest, "index-child"))
    if unknown_indexes:
        _protect_possible_children(images, findings, unknown_indexes)


def _protect_possible_children(images: RepositoryImages, findings: Findings, unknown_indexes: list[str]) -> None:
    """Every image that is no index could be a child of an index whose manifest is unknown."""
    reason = unknown_index_reason(unknown_indexes)
    for image in images.ordered:
        if not is_index(image, images.repository):
            findings.protections[image.image_digest].append(reason)


def _link_referrers(images: RepositoryImages, findings: Findings) -> None:
    """A referrer follows its subject. The snapshot holds every storage class, so an OCI subject it lacks was
    deleted (by a run killed between its waves, by hand, by a native lifecycle policy): the referrer is an
    orphan. A cosign tag names its subject only by convention, and COSIGN_REPOSITORY may keep signatures apart
    from their images, so a cosign signature whose subject is absent here stays an ordinary image."""
    by_digest = images.by_digest
    # The repository's tags in cosign's scheme, in one pass over them: an image that carries none is no cosign
    # signature, and its tags need no second look (most repositories have none).
    cosign_tags = frozenset(filter(COSIGN_TAG.match, images.rank_by_tag))
    for image in images.ordered:
        digest, oci_subject = image.image_digest, image.subject_manifest_digest
        if oci_subject is not None and oci_subject not in by_digest:
            findings.orphans[digest] = oci_subject
        elif oci_subject or not cosign_tags.isdisjoint(image.image_tags):
            _follow_subject(digest, oci_subject or cosign_subject(image.image_tags), images, findings)


def _follow_subject(digest: str, subject: str | None, images: RepositoryImages, findings: Findings) -> None:
    if subject and subject in images.by_digest and subject != digest:
        findings.parents[digest].append((subject, "referrer"))


def cosign_subject(tags: Iterable[str]) -> str | None:
    """cosign's tag scheme names the subject: sha256-<hex>.sig / .att / .sbom -> sha256:<hex>."""
    for tag in tags:
        match = COSIGN_TAG.match(tag)
        if match:
            return f"{match.group(1)}:{match.group(2)}"
    return None
