"""moto's ECR made to behave like real ECR where the pipeline depends on it, and helpers that seed it.

Used by `ecr-retention demo` and by the tests (which import it through tests/support/moto_ecr.py). moto is a
development dependency: only the demo command and the tests import this module.

moto 5.2.5 gaps this module fills, by replacing methods of moto's
`ECRResponse` class for the length of a `with EcrFidelity():` block. The patch is on the class, so it holds for the
in-process `mock_aws` and for a `ThreadedMotoServer` running in the same process alike:

- Paging: DescribeImages, ListImages and DescribeRepositories honour `maxResults` (default 100, at most 1,000) and
  `nextToken`; moto returns everything in one page, so an adapter's paging would never run.
- Storage status: DescribeImages and ListImages honour `filter.imageStatus` and default to ACTIVE only, as ECR does
  (moto has no archive at all); `filter.tagStatus` is honoured by DescribeImages too. The filter applies to
  DescribeImages by `imageIds` as well: an image it hides is not found. (Whether ECR does so is not documented;
  this is the strict reading, so an adapter must send imageStatus ANY to re-read archived images.)
- UpdateImageStorageClass (not implemented by moto): ARCHIVE sets the image ARCHIVED with `lastArchivedAt`;
  STANDARD sets an archived image ACTIVATING with `lastActivatedAt`. Archiving an archived image is a no-op.
- Image details as ECR writes them: `imageSizeInBytes` is the sum of the layer sizes (moto: the config's size) and,
  for an index, the largest of its children present; `artifactMediaType` and `subjectManifestDigest` come from the
  manifest; `lastRecordedPullTime`, `imageStatus`, `lastArchivedAt`, `lastActivatedAt` are reported when set.
- BatchDeleteImage: at most 100 ids (InvalidParameterException); deleting an untagged image by digest lists it in
  `imageIds` (moto returns `imageIds: []` although it deleted it); a child still referenced by an index that is
  not deleted is refused with `ImageReferencedByManifestList` (moto deletes it). Ids are handled in request order,
  so an index listed before its children frees them within the same call. `refuse_delete` adds any other
  per-image failure (KmsError, ...).
- BatchGetImage: at most 100 ids; failures name the id asked for (moto names a tag "null"); `acceptedMediaTypes`
  is honoured: an index asked for without the index media types is resolved to its linux/amd64 (else first)
  child, under the child's digest, as ECR does; a media type not accepted otherwise fails UnsupportedImageType.
  Archived images fail ImageInaccessible (they cannot be pulled).
- PutImage: the digest is always sha256 of the manifest text (moto derives it from the layers, or at random for
  an index); an `imageDigest` that differs is ImageDigestDoesNotMatchException; in an IMMUTABLE repository a tag
  held by another image is ImageTagAlreadyExistsException (moto raises ImageAlreadyExistsException); in a mutable
  repository moving a tag leaves the image it came from untagged (moto deletes that image). An unknown
  repository is RepositoryNotFoundException.
- Repository creation templates (not implemented by moto): CreateRepositoryCreationTemplate stores a template per
  account and region (TemplateAlreadyExistsException for a prefix it has); DescribeRepositoryCreationTemplates
  answers them by prefix, with the registryId and paging of DescribeRepositories (`prefixes` narrows them).
- Faults: `throttle`/`fail` answer chosen attempts of an operation with an error response (botocore then retries
  for real; `fail(served=True)` serves the request first, so the change happens and its answer is lost), `before` runs an action right before a chosen call is served (a repository deleted mid-run, a tag
  moved between plan and delete). These are served by moto rather than raised from a botocore `before-send`
  hook on the client: botocore calls every `before-send` handler, so moto's in-process stubber would still
  execute a call that the hook answered with a throttle (a "throttled" BatchDeleteImage would delete).

`MotoEcr` seeds a registry through the ECR API like a real push (correct digests, real manifest JSON) and sets in
moto's backend what no API can: push times, last pull times, archive state.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

from moto.core.exceptions import JsonRESTError
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.core.responses import ActionResult
from moto.ecr.exceptions import ImageNotFoundException, InvalidParameterException, RepositoryNotFoundException
from moto.ecr.models import ECRBackend, Image, Repository, ecr_backends
from moto.ecr.responses import ECRResponse

__all__ = [
    "ALL_MEDIA_TYPES",
    "COSIGN_SIGNATURE_LAYER",
    "DEFAULT_PAGE",
    "DOCKER_CONFIG",
    "DOCKER_LAYER",
    "DOCKER_LIST",
    "DOCKER_MANIFEST",
    "IMAGE_MEDIA_TYPES",
    "INDEX_MEDIA_TYPES",
    "MAX_IDS",
    "MAX_PAGE",
    "OCI_CONFIG",
    "OCI_EMPTY",
    "OCI_INDEX",
    "OCI_LAYER",
    "OCI_MANIFEST",
    "SPDX",
    "EcrFidelity",
    "MotoEcr",
    "PushedImage",
    "PushedIndex",
    "cosign_signature_text",
    "image_manifest_text",
    "index_manifest_text",
    "iter_details",
    "referrer_manifest_text",
    "sha256_digest",
]

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
COSIGN_SIGNATURE_LAYER = "application/vnd.dev.cosign.simplesigning.v1+json"
SPDX = "application/spdx+json"

INDEX_MEDIA_TYPES = (OCI_INDEX, DOCKER_LIST)
IMAGE_MEDIA_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST, "application/vnd.docker.distribution.manifest.v1+json")
ALL_MEDIA_TYPES = IMAGE_MEDIA_TYPES + INDEX_MEDIA_TYPES

MAX_PAGE = 1000
DEFAULT_PAGE = 100
MAX_IDS = 100


def sha256_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# Manifests as registries store them. The text is deliberately not Python's default `json.dumps` layout (OCI:
# compact, as BuildKit writes it; Docker: three-space indent, as the Docker distribution writes it), so code that
# parses and re-serialises a manifest changes its bytes and its digest, and a test notices.


def image_manifest_text(
    seed: str, *, media_type: str = OCI_MANIFEST, layer_sizes: Sequence[int] = (31_457_280, 4_194_304, 1_048_576)
) -> str:
    docker = media_type == DOCKER_MANIFEST
    document = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "config": {
            "mediaType": DOCKER_CONFIG if docker else OCI_CONFIG,
            "digest": sha256_digest(f"config:{seed}"),
            "size": 1_400 + len(seed),
        },
        "layers": [
            {
                "mediaType": DOCKER_LAYER if docker else OCI_LAYER,
                "digest": sha256_digest(f"layer:{seed}:{n}"),
                "size": s,
            }
            for n, s in enumerate(layer_sizes)
        ],
    }
    return _layout(document, docker=docker)


def index_manifest_text(children: Sequence[tuple[PushedImage, str]], *, media_type: str = OCI_INDEX) -> str:
    """An index (or Docker manifest list) of (child, "os/architecture") entries."""
    entries = []
    for child, platform in children:
        os_name, _, architecture = platform.partition("/")
        entry: dict[str, Any] = {
            "mediaType": child.media_type,
            "digest": child.digest,
            "size": len(child.manifest.encode()),
            "platform": {"architecture": architecture, "os": os_name},
        }
        if platform == "unknown/unknown":  # a BuildKit attestation manifest
            entry["annotations"] = {
                "vnd.docker.reference.digest": children[0][0].digest,
                "vnd.docker.reference.type": "attestation-manifest",
            }
        entries.append(entry)
    return _layout(
        {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}, docker=media_type == DOCKER_LIST
    )


def cosign_signature_text(subject_digest: str) -> str:
    """A cosign signature as cosign pushes it under `sha256-<hex>.sig`: an ordinary OCI manifest, no `subject`."""
    payload = f"signature:{subject_digest}"
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": sha256_digest(f"config:{payload}"), "size": 233},
        "layers": [
            {
                "mediaType": COSIGN_SIGNATURE_LAYER,
                "digest": sha256_digest(payload),
                "size": 258,
                "annotations": {"dev.cosignproject.cosign/signature": base64.b64encode(payload.encode()).decode()},
            }
        ],
    }
    return _layout(document, docker=False)


def referrer_manifest_text(subject: PushedImage, artifact_type: str) -> str:
    """An OCI 1.1 referrer (an SBOM, a Notation signature) pointing at its subject."""
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": {"mediaType": OCI_EMPTY, "digest": sha256_digest("{}"), "size": 2},
        "layers": [{"mediaType": artifact_type, "digest": sha256_digest(f"sbom:{subject.digest}"), "size": 48_213}],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest, "size": len(subject.manifest.encode())},
    }
    return _layout(document, docker=False)


def _layout(document: dict[str, Any], *, docker: bool) -> str:
    return json.dumps(document, indent=3) if docker else json.dumps(document, separators=(",", ":"))


@dataclass(frozen=True)
class PushedImage:
    repository: str
    digest: str
    media_type: str
    manifest: str  # exactly the text pushed
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class PushedIndex:
    index: PushedImage
    children: tuple[PushedImage, ...]

    @property
    def digest(self) -> str:
        return self.index.digest


# ---------------------------------------------------------------------------------------------------------------
# Seeding


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
        _set_extra(self.image(repository, digest), last_recorded_pull_time=when)

    def archive(self, repository: str, digest: str, when: datetime) -> None:
        _set_extra(self.image(repository, digest), image_status="ARCHIVED", last_archived_at=when)

    def delete_repository(self, repository: str) -> None:
        """Gone at once, images and all (as `delete-repository --force`, without an API call to count)."""
        del self.backend.repositories[repository]

    def state(self, repositories: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
        """repository -> digest -> the detail DescribeImages reports (any status), read from the backend without an
        API call (fast, and unseen by fault injection); times as moto keeps them. Absent repositories are left out."""
        found = self.backend.repositories
        return {
            name: {image.get_image_digest(): _detail(found[name], image) for image in found[name].images}
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


# ---------------------------------------------------------------------------------------------------------------
# Fidelity and faults


@dataclass
class _Fault:
    operation: str
    code: str
    message: str
    status: int
    first: int  # 1-based number of the first attempt answered with the fault
    last: int
    served: bool = False  # the request is served (its change made) before the error answers it


@dataclass
class _Hook:
    operation: str
    call: int
    action: Callable[[], object]
    done: bool = False


@dataclass
class EcrFidelity:
    """`with EcrFidelity() as ecr:` patches moto's ECR for the block (see the module docstring).

    `served` counts the requests moto answered per operation, retries and injected faults included; count API
    calls on the client side with `support.api_calls.ApiCallRecorder`."""

    refuse_referenced_children: bool = True
    served: Counter[str] = field(default_factory=Counter)
    _faults: list[_Fault] = field(default_factory=list)
    _hooks: list[_Hook] = field(default_factory=list)
    _refusals: dict[str, tuple[str, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stack: ExitStack = field(default_factory=ExitStack)

    def throttle(self, operation: str, *, times: int = 1, after: int = 0) -> None:
        """Answer `times` requests of the operation, after the first `after` ones, with a ThrottlingException."""
        self.fail(operation, "ThrottlingException", times=times, after=after, message="Rate exceeded")

    def fail(
        self,
        operation: str,
        code: str,
        *,
        times: int = 1,
        after: int = 0,
        status: int = 400,
        message: str = "",
        served: bool = False,
    ) -> None:
        """Answer `times` requests of the operation (counted from now, after the first `after`) with an error.
        `served`: moto serves each of them first, so the change happens and the client hears an error (an answer
        lost on the way back, as a 500 or a dropped connection after ECR acted)."""
        with self._lock:
            start = self.served[operation] + after + 1
            self._faults.append(_Fault(operation, code, message or code, status, start, start + times - 1, served))

    def before(self, operation: str, action: Callable[[], object], *, call: int = 1) -> None:
        """Run `action` right before moto serves the `call`-th request of the operation from now."""
        with self._lock:
            self._hooks.append(_Hook(operation, self.served[operation] + call, action))

    def refuse_delete(self, digest: str, code: str, reason: str = "") -> None:
        """BatchDeleteImage reports this failure for the digest (and keeps the image)."""
        self._refusals[digest] = (code, reason or f"refused: {code}")

    def __enter__(self) -> EcrFidelity:
        original_call_action = ECRResponse.call_action
        fidelity = self

        def call_action(response: ECRResponse) -> Any:
            return fidelity._serve(response, original_call_action)

        replacements: dict[str, Callable[..., Any]] = {
            "call_action": call_action,
            "describe_repositories": _describe_repositories,
            "list_images": _list_images,
            "describe_images": _describe_images,
            "batch_get_image": _batch_get_image,
            "batch_delete_image": lambda response: _batch_delete_image(response, fidelity),
            "put_image": _put_image,
            "update_image_storage_class": _update_image_storage_class,
            "create_repository_creation_template": _create_repository_creation_template,
            "describe_repository_creation_templates": _describe_repository_creation_templates,
        }
        for name, function in replacements.items():
            # moto dispatches to plain functions of the class only (inspect.isfunction), so wrap lambdas.
            self._stack.enter_context(mock.patch.object(ECRResponse, name, _as_function(function), create=True))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    def _serve(self, response: ECRResponse, original: Callable[[ECRResponse], Any]) -> Any:
        operation = response._get_action()
        with self._lock:
            self.served[operation] += 1
            number = self.served[operation]
            due = [
                hook for hook in self._hooks if hook.operation == operation and hook.call == number and not hook.done
            ]
            for hook in due:
                hook.done = True
            fault = next((f for f in self._faults if f.operation == operation and f.first <= number <= f.last), None)
        for hook in due:
            hook.action()
        if fault is not None and fault.served:
            original(response)
        if fault is not None:
            body = json.dumps({"__type": fault.code, "message": fault.message})
            return fault.status, {"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": fault.code}, body
        return original(response)


def _as_function(function: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: ECRResponse) -> Any:
        return function(self)

    method.__name__ = getattr(function, "__name__", "method")
    return method


def _backend(response: ECRResponse) -> ECRBackend:
    return response.ecr_backend


def _repository(response: ECRResponse) -> Repository:
    return _backend(response)._get_repository(response._get_param("repositoryName"), response._get_param("registryId"))


def _page(response: ECRResponse, items: list[Any], scope: str) -> tuple[list[Any], str | None]:
    limit = response._get_param("maxResults")
    token = response._get_param("nextToken")
    if limit is not None and not 1 <= int(limit) <= MAX_PAGE:
        raise InvalidParameterException(
            f"Invalid parameter at 'maxResults' failed to satisfy constraint: 'Member must have value less than or "
            f"equal to {MAX_PAGE}'"
        )
    size = int(limit) if limit is not None else DEFAULT_PAGE
    offset = 0
    if token:
        try:
            state = json.loads(base64.b64decode(token))
            offset = int(state["offset"])
            valid = state["scope"] == scope
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            raise InvalidParameterException("Invalid parameter at 'nextToken' failed to satisfy constraint")
    page = items[offset : offset + size]
    more = offset + size < len(items)
    next_token = base64.b64encode(json.dumps({"scope": scope, "offset": offset + size}).encode()).decode()
    return page, next_token if more else None


def _paged(key: str, page: list[Any], next_token: str | None) -> ActionResult:
    result: dict[str, Any] = {key: page}
    if next_token is not None:
        result["nextToken"] = next_token
    return ActionResult(result)


def _set_extra(image: Image, **values: object) -> None:
    """Attributes moto's Image does not have (pull time, storage class), which `_detail` and `_status` report."""
    for name, value in values.items():
        setattr(image, name, value)


