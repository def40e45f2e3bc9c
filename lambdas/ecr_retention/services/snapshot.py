"""Snapshot a repository (or a registry) as the planner reads it: describe-images output plus the
manifests of its image indexes, so that the children of every index are known; and the tags of the other
repositories a policy's tag_in_repositories names (`referenced_tags`).

Index manifests are read with BatchGetImage only when the manifest cache lacks them: a digest's manifest
never changes, and every BatchGetImage counts as a pull (it would refresh `lastRecordedPullTime`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES
from ecr_retention.layout import MANIFEST_CACHE_PREFIX
from ecr_retention.ports import Bucket, ImagesUnreadable, ManifestCache, Registry, RepositoryGone, StorageUnavailable

if TYPE_CHECKING:
    # Loaded where a snapshot is made: the sentinel reads index manifests through the cache here at every removal of a
    # running image, and snapshots a repository only to check a policy just put, so its cold start loads none of them.
    from ecr_retention.domain.registry.images import ImageDetail, RepositorySnapshot, Snapshot

MAX_MANIFEST_BYTES = 4 * 1024 * 1024  # ECR's own limit for one manifest
# Sorted for a stable request; both index kinds, so ECR returns the index itself and not a platform child.
INDEX_ACCEPTED_MEDIA_TYPES = tuple(sorted(INDEX_MEDIA_TYPES))
GLOB_CHARACTERS = frozenset("*?[")

logger = logging.getLogger(__name__)


class MemoryManifestCache:
    """For one CLI snapshot: nothing persists between runs."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def get(self, digest: str) -> str | None:
        return self._texts.get(digest)

    def put(self, digest: str, text: str) -> None:
        self._texts[digest] = text


class BucketManifestCache:
    """`manifests/<digest>.json` in the inventory bucket, plus what this process has already read.

    What the bucket returns is untrusted: a cached text is used only when the sha256 of its exact bytes is the
    digest it is stored under, so a corrupted or planted entry is a miss (read again from ECR where the caller reads
    misses there) instead of hiding a child, and a warning names its key. An entry over ECR's manifest limit was never
    a manifest ECR served: a miss too, never an error that would stop the evaluation or the sentinel."""

    def __init__(self, bucket: Bucket, prefix: str = MANIFEST_CACHE_PREFIX) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self._texts: dict[str, str] = {}

    def key(self, digest: str) -> str:
        return f"{self.prefix}{digest}.json"

    def get(self, digest: str) -> str | None:
        if digest in self._texts:
            return self._texts[digest]
        key = self.key(digest)
        try:
            body = self.bucket.read(key, max_bytes=MAX_MANIFEST_BYTES)
        except InputError as error:
            logger.warning("manifest cache entry %s not used (%s): read as missing", key, error)
            return None
        if body is None:
            return None
        if not digest_matches(digest, body):
            logger.warning(
                "manifest cache entry %s not used: the sha256 of its body is not %s; read as missing", key, digest
            )
            return None
        text = body.decode("utf-8")
        self._texts[digest] = text
        return text

    def put(self, digest: str, text: str) -> None:
        """A cache that cannot be written costs a BatchGetImage next time, nothing else: the bucket policy lets only the
        evaluate and sentinel roles write manifests/ (an operator's `ecr-retention run` reads it and is refused)."""
        self._texts[digest] = text
        try:
            self.bucket.write(self.key(digest), text.encode("utf-8"))
        except StorageUnavailable as error:
            logger.warning("manifest cache entry not written: %s", error)


def digest_matches(digest: str, body: bytes) -> bool:
    algorithm, _, expected = digest.partition(":")
    return algorithm == "sha256" and hashlib.sha256(body).hexdigest() == expected


def index_digests(images: Iterable[ImageDetail]) -> list[str]:
    return sorted(image.image_digest for image in images if image.image_manifest_media_type in INDEX_MEDIA_TYPES)


def read_index_manifest(digest: str, text: str) -> dict[str, Any] | None:
    """The index manifest as the snapshot holds it, or None when the text is not a usable index
    (then the planner treats the index as unknown and protects every image it could reference)."""
    if not digest_matches(digest, text.encode("utf-8")):
        return None
    try:
        manifest: Any = json.loads(text)
    except (ValueError, RecursionError):
        return None
    children = manifest.get("manifests") if isinstance(manifest, dict) else None
    if not isinstance(children, list) or not all(
        isinstance(child, dict) and isinstance(child.get("digest"), str) for child in children
    ):
        return None
    return dict(manifest)


def _cached_texts(digests: Sequence[str], cache: ManifestCache) -> tuple[dict[str, str], list[str]]:
    """The manifest texts the cache holds, by digest, and the digests it does not hold."""
    texts: dict[str, str] = {}
    missing = []
    for digest in digests:
        cached = cache.get(digest)
        if cached is not None:
            texts[digest] = cached
        else:
            missing.append(digest)
    return texts, missing


