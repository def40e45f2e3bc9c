"""ports.Registry over Amazon ECR: one boto3 ECR client, batch calls wherever ECR has them, every failure read.

Facts this relies on (the ECR API reference and the botocore model):
- DescribeImages returns only ACTIVE images unless `filter.imageStatus` says otherwise; we always send ANY.
- DescribeImages by `imageIds` takes 100 ids and fails as a whole (ImageNotFoundException) when one is missing.
- BatchGetImage resolves an index to one platform's manifest unless the index media types are accepted.
- BatchDeleteImage takes 100 ids and reports per image in `imageIds` (deleted) and `failures[]`.
- UpdateImageStorageClass has no batch form; to STANDARD it starts a restore (ACTIVATING, ACTIVE within ~20 minutes).
- DescribeRepositoryCreationTemplates has no registryId parameter (the caller's registry) and supports no
  resource-level permissions (IAM resource "*").
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError
from pydantic import ValidationError

from ecr_retention.aws.errors import AWS_CALL_ERRORS, AwsCallFailed, describe_failure, error_code, error_message
from ecr_retention.domain.errors import describe_validation_error
from ecr_retention.domain.registry.replication import ReplicationConfiguration
from ecr_retention.ports import (
    BatchOutcome,
    ImageFailure,
    ImageId,
    ImageManifest,
    ImagesUnreadable,
    ReplicationUnreadable,
    RepositoriesUnlistable,
    RepositoryGone,
    TagOutcome,
    TemplatesUnreadable,
)

if TYPE_CHECKING:
    # The models load where the calls that answer them are made: the targets step lists repositories and reads the
    # replication rules, and only the report step reads creation templates.
    from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
    from ecr_retention.domain.registry.images import ImageDetail

logger = logging.getLogger(__name__)

Item = TypeVar("Item")

PAGE_SIZE = 1000  # DescribeImages, DescribeRepositories and DescribeRepositoryCreationTemplates maximum
BATCH_SIZE = 100  # imageIds per DescribeImages, BatchGetImage and BatchDeleteImage call
ANY_STATUS = {"imageStatus": "ANY"}  # archived and activating images too

# What a digest is reported as when no call was made for it (an earlier call failed) or when ECR's answer
# names it neither as deleted nor as failed.
NOT_ATTEMPTED = "NotAttempted"
NOT_CONFIRMED = "NotConfirmed"

# UpdateImageStorageClass errors about the one image asked for. Any other error is about the call (throttling
# after the retries, access, network) and stops the remaining images, as a failed batch call does.
IMAGE_LEVEL_ARCHIVE_ERRORS = frozenset(
    {"ImageStorageClassUpdateNotSupportedException", "InvalidParameterException", "ValidationException"}
)


class ListingFailed(RepositoriesUnlistable, AwsCallFailed):
    """DescribeRepositories failed after its retries: the services report the Region (RepositoriesUnlistable); a
    command that lists one registry says it in one line (AwsCallFailed)."""


class EcrRegistry:
    """One registry (an account in a region) through one ECR client. Every request names the registry id, so
    this adapter never reads or changes another account's repositories."""

    def __init__(self, ecr_client: Any, registry_id: str, region: str) -> None:
        self._ecr = ecr_client
        self._registry_id = registry_id
        self._region = region

    @property
    def registry_id(self) -> str:
        return self._registry_id

    @property
    def region(self) -> str:
        return self._region

    def repository_names(self) -> list[str]:
        pages = self._ecr.get_paginator("describe_repositories").paginate(
            registryId=self._registry_id, PaginationConfig={"PageSize": PAGE_SIZE}
        )
        try:
            return [repository["repositoryName"] for page in pages for repository in page.get("repositories", [])]
        except AWS_CALL_ERRORS as error:
            code, message = describe_failure("DescribeRepositories", error)
            raise ListingFailed(message, code=code) from None

    def describe_images(self, repository: str) -> list[ImageDetail]:
        from ecr_retention.domain.registry.images import ImageDetail

        pages = self._ecr.get_paginator("describe_images").paginate(
            registryId=self._registry_id,
            repositoryName=repository,
            filter=ANY_STATUS,
            PaginationConfig={"PageSize": PAGE_SIZE},
        )
        try:
            return [ImageDetail.model_validate(detail) for page in pages for detail in page.get("imageDetails", [])]
        except ClientError as error:
            _raise_if_gone(error, repository)
            raise

    def describe_image_ids(self, repository: str, digests: Sequence[str]) -> dict[str, ImageDetail]:
        """Re-read these images now, 100 a call, archived ones included (describe_images_by_id, by digest)."""
        ids = [{"imageDigest": digest} for digest in _unique(digests)]
        return {detail.image_digest: detail for detail in self._describe_ids(repository, ids)}

    def describe_images_by_id(self, repository: str, image_ids: Sequence[ImageId]) -> list[ImageDetail]:
        """The images that answer these ids (digests or tags), 100 ids a call. Every failure but a missing repository
        raises ImagesUnreadable: the caller (the run's in-use check) only reports it."""
        ids = list({tuple(sorted(image_id.items())): dict(image_id) for image_id in image_ids}.values())
        try:
            return self._describe_ids(repository, ids)
        except AWS_CALL_ERRORS as error:
            _, message = describe_failure("DescribeImages", error)
            raise ImagesUnreadable(f"repository {repository}: {message}") from None
        except ValidationError as error:
            detail = describe_validation_error(error)
            raise ImagesUnreadable(
                f"repository {repository}: DescribeImages answered what cannot be read: {detail}"
            ) from None

    def _describe_ids(self, repository: str, image_ids: list[dict[str, str]]) -> list[ImageDetail]:
        """DescribeImages fails as a whole when one of the ids answers nothing, so such a batch is split in halves
        until the missing ids are alone: one call a batch when nothing is missing, about 2 x log2(100) more for
        each missing image. An image two ids name (its digest and its tag) is listed once."""
        found: dict[str, ImageDetail] = {}
        for batch in _batches(image_ids):
            for detail in self._describe_existing(repository, batch):
                found[detail.image_digest] = detail
        return list(found.values())

    def _describe_existing(self, repository: str, image_ids: list[dict[str, str]]) -> list[ImageDetail]:
        try:
            response = self._ecr.describe_images(
                registryId=self._registry_id, repositoryName=repository, imageIds=image_ids, filter=ANY_STATUS
            )
        except ClientError as error:
            if error_code(error) != "ImageNotFoundException":
                _raise_if_gone(error, repository)
                raise
            if len(image_ids) == 1:
                return []
            middle = len(image_ids) // 2
            return self._describe_existing(repository, image_ids[:middle]) + self._describe_existing(
                repository, image_ids[middle:]
            )
        from ecr_retention.domain.registry.images import ImageDetail

        details = [ImageDetail.model_validate(detail) for detail in response.get("imageDetails", [])]
        return [detail for detail in details if any(_answers(detail, image_id) for image_id in image_ids)]

    def get_manifests(
        self, repository: str, digests: Sequence[str], media_types: Sequence[str]
    ) -> dict[str, ImageManifest]:
        """The manifests of these digests exactly as stored. A manifest ECR answers under another digest (an
        index resolved to one platform because its media type was not accepted) is not the one asked for and
        is left out, as are the failures, whose codes are logged."""
        manifests: dict[str, ImageManifest] = {}
        failure_codes: Counter[str] = Counter()
        for batch in _batches(_unique(digests)):
            response = self._batch_get_image(repository, batch, media_types)
            _collect_manifests(response.get("images", []), set(batch), manifests, failure_codes)
            failure_codes.update(failure.get("failureCode", "Unknown") for failure in response.get("failures", []))
        if failure_codes:
            logger.warning(
                "BatchGetImage in %s returned no manifest for some images: %s", repository, dict(failure_codes)
            )
        return manifests

    def _batch_get_image(self, repository: str, batch: Sequence[str], media_types: Sequence[str]) -> Any:
        try:
            return self._ecr.batch_get_image(
                registryId=self._registry_id,
                repositoryName=repository,
                imageIds=[{"imageDigest": digest} for digest in batch],
                acceptedMediaTypes=list(media_types),
            )
        except ClientError as error:
            _raise_if_gone(error, repository)
            raise

    def lifecycle_policy(self, repository: str) -> str | None:
        """The native lifecycle policy text, None when the repository has none. Raises RepositoryGone."""
        try:
            response = self._ecr.get_lifecycle_policy(registryId=self._registry_id, repositoryName=repository)
        except ClientError as error:
            if error_code(error) == "LifecyclePolicyNotFoundException":
                return None
            _raise_if_gone(error, repository)
            raise
        text = response.get("lifecyclePolicyText")
        return text if isinstance(text, str) else None

    def replication_configuration(self) -> ReplicationConfiguration:
        """DescribeRegistry's replication rules. DescribeRegistry takes no registry id: it describes the caller's
        own registry, so an answer about another registry than this adapter's is refused, not used."""
        try:
            response = self._ecr.describe_registry()
        except AWS_CALL_ERRORS as error:
            code, message = describe_failure("DescribeRegistry", error)
            raise ReplicationUnreadable(message, denied=code.startswith("AccessDenied")) from None
        if response.get("registryId") != self._registry_id:
            raise ReplicationUnreadable(
                f"DescribeRegistry answered for registry {response.get('registryId')!r}, not {self._registry_id}: "
                "it describes the caller's own registry, so run with credentials of that account"
            )
        answer = with_documented_defaults(response.get("replicationConfiguration") or {})
        try:
            return ReplicationConfiguration.model_validate(answer)
        except ValidationError as error:
            detail = describe_validation_error(error, ReplicationConfiguration)
            raise ReplicationUnreadable(
                f"DescribeRegistry answered, but its replicationConfiguration cannot be read: {detail}"
            ) from None

    def creation_templates(self) -> list[RepositoryCreationTemplate]:
        """Every repository creation template, all pages of 1,000. DescribeRepositoryCreationTemplates takes no
        registryId: it reads the caller's own registry, and each answer names it. An answer for another registry
        than this adapter's (the configured registry is not the credentials' account) is refused rather than read
        as this registry's templates. Every failure (AccessDenied, throttling after the retries, an answer this
        model cannot read) raises TemplatesUnreadable: the templates only inform the doctor."""
        pages = self._ecr.get_paginator("describe_repository_creation_templates").paginate(
            PaginationConfig={"PageSize": PAGE_SIZE}
        )
        templates: list[RepositoryCreationTemplate] = []
        try:
            for page in pages:
                answered = page.get("registryId")
                if answered is not None and answered != self._registry_id:
                    raise TemplatesUnreadable(
                        f"DescribeRepositoryCreationTemplates answered for registry {answered}, not {self._registry_id}: "
                        "it reads the caller's own registry only"
                    )
                templates.extend(_templates_read(page.get("repositoryCreationTemplates", [])))
        except ClientError as error:
            raise TemplatesUnreadable(
                f"DescribeRepositoryCreationTemplates failed: {error_code(error)}: {error_message(error)}"
            ) from error
        except (BotoCoreError, ResponseParserError) as error:
            raise TemplatesUnreadable(
                f"DescribeRepositoryCreationTemplates failed: {type(error).__name__}: {error}"
            ) from error
        return templates

    def delete_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        """BatchDeleteImage by digest, in the caller's order (indexes before their children, subjects before
        their referrers), 100 a call; a digest given twice is sent once.

        Image by image: `done` only when ECR lists the digest in the response's `imageIds`; `already_gone` when
        its failure is ImageNotFound, or `unconfirmed` when that answer came to a retried call (an earlier attempt,
        whose answer was lost, may have deleted it); `failed` with ECR's failureCode for every other failure
        (ImageReferencedByManifestList, KmsError, ...) and with NotConfirmed when ECR names it nowhere.
        When a call raises after botocore's retries, its images are failed with the error's code
        (ThrottlingException, ReadTimeoutError, ...) and every later one with NotAttempted: nothing further is
        sent, and nothing of that call is claimed, because a timed-out call may or may not have deleted.
        A repository that no longer exists fails its images and every later one with
        RepositoryNotFoundException: they are gone, but not deleted by this run, and the report must not claim
        them."""
        outcome = _OutcomeBuilder()
        batches = list(_batches(_unique(digests)))
        for position, batch in enumerate(batches):
            try:
                response = self._ecr.batch_delete_image(
                    registryId=self._registry_id,
                    repositoryName=repository,
                    imageIds=[{"imageDigest": digest} for digest in batch],
                )
            except (ClientError, BotoCoreError) as error:
                later = [digest for rest in batches[position + 1 :] for digest in rest]
                outcome.stop(batch, later, error)
                break
            outcome.read_batch_response(batch, response)
        return outcome.build()

    def archive_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        """UpdateImageStorageClass to ARCHIVE, one call an image (ECR has no batch form), in the caller's order.

        `done` when ECR answers the image is ARCHIVED; `already_gone` on ImageNotFoundException; `failed` with the
        code of an error about that image (ImageStorageClassUpdateNotSupportedException, ...), and the next image
        is tried. Any other error (after botocore's retries) fails that image with its code and every later one
        with NotAttempted, as in delete_images; RepositoryNotFoundException fails them all with that code."""
        return self._update_storage_classes(repository, digests, "ARCHIVE", answered=_archived, refused=_refused)

    def restore_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        """UpdateImageStorageClass to STANDARD, one call an image, in the caller's order.

        `done` when ECR answers ACTIVATING (the restore has started; ECR finishes it within about 20 minutes);
        `already` when it answers ACTIVE, or refuses the call (ImageStorageClassUpdateNotSupportedException, ...)
        for an image that a re-read (DescribeImages) finds ACTIVE or ACTIVATING: what ECR answers for an image
        that is not archived is not documented, so either answer is read as "nothing to restore". Otherwise the
        classification is archive_images': `already_gone` on ImageNotFoundException (or an image the re-read no
        longer finds), `failed` with the code of an error about that image, and any other error stops the rest."""
        return self._update_storage_classes(
            repository,
            digests,
            "STANDARD",
            answered=_restoring,
            refused=lambda digest, error, outcome: self._classify_refused_restore(repository, digest, error, outcome),
        )

    def _update_storage_classes(
        self,
        repository: str,
        digests: Sequence[str],
        target: str,
        *,
        answered: Callable[[str, dict[str, Any], _OutcomeBuilder], None],
        refused: Callable[[str, ClientError, _OutcomeBuilder], None],
    ) -> BatchOutcome:
        """UpdateImageStorageClass, one call an image in the caller's order. ImageNotFoundException is `already_gone`;
        an error about that image (IMAGE_LEVEL_ARCHIVE_ERRORS) goes to `refused` and the next image is tried; any other
        error (after botocore's retries) fails that image with its code and every later one with NotAttempted, as in
        delete_images. ECR's answer for each image goes to `answered`."""
        outcome = _OutcomeBuilder()
        ordered = _unique(digests)
        for position, digest in enumerate(ordered):
            try:
                response = self._ecr.update_image_storage_class(
                    registryId=self._registry_id,
                    repositoryName=repository,
                    imageId={"imageDigest": digest},
                    targetStorageClass=target,
                )
            except ClientError as error:
                code = error_code(error)
                if code == "ImageNotFoundException":
                    outcome.already_gone.append(digest)
                elif code in IMAGE_LEVEL_ARCHIVE_ERRORS:
                    refused(digest, error, outcome)
                else:
                    outcome.stop([digest], ordered[position + 1 :], error)
                    break
                continue
            except BotoCoreError as error:
                outcome.stop([digest], ordered[position + 1 :], error)
                break
            answered(digest, response, outcome)
        return outcome.build()

    def _classify_refused_restore(
        self, repository: str, digest: str, error: ClientError, outcome: _OutcomeBuilder
    ) -> None:
        """A restore ECR refused: nothing to do if the image is not archived (any more), a failure if it is."""
        try:
            found: dict[str, ImageDetail] | None = self.describe_image_ids(repository, [digest])
        except (ClientError, BotoCoreError, RepositoryGone):
            found = None  # the refusal stands
        if found is not None and digest not in found:
            outcome.already_gone.append(digest)
        elif found is not None and found[digest].image_status in ("ACTIVE", "ACTIVATING"):
            outcome.already.append(digest)
        else:
            outcome.failed.append(ImageFailure(digest, error_code(error), error_message(error)))

    def put_tag(self, repository: str, manifest: ImageManifest, tag: str) -> TagOutcome:
        """PutImage with the manifest text exactly as BatchGetImage returned it, its media type and its digest
        (ECR refuses a manifest whose digest differs rather than creating a new image).

        ImageAlreadyExistsException (the tag is on this image already) is `already-tagged`;
        ImageTagAlreadyExistsException (an immutable repository, the tag on another image) is `immutable`, and
        botocore does not retry it; every other error is `failed` with its code."""
        request: dict[str, Any] = {
            "registryId": self._registry_id,
            "repositoryName": repository,
            "imageManifest": manifest.text,
            "imageTag": tag,
            "imageDigest": manifest.image_digest,
        }
        if manifest.media_type:
            request["imageManifestMediaType"] = manifest.media_type
        try:
            response = self._ecr.put_image(**request)
        except ClientError as error:
            code = error_code(error)
            if code == "ImageAlreadyExistsException":
                return TagOutcome("already-tagged")
            if code == "ImageTagAlreadyExistsException":
                return TagOutcome("immutable", error_message(error))
            return TagOutcome("failed", f"{code}: {error_message(error)}")
        except BotoCoreError as error:
            return TagOutcome("failed", f"{type(error).__name__}: {error}")
        tagged_digest = response.get("image", {}).get("imageId", {}).get("imageDigest")
        if tagged_digest != manifest.image_digest:
            return TagOutcome("failed", f"ECR tagged {tagged_digest}, not {manifest.image_digest}")
        return TagOutcome("tagged")