def _status(image: Image) -> str:
    return str(getattr(image, "image_status", "ACTIVE"))


def _selected(image: Image, image_filter: dict[str, str]) -> bool:
    wanted_status = image_filter.get("imageStatus", "ACTIVE")
    if wanted_status != "ANY" and _status(image) != wanted_status:
        return False
    tag_status = image_filter.get("tagStatus", "ANY")
    if tag_status == "TAGGED":
        return bool(image.image_tags)
    if tag_status == "UNTAGGED":
        return not image.image_tags
    return True


def _describe_repositories(response: ECRResponse) -> ActionResult:
    names = response._get_param("repositoryNames")
    if names and (response._get_param("maxResults") is not None or response._get_param("nextToken")):
        raise InvalidParameterException("maxResults and nextToken cannot be used with repositoryNames")
    repositories = _backend(response).describe_repositories(
        registry_id=response._get_param("registryId"), repository_names=names
    )
    page, next_token = _page(response, list(repositories), "describe_repositories")
    return _paged("repositories", page, next_token)


def _list_images(response: ECRResponse) -> ActionResult:
    repository = _repository(response)
    image_filter = response._get_param("filter") or {}
    ids: list[dict[str, str]] = []
    for image in repository.images:
        if _selected(image, image_filter):
            digest = image.get_image_digest()
            ids.extend({"imageDigest": digest, "imageTag": tag} for tag in image.image_tags)
            if not image.image_tags:
                ids.append({"imageDigest": digest})
    page, next_token = _page(response, ids, f"list_images:{repository.name}")
    return _paged("imageIds", page, next_token)