def index_manifests(
    registry: Registry, repository: str, digests: Sequence[str], cache: ManifestCache, *, read_uncached: bool = True
) -> dict[str, dict[str, Any]]:
    """`read_uncached` false: only what the cache holds (a role without BatchGetImage on the repository)."""
    texts, missing = _cached_texts(digests, cache)
    if missing and read_uncached:
        for digest, manifest in registry.get_manifests(repository, missing, INDEX_ACCEPTED_MEDIA_TYPES).items():
            if read_index_manifest(digest, manifest.text) is not None:
                cache.put(digest, manifest.text)
                texts[digest] = manifest.text
    manifests = {}
    for digest, text in texts.items():
        parsed = read_index_manifest(digest, text)
        if parsed is not None:
            manifests[digest] = parsed
    return manifests


def snapshot_repository(
    registry: Registry, repository: str, cache: ManifestCache, *, read_uncached: bool = True
) -> RepositorySnapshot:
    """Raises ports.RepositoryGone when the repository does not exist. `read_uncached` false: the index manifests the
    cache holds, and no BatchGetImage (an index whose manifest is not there has unknown children)."""
    from ecr_retention.domain.registry.images import RepositorySnapshot

    images = registry.describe_images(repository)
    _check_each_digest_once(repository, images)
    manifests = index_manifests(registry, repository, index_digests(images), cache, read_uncached=read_uncached)
    return RepositorySnapshot(repository_name=repository, image_details=tuple(images), manifests=manifests)


def _check_each_digest_once(repository: str, images: Sequence[ImageDetail]) -> None:
    """DescribeImages lists each image once; an answer listing a digest twice (a paginator repeating a page, a broken
    proxy) is not a registry this run can reason about: ImagesUnreadable, one line naming the repository and the
    digest, and the repository fails with nothing deleted in it (issue 43: pydantic's multi-line error before)."""
    from ecr_retention.domain.registry.images import first_repeated_digest

    repeated = first_repeated_digest(images)
    if repeated is not None:
        raise ImagesUnreadable(
            f"repository {repository}: DescribeImages listed image {repeated[1]} twice; an answer that "
            "lists an image twice is not read, so nothing is planned or deleted in this repository"
        )


def repository_tags(registry: Registry, repository: str) -> frozenset[str]:
    return frozenset(tag for image in registry.describe_images(repository) for tag in image.image_tags)


def select_repositories(names: Iterable[str], patterns: Sequence[str] | None) -> list[str]:
    """The repositories whose names match any pattern (every repository when no pattern is given)."""
    return sorted(name for name in names if not patterns or matches_any(name, tuple(patterns)))


def snapshot_registry(
    registry: Registry,
    cache: ManifestCache,
    *,
    patterns: Sequence[str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> Snapshot:
    """Read-only: DescribeRegistry (the replication rules), DescribeRepositories, DescribeImages and BatchGetImage
    for uncached indexes. Raises ReplicationUnreadable: a snapshot without its replication would plan deletions
    whose reach nobody knows as if they had none."""
    from ecr_retention.domain.registry.images import Snapshot

    replication = registry.replication_configuration()
    names = select_repositories(registry.repository_names(), patterns)
    repositories = []
    for number, name in enumerate(names, start=1):
        try:
            repositories.append(snapshot_repository(registry, name, cache))
        except RepositoryGone:  # deleted while we read the registry: nothing of it to snapshot
            name = f"{name} (deleted meanwhile, left out)"
        if progress is not None:
            progress(number, len(names), name)
    return Snapshot(
        registry_id=registry.registry_id,
        region=registry.region,
        replication=replication,
        repositories=tuple(repositories),
    )


def _named_repositories(registry: Registry, patterns: Sequence[str], all_names: Sequence[str] | None) -> list[str]:
    """The repositories the patterns name: plain names as they are; with a glob, the registry's names listed."""
    if all(GLOB_CHARACTERS.isdisjoint(pattern) for pattern in patterns):
        return sorted(set(patterns))
    listed = registry.repository_names() if all_names is None else all_names
    return [name for name in listed if matches_any(name, patterns)]


def referenced_tags(
    registry: Registry, config: RetentionConfig, repository: str, all_names: Sequence[str] | None = None
) -> dict[str, frozenset[str]]:
    """The tags of the other repositories that the policy's tag_in_repositories name. A name that does not
    exist stays out of the mapping, which the planner reads as "unknown" (keep rules keep, deletes select none)."""
    # The planner's names load here (the evaluations plan, so it is loaded already): the sentinel's snapshots never
    # read other repositories' tags, and its cold start loads no planner.
    from ecr_retention.domain.planning import tag_sources

    patterns = tag_sources(config, repository, registry.region)
    if not patterns:
        return {}
    tags = {}
    for name in _named_repositories(registry, patterns, all_names):
        if name == repository:
            continue
        try:
            tags[name] = repository_tags(registry, name)
        except RepositoryGone:
            continue
    return tags