class _OutcomeBuilder:
    """Collects one delete, archive or restore run, image by image, into a BatchOutcome."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self.already_gone: list[str] = []
        self.unconfirmed: list[str] = []
        self.failed: list[ImageFailure] = []
        self.already: list[str] = []
        self.stopped = False

    def read_batch_response(self, batch: Sequence[str], response: dict[str, Any]) -> None:
        # botocore retried this call: an earlier attempt may have reached ECR and deleted before its answer was lost,
        # so ImageNotFound now says the image is gone, not that someone else removed it before this call.
        retried = int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0)) > 0
        confirmed = {image_id.get("imageDigest") for image_id in response.get("imageIds", [])}
        failures = _failures_by_digest(response)
        for digest in batch:
            # A failure wins over a confirmation: when ECR says both, the report must not claim the deletion.
            if digest in failures:
                code, reason = failures[digest]
                if code == "ImageNotFound":
                    (self.unconfirmed if retried else self.already_gone).append(digest)
                else:
                    self.failed.append(ImageFailure(digest, code, reason))
            elif digest in confirmed:
                self.done.append(digest)
            else:
                self.failed.append(ImageFailure(digest, NOT_CONFIRMED, "ECR neither confirmed nor refused it"))

    def stop(self, current: Sequence[str], later: Sequence[str], error: ClientError | BotoCoreError) -> None:
        self.stopped = True
        code = error_code(error) if isinstance(error, ClientError) else type(error).__name__
        message = error_message(error) if isinstance(error, ClientError) else str(error)
        self.failed.extend(ImageFailure(digest, code, message) for digest in current)
        if code == "RepositoryNotFoundException":
            self.failed.extend(ImageFailure(digest, code, message) for digest in later)
        else:
            reason = f"not attempted: an earlier call failed with {code}"
            self.failed.extend(ImageFailure(digest, NOT_ATTEMPTED, reason) for digest in later)

    def build(self) -> BatchOutcome:
        return BatchOutcome(
            done=tuple(self.done),
            already_gone=tuple(self.already_gone),
            failed=tuple(self.failed),
            stopped=self.stopped,
            unconfirmed=tuple(self.unconfirmed),
            already=tuple(self.already),
        )


def _templates_read(answered: list[dict[str, Any]]) -> list[RepositoryCreationTemplate]:
    """A page's repository creation templates, validated. A page without any builds none of their models: a registry
    without templates (the report step reads them once a run) loads none of them."""
    if not answered:
        return []
    from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate

    try:
        return [RepositoryCreationTemplate.model_validate(template) for template in answered]
    except ValidationError as error:
        raise TemplatesUnreadable(
            f"DescribeRepositoryCreationTemplates answered a template this tool cannot read: "
            f"{describe_validation_error(error, RepositoryCreationTemplate)}"
        ) from error


def _answers(detail: ImageDetail, image_id: dict[str, str]) -> bool:
    """Whether this image is the one the id asks for (an answer about another image is not used)."""
    if "imageDigest" in image_id:
        return detail.image_digest == image_id["imageDigest"]
    return image_id.get("imageTag") in detail.image_tags


def _unique(digests: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(digests))


def _collect_manifests(
    images: Iterable[Any], wanted: set[str], manifests: dict[str, ImageManifest], failure_codes: Counter[str]
) -> None:
    """The manifests BatchGetImage answered for the digests asked; one answered under another digest is counted."""
    for image in images:
        digest = image.get("imageId", {}).get("imageDigest")
        text = image.get("imageManifest")
        if digest not in wanted or not isinstance(text, str):
            failure_codes["OtherDigestReturned"] += 1
            continue
        media_type = image.get("imageManifestMediaType") or _declared_media_type(text)
        manifests[digest] = ImageManifest(image_digest=digest, media_type=media_type, text=text)


def _failures_by_digest(response: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """BatchDeleteImage's failures: the code and reason of each digest named."""
    failures: dict[str, tuple[str, str]] = {}
    for failure in response.get("failures", []):
        digest = failure.get("imageId", {}).get("imageDigest")
        if digest is not None:
            failures[digest] = (failure.get("failureCode", "Unknown"), failure.get("failureReason", ""))
    return failures