def _describe_images(response: ECRResponse) -> ActionResult:
    repository = _repository(response)
    image_filter = response._get_param("filter") or {}
    image_ids = response._get_param("imageIds")
    if not image_ids:
        selected = [image for image in repository.images if _selected(image, image_filter)]
        page, next_token = _page(response, selected, f"describe_images:{repository.name}")
        return _paged("imageDetails", [_detail(repository, image) for image in page], next_token)
    if response._get_param("maxResults") is not None or response._get_param("nextToken"):
        raise InvalidParameterException("maxResults and nextToken cannot be used with imageIds")
    _check_id_count(image_ids)
    found: list[Image] = []
    for image_id in image_ids:
        image = repository._get_image(image_id.get("imageTag"), image_id.get("imageDigest"))
        if not _selected(image, image_filter):
            raise ImageNotFoundException(
                image_id=f"{{imageDigest:'{image.get_image_digest()}', imageTag:'null'}}",
                repository_name=repository.name,
                registry_id=repository.registry_id,
            )
        if image not in found:
            found.append(image)
    return ActionResult({"imageDetails": [_detail(repository, image) for image in found]})


def _detail(repository: Repository, image: Image) -> dict[str, Any]:
    manifest = json.loads(image.image_manifest)
    detail: dict[str, Any] = {
        "registryId": repository.registry_id,
        "repositoryName": repository.name,
        "imageDigest": image.get_image_digest(),
        "imagePushedAt": image.image_pushed_at,
        "imageManifestMediaType": image.image_manifest_media_type,
        "imageStatus": _status(image),
    }
    if image.image_tags:
        detail["imageTags"] = list(image.image_tags)
    size = _size(repository, manifest)
    if size is not None:
        detail["imageSizeInBytes"] = size
    artifact_type = manifest.get("artifactType") or manifest.get("config", {}).get("mediaType")
    if artifact_type:
        detail["artifactMediaType"] = artifact_type
    subject = manifest.get("subject", {}).get("digest")
    if subject:
        detail["subjectManifestDigest"] = subject
    for attribute, key in (
        ("last_recorded_pull_time", "lastRecordedPullTime"),
        ("last_archived_at", "lastArchivedAt"),
        ("last_activated_at", "lastActivatedAt"),
    ):
        value = getattr(image, attribute, None)
        if value is not None:
            detail[key] = value
    return detail


