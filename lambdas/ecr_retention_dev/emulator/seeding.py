"""`MotoEcr`: one moto ECR registry seeded through the ECR API like a real push (correct digests, real manifest
JSON), with the backend edits no API offers (push times, last pull times, archive state); `iter_details` reads
image details back through the API for assertions."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ecr.models import ECRBackend, Image, ecr_backends

from ecr_retention_dev.emulator.images import image_detail, set_extra
from ecr_retention_dev.emulator.manifests import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    OCI_INDEX,
    OCI_MANIFEST,
    SPDX,
    PushedImage,
    PushedIndex,
    cosign_signature_text,
    image_manifest_text,
    index_manifest_text,
    referrer_manifest_text,
    sha256_digest,
)


class MotoEcr:
    """One moto ECR registry (an account in a region), seeded through the ECR API like a real push, with the
    backend edits no API offers. Works inside `mock_aws` and against a ThreadedMotoServer in the same process
    (give it a client with that server's endpoint): both share moto's in-process backends."""

    def __init__(self, client: Any, *, account_id: str = DEFAULT_ACCOUNT_ID) -> None:
        self.client = client
        self.account_id = account_id
        self.region: str = client.meta.region_name
        self._seeds = 0

    @property
    def backend(self) -> ECRBackend:
        return ecr_backends[self.account_id][self.region]

    def create_repository(self, name: str, *, immutable: bool = False, lifecycle_policy: str | None = None) -> str:
        self.client.create_repository(repositoryName=name, imageTagMutability="IMMUTABLE" if immutable else "MUTABLE")
        if lifecycle_policy is not None:
            self.client.put_lifecycle_policy(repositoryName=name, lifecyclePolicyText=lifecycle_policy)
        return name

    def push_image(
        self,
        repository: str,
        *tags: str,
        seed: str | None = None,
        media_type: str = OCI_MANIFEST,
        layer_sizes: Sequence[int] = (31_457_280, 4_194_304, 1_048_576),
        pushed_at: datetime | None = None,
        pulled_at: datetime | None = None,
    ) -> PushedImage:
        """A single-platform image under these tags (none: untagged)."""
        text = image_manifest_text(self._seed(seed), media_type=media_type, layer_sizes=layer_sizes)
        return self._push(repository, text, media_type, tags, pushed_at=pushed_at, pulled_at=pulled_at)

    def push_index(
        self,
        repository: str,
        *tags: str,
        seed: str | None = None,
        platforms: Sequence[str] = ("linux/amd64", "linux/arm64"),
        children: Sequence[PushedImage] = (),
        attestation: bool = False,
        docker: bool = False,
        pushed_at: datetime | None = None,
        pulled_at: datetime | None = None,
    ) -> PushedIndex:
        """A multi-platform image: its children pushed untagged first (one per platform, or the given ones, which
        lets two indexes share a child), then the index under the tags. `attestation` adds a BuildKit
        attestation manifest as a further child."""
        name = self._seed(seed)
        child_type = DOCKER_MANIFEST if docker else OCI_MANIFEST
        entries: list[tuple[PushedImage, str]] = []
        if children:
            entries = [(child, platform) for child, platform in zip(children, platforms, strict=True)]
        else:
            for platform in platforms:
                child = self.push_image(
                    repository, seed=f"{name}:{platform}", media_type=child_type, pushed_at=pushed_at
                )
                entries.append((child, platform))
        if attestation:
            proof = self.push_image(repository, seed=f"{name}:attestation", layer_sizes=(1_532,), pushed_at=pushed_at)
            entries.append((proof, "unknown/unknown"))
        media_type = DOCKER_LIST if docker else OCI_INDEX
        text = index_manifest_text(entries, media_type=media_type)
        index = self._push(repository, text, media_type, tags, pushed_at=pushed_at, pulled_at=pulled_at)
        return PushedIndex(index=index, children=tuple(child for child, _ in entries))

    def push_signature(self, repository: str, subject: PushedImage | PushedIndex, **times: Any) -> PushedImage:
        """A cosign signature under cosign's tag scheme, `sha256-<hex>.sig`."""
        digest = subject.digest
        tag = digest.replace(":", "-") + ".sig"
        return self._push(repository, cosign_signature_text(digest), OCI_MANIFEST, (tag,), **times)

    def push_referrer(
        self, repository: str, subject: PushedImage | PushedIndex, *, artifact_type: str = SPDX, **times: Any
    ) -> PushedImage:
        """An OCI 1.1 referrer (untagged, with `subject`): ECR reports its subjectManifestDigest."""
        target = subject.index if isinstance(subject, PushedIndex) else subject
        return self._push(repository, referrer_manifest_text(target, artifact_type), OCI_MANIFEST, (), **times)

    def seed_images(
        self,
        repository: str,
        count: int,
        *,
        newest: datetime = datetime(2026, 11, 30, tzinfo=UTC),
        interval: timedelta = timedelta(hours=1),
        tag_every: int = 2,
        prefix: str = "bulk",
    ) -> list[PushedImage]:
        """Many single-platform images fast, written into moto's backend directly (a put_image costs a few ms
        and grows with the repository). Digests are correct; every `tag_every`-th image is tagged `<prefix>-<n>`;
        image n was pushed `n x interval` before `newest`."""
        target = self.backend.repositories[repository]
        pushed = []
        for number in range(count):
            text = image_manifest_text(f"{repository}:{prefix}:{number}", layer_sizes=(20_000_000 + number, 1_000))
            tags = (f"{prefix}-{number}",) if tag_every and number % tag_every == 0 else ()
            image = Image(
                self.account_id,
                tags[0] if tags else None,  # type: ignore[arg-type]  # moto takes None for untagged; typed str
                text,
                repository,
                OCI_MANIFEST,
                sha256_digest(text),
            )
            image.image_pushed_at = int((newest - number * interval).timestamp())
            target.images.append(image)
            pushed.append(PushedImage(repository, sha256_digest(text), OCI_MANIFEST, text, tags))
        return pushed

    # Backend edits: what no ECR API can set.

    def image(self, repository: str, digest: str) -> Image:
        for image in self.backend.repositories[repository].images:
            if image.get_image_digest() == digest:
                return image
        raise KeyError(f"{digest} is not in {repository}")

    def set_pushed_at(self, repository: str, digest: str, when: datetime) -> None:
        self.image(repository, digest).image_pushed_at = int(when.timestamp())  # moto keeps epoch seconds

    def set_last_pull(self, repository: str, digest: str, when: datetime) -> None:
        set_extra(self.image(repository, digest), last_recorded_pull_time=when)

    def archive(self, repository: str, digest: str, when: datetime) -> None:
        set_extra(self.image(repository, digest), image_status="ARCHIVED", last_archived_at=when)

    def delete_repository(self, repository: str) -> None:
        """Gone at once, images and all (as `delete-repository --force`, without an API call to count)."""
        del self.backend.repositories[repository]

    def state(self, repositories: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
        """repository -> digest -> the detail DescribeImages reports (any status), read from the backend without an
        API call (fast, and unseen by fault injection); times as moto keeps them. Absent repositories are left out."""
        found = self.backend.repositories
        return {
            name: {image.get_image_digest(): image_detail(found[name], image) for image in found[name].images}
            for name in repositories
            if name in found
        }

    def digests(self, repository: str) -> set[str]:
        return {image.get_image_digest() for image in self.backend.repositories[repository].images}

    def tags(self, repository: str, digest: str) -> list[str]:
        return list(self.image(repository, digest).image_tags)

    def _seed(self, seed: str | None) -> str:
        self._seeds += 1
        return seed if seed is not None else f"image-{self._seeds}"

    def copy_image(self, image: PushedImage, tags: Sequence[str], *, pushed_at: datetime) -> PushedImage:
        """The same image (its manifest text, so its digest) pushed here under these tags: what ECR's replication
        leaves in a destination registry."""
        return self._push(image.repository, image.manifest, image.media_type, tags, pushed_at=pushed_at)

    def _push(
        self,
        repository: str,
        text: str,
        media_type: str,
        tags: Sequence[str],
        *,
        pushed_at: datetime | None = None,
        pulled_at: datetime | None = None,
    ) -> PushedImage:
        digest = sha256_digest(text)
        for tag in tags or (None,):
            request: dict[str, Any] = {
                "repositoryName": repository,
                "imageManifest": text,
                "imageManifestMediaType": media_type,
                "imageDigest": digest,  # always: moto's own digest is not sha256(manifest)
            }
            if tag is not None:
                request["imageTag"] = tag
            self.client.put_image(**request)
        if pushed_at is not None:
            self.set_pushed_at(repository, digest, pushed_at)
        if pulled_at is not None:
            self.set_last_pull(repository, digest, pulled_at)
        return PushedImage(repository, digest, media_type, text, tuple(tags))


def iter_details(client: Any, repository: str, **extra: Any) -> Iterator[dict[str, Any]]:
    """Every image detail of a repository in any status, straight from the API (for assertions)."""
    for page in client.get_paginator("describe_images").paginate(
        repositoryName=repository, filter={"imageStatus": "ANY"}, **extra
    ):
        yield from page.get("imageDetails", [])