def _batches(items: list[Item]) -> Iterator[list[Item]]:
    for start in range(0, len(items), BATCH_SIZE):
        yield items[start : start + BATCH_SIZE]


def with_documented_defaults(configuration: Any) -> Any:
    """DescribeRegistry's replicationConfiguration with each rule's `deleteReplication` stated: the API leaves it
    out of a rule that never set it, and documents a missing one as "the service does not replicate image
    deletions or image tag removals". The model reads an absent field as replicating deletions, the safe side
    for a snapshot, which an AWS CLI older than the field may have written without it; here its absence is the
    API's own answer, because the botocore this package pins (requirements.txt) has deleteReplication in its ECR
    model (tests/integration/aws/test_ecr_replication.py checks), so it is read as the API means it: false.
    Anything that is not a list of rule objects is left to the model to refuse."""
    if not isinstance(configuration, dict) or not isinstance(configuration.get("rules"), list):
        return configuration
    rules = [
        {**rule, "deleteReplication": {"enabled": False}}
        if isinstance(rule, dict) and "deleteReplication" not in rule
        else rule
        for rule in configuration["rules"]
    ]
    return {**configuration, "rules": rules}


def _raise_if_gone(error: ClientError, repository: str) -> None:
    if error_code(error) == "RepositoryNotFoundException":
        raise RepositoryGone(f"repository {repository} does not exist: {error_message(error)}") from None