def _size(repository: Repository, manifest: dict[str, Any]) -> int | None:
    if "layers" in manifest:
        return sum(int(layer.get("size", 0)) for layer in manifest["layers"])
    children = {entry.get("digest") for entry in manifest.get("manifests", [])}
    sizes = [
        _size(repository, json.loads(image.image_manifest))
        for image in repository.images
        if image.get_image_digest() in children
    ]
    known = [size for size in sizes if size is not None]
    return max(known) if known else None


def _check_id_count(image_ids: Sequence[Any]) -> None:
    if len(image_ids) > MAX_IDS:
        raise InvalidParameterException(
            "Invalid parameter at 'imageIds' failed to satisfy constraint: "
            f"'Member must have length less than or equal to {MAX_IDS}'"
        )


def _lookup(repository: Repository, image_id: dict[str, str]) -> Image | None:
    digest, tag = image_id.get("imageDigest"), image_id.get("imageTag")
    for image in repository.images:
        if (digest is None or image.get_image_digest() == digest) and (tag is None or tag in image.image_tags):
            return image
    return None


def _referencing_indexes(repository: Repository, digest: str) -> list[str]:
    holders = []
    for image in repository.images:
        if image.image_manifest_media_type in INDEX_MEDIA_TYPES and image.get_image_digest() != digest:
            entries = json.loads(image.image_manifest).get("manifests", [])
            if any(entry.get("digest") == digest for entry in entries):
                holders.append(image.get_image_digest())
    return holders


