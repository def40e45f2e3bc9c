"""What protects an image whatever the rules say: a cluster runs it (and when it is ARCHIVED, it is to be restored),
it is being restored (ACTIVATING), it is younger than min_age, or it is
a child or referrer of an image that stays (the dependents are linked here, and followed in decisions); and
the OCI referrers whose subject is gone, which go as it went."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from itertools import compress
from operator import attrgetter

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
from ecr_retention.domain.planning.repository import Findings, RepositoryImages, newest_first
from ecr_retention.domain.registry.digests import COSIGN_TAG, INDEX_MEDIA_TYPES, cosign_subject
from ecr_retention.domain.registry.images import ImageDetail, is_index

# How the report names the drift check's findings (docs/aws-inventory.md).
DRIFT_PREFIX = "drift: "
_COSIGN_FIRST_CHARACTERS = ("s",)  # COSIGN_TAG's first: the tags that start with another are not matched at all
_DIGEST = attrgetter("image_digest")
_SUBJECT = attrgetter("subject_manifest_digest")
_MEDIA_TYPE = attrgetter("image_manifest_media_type")


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
    for image in _maybe_in_use(images, in_use):
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


def _maybe_in_use(images: RepositoryImages, in_use: InUseIndex) -> Iterable[ImageDetail]:
    """The images an in-use reference may name, newest first: every image, or, when the index holds fewer references
    than the repository images (one large repository), only those its digests and this repository's tags name."""
    if len(in_use.by_digest) + len(in_use.by_tag) >= len(images.ordered) or not images.one_image_per_tag:
        return images.ordered
    return newest_first(map(images.by_digest.__getitem__, _named_in_use(images, in_use)))


def _named_in_use(images: RepositoryImages, in_use: InUseIndex) -> set[str]:
    """The digests of the images that the index's digests and this repository's tags name (each tag on one image)."""
    by_digest, rank_by_tag, name = images.by_digest, images.rank_by_tag, images.name
    named = {digest for digest in in_use.by_digest if digest in by_digest}
    tagged = (rank_by_tag.get(tag) for repository, tag in in_use.by_tag if repository == name)
    named.update(images.digests[rank] for rank in tagged if rank is not None)
    return named


def defer_to_sources(images: RepositoryImages, findings: Findings, replicated: Mapping[str, str]) -> None:
    """The images replicated here (digest -> the source's Region) from a registry this deployment also prunes, whose
    deletions replicate here: the source's rules decide them (SPEC "Several Regions"), so this registry's rules
    neither delete nor count them, and a deletion there is planned once, with this registry's in-use protection."""
    if not replicated:  # a registry planned alone, or one that no source replicates to
        return
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
    for image in _maybe_indexes(images):
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


def _maybe_indexes(images: RepositoryImages) -> Iterator[ImageDetail]:
    """The images that may be indexes (is_index says which are), newest first: those of an index media type and those
    the snapshot has a manifest of; found without a Python call per image, and by rank, without looking each image's
    digest up, when every image the snapshot has a manifest of is of an index media type."""
    ordered, by_digest, manifests = images.ordered, images.by_digest, images.repository.manifests
    manifested = filter(None, map(by_digest.get, manifests))  # the images the snapshot has a manifest of
    if all(map(INDEX_MEDIA_TYPES.__contains__, map(_MEDIA_TYPE, manifested))):  # the common case: by rank
        return map(ordered.__getitem__, compress(range(len(ordered)), _of_index_media_type(ordered)))
    indexes = set(compress(images.digests, _of_index_media_type(ordered)))
    indexes.update(digest for digest in manifests if digest in by_digest)
    return compress(ordered, map(indexes.__contains__, images.digests))


def _of_index_media_type(images: Iterable[ImageDetail]) -> Iterator[bool]:
    return map(INDEX_MEDIA_TYPES.__contains__, map(_MEDIA_TYPE, images))


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
    cosign_tags = frozenset(filter(COSIGN_TAG.match, images.tags_starting_with(_COSIGN_FIRST_CHARACTERS)))
    for image in _maybe_referrers(images, cosign_tags):
        digest, oci_subject = image.image_digest, image.subject_manifest_digest
        if oci_subject is not None and oci_subject not in by_digest:
            findings.orphans[digest] = oci_subject
        elif oci_subject or not cosign_tags.isdisjoint(image.image_tags):
            _follow_subject(digest, oci_subject or cosign_subject(image.image_tags), images, findings)


def _maybe_referrers(images: RepositoryImages, cosign_tags: frozenset[str]) -> Iterable[ImageDetail]:
    """The images that may be referrers, newest first: those that name an OCI subject, and those that carry a tag in
    cosign's scheme; found without a Python call per image (a subject is a digest: never empty)."""
    ordered = images.ordered
    if not cosign_tags:
        return filter(_SUBJECT, ordered)
    ranks = set(_ranks_carrying(images, cosign_tags))
    ranks.update(compress(range(len(ordered)), map(_SUBJECT, ordered)))
    return map(ordered.__getitem__, sorted(ranks))


def _ranks_carrying(images: RepositoryImages, tags: Iterable[str]) -> Iterable[int]:
    """The ranks of the images that carry one of the tags (of every image that carries it, when a tag is on several)."""
    if images.one_image_per_tag:
        return map(images.rank_by_tag.__getitem__, tags)
    wanted = frozenset(tags)
    return (rank for rank, image in enumerate(images.ordered) if not wanted.isdisjoint(image.image_tags))


def _follow_subject(digest: str, subject: str | None, images: RepositoryImages, findings: Findings) -> None:
    if subject and subject in images.by_digest and subject != digest:
        findings.parents[digest].append((subject, "referrer"))