def _declared_media_type(text: str) -> str:
    """The manifest's own `mediaType`, for the rare answer without imageManifestMediaType ("" when absent)."""
    try:
        document = json.loads(text)
    except ValueError:
        return ""
    media_type = document.get("mediaType") if isinstance(document, dict) else None
    return media_type if isinstance(media_type, str) else ""


def _archived(digest: str, response: dict[str, Any], outcome: _OutcomeBuilder) -> None:
    status = response.get("imageStatus")
    if status == "ARCHIVED" and response.get("imageId", {}).get("imageDigest", digest) == digest:
        outcome.done.append(digest)
    else:
        outcome.failed.append(ImageFailure(digest, NOT_CONFIRMED, f"ECR answered imageStatus {status!r}"))


def _refused(digest: str, error: ClientError, outcome: _OutcomeBuilder) -> None:
    outcome.failed.append(ImageFailure(digest, error_code(error), error_message(error)))


def _restoring(digest: str, response: dict[str, Any], outcome: _OutcomeBuilder) -> None:
    status = response.get("imageStatus")
    if response.get("imageId", {}).get("imageDigest", digest) != digest:
        outcome.failed.append(ImageFailure(digest, NOT_CONFIRMED, "ECR answered for another image"))
    elif status == "ACTIVATING":
        outcome.done.append(digest)
    elif status == "ACTIVE":
        outcome.already.append(digest)
    else:
        outcome.failed.append(ImageFailure(digest, NOT_CONFIRMED, f"ECR answered imageStatus {status!r}"))