def _batch_get_image(response: ECRResponse) -> ActionResult:
    repository = _repository(response)
    image_ids = response._get_param("imageIds") or []
    _check_id_count(image_ids)
    accepted = response._get_param("acceptedMediaTypes") or list(IMAGE_MEDIA_TYPES)
    images, failures = [], []
    for image_id in image_ids:
        image = _lookup(repository, image_id)
        if image is None:
            failures.append(
                {"imageId": image_id, "failureCode": "ImageNotFound", "failureReason": "Requested image not found"}
            )
            continue
        if _status(image) != "ACTIVE":
            failures.append(
                {"imageId": image_id, "failureCode": "ImageInaccessible", "failureReason": "Image is archived"}
            )
            continue
        if image.image_manifest_media_type not in accepted and image.image_manifest_media_type in INDEX_MEDIA_TYPES:
            image = _platform_child(repository, image)  # what ECR does when the index types are not accepted
        if image is None or image.image_manifest_media_type not in accepted:
            failures.append(
                {"imageId": image_id, "failureCode": "UnsupportedImageType", "failureReason": "Media type not accepted"}
            )
            continue
        answered_id = {"imageDigest": image.get_image_digest()}
        if image_id.get("imageTag"):
            answered_id["imageTag"] = image_id["imageTag"]
        images.append(
            {
                "registryId": repository.registry_id,
                "repositoryName": repository.name,
                "imageId": answered_id,
                "imageManifest": image.image_manifest,
                "imageManifestMediaType": image.image_manifest_media_type,
            }
        )
    return ActionResult({"images": images, "failures": failures})


def _platform_child(repository: Repository, index: Image) -> Image | None:
    entries = json.loads(index.image_manifest).get("manifests", [])
    preferred = sorted(entries, key=lambda entry: entry.get("platform") != {"architecture": "amd64", "os": "linux"})
    for entry in preferred:
        child = _lookup(repository, {"imageDigest": entry.get("digest", "")})
        if child is not None:
            return child
    return None


def _batch_delete_image(response: ECRResponse, fidelity: EcrFidelity) -> ActionResult:
    repository = _repository(response)
    image_ids = response._get_param("imageIds") or []
    _check_id_count(image_ids)
    deleted: list[dict[str, str]] = []
    failures: list[dict[str, Any]] = []
    for image_id in image_ids:  # in request order: an index listed first frees its children for later entries
        image = _lookup(repository, image_id)
        if image is None:
            failures.append(
                {"imageId": image_id, "failureCode": "ImageNotFound", "failureReason": "Requested image not found"}
            )
            continue
        digest = image.get_image_digest()
        if digest in fidelity._refusals:
            code, reason = fidelity._refusals[digest]
            failures.append({"imageId": image_id, "failureCode": code, "failureReason": reason})
            continue
        removes_image = "imageTag" not in image_id or image.image_tags == [image_id["imageTag"]]
        holders = _referencing_indexes(repository, digest) if removes_image else []
        if holders and fidelity.refuse_referenced_children:
            failures.append(
                {
                    "imageId": image_id,
                    "failureCode": "ImageReferencedByManifestList",
                    "failureReason": f"Requested image referenced by manifest list: {holders}",
                }
            )
            continue
        if not removes_image:
            image.remove_tag(image_id["imageTag"])
            deleted.append({"imageDigest": digest, "imageTag": image_id["imageTag"]})
            continue
        repository.images.remove(image)
        deleted.extend({"imageDigest": digest, "imageTag": tag} for tag in image.image_tags)
        if not image.image_tags:
            deleted.append({"imageDigest": digest})
    return ActionResult({"imageIds": deleted, "failures": failures})


def _put_image(response: ECRResponse) -> ActionResult:
    backend = _backend(response)
    name = response._get_param("repositoryName")
    repository = backend.repositories.get(name)
    if repository is None:
        raise RepositoryNotFoundException(name, response._get_param("registryId") or backend.account_id)
    text = response._get_param("imageManifest")
    tag = response._get_param("imageTag")
    digest = sha256_digest(text)
    requested = response._get_param("imageDigest")
    if requested and requested != digest:
        raise JsonRESTError(
            "ImageDigestDoesNotMatchException",
            f"Invalid parameter at 'imageDigest' failed to satisfy constraint: the digest {requested} does not "
            f"match the digest {digest} of the manifest",
        )
    holder = next((image for image in repository.images if tag and tag in image.image_tags), None)
    if holder is not None and holder.get_image_digest() != digest:
        if repository.image_tag_mutability == "IMMUTABLE":
            raise JsonRESTError(
                "ImageTagAlreadyExistsException",
                f"The image tag '{tag}' already exists in the '{name}' repository and cannot be overwritten "
                "because the repository is immutable.",
            )
        holder.remove_tag(tag)  # the tag moves; the image it leaves stays, untagged if that was its last tag
        if not holder.image_tags:
            holder.image_tag = None  # type: ignore[assignment]  # moto's own "untagged"; typed str
    image = backend.put_image(name, text, tag, response._get_param("imageManifestMediaType"), digest)
    return ActionResult({"image": image})


def _update_image_storage_class(response: ECRResponse) -> ActionResult:
    repository = _repository(response)
    image_id = response._get_param("imageId") or {}
    image = repository._get_image(image_id.get("imageTag"), image_id.get("imageDigest"))
    target = response._get_param("targetStorageClass")
    now = datetime.now(UTC)
    if target == "ARCHIVE" and _status(image) != "ARCHIVED":
        _set_extra(image, image_status="ARCHIVED", last_archived_at=now)
    elif target == "STANDARD" and _status(image) == "ARCHIVED":
        _set_extra(image, image_status="ACTIVATING", last_activated_at=now)
    elif target not in ("ARCHIVE", "STANDARD"):
        raise InvalidParameterException(f"Invalid parameter at 'targetStorageClass': {target}")
    return ActionResult(
        {
            "registryId": repository.registry_id,
            "repositoryName": repository.name,
            "imageId": {"imageDigest": image.get_image_digest()},
            "imageStatus": _status(image),
        }
    )


def _creation_templates(backend: ECRBackend) -> dict[str, dict[str, Any]]:
    """The registry's templates by prefix, kept on moto's backend (one per account and region), so a backend reset
    forgets them as it forgets repositories."""
    templates: dict[str, dict[str, Any]] | None = getattr(backend, "fidelity_creation_templates", None)
    if templates is None:
        templates = {}
        backend.fidelity_creation_templates = templates  # type: ignore[attr-defined]
    return templates


TEMPLATE_FIELDS = (
    "description",
    "encryptionConfiguration",
    "resourceTags",
    "imageTagMutability",
    "imageTagMutabilityExclusionFilters",
    "repositoryPolicy",
    "lifecyclePolicy",
    "customRoleArn",
)


def _create_repository_creation_template(response: ECRResponse) -> ActionResult:
    backend = _backend(response)
    prefix = response._get_param("prefix")
    applied_for = response._get_param("appliedFor") or []
    if not prefix or not applied_for:
        raise InvalidParameterException("prefix and appliedFor are required")
    templates = _creation_templates(backend)
    if prefix in templates:
        raise JsonRESTError("TemplateAlreadyExistsException", f"The template with prefix '{prefix}' already exists")
    now = datetime.now(UTC)
    template: dict[str, Any] = {"prefix": prefix, "appliedFor": list(applied_for), "createdAt": now, "updatedAt": now}
    template.setdefault("imageTagMutability", "MUTABLE")
    for name in TEMPLATE_FIELDS:
        value = response._get_param(name)
        if value is not None:
            template[name] = value
    templates[prefix] = template
    return ActionResult({"registryId": backend.account_id, "repositoryCreationTemplate": template})


def _describe_repository_creation_templates(response: ECRResponse) -> ActionResult:
    """All templates by prefix (or those `prefixes` names), paged like DescribeRepositories; no registryId
    parameter: the caller's registry."""
    backend = _backend(response)
    templates = _creation_templates(backend)
    wanted = response._get_param("prefixes")
    chosen = [templates[prefix] for prefix in sorted(templates) if not wanted or prefix in wanted]
    page, next_token = _page(response, chosen, "describe_repository_creation_templates")
    result: dict[str, Any] = {"registryId": backend.account_id, "repositoryCreationTemplates": page}
    if next_token is not None:
        result["nextToken"] = next_token
    return ActionResult(result)


def iter_details(client: Any, repository: str, **extra: Any) -> Iterator[dict[str, Any]]:
    """Every image detail of a repository in any status, straight from the API (for assertions)."""
    for page in client.get_paginator("describe_images").paginate(
        repositoryName=repository, filter={"imageStatus": "ANY"}, **extra
    ):
        yield from page.get("imageDetails", [])
