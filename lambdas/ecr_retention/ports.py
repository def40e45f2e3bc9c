"""What the services need from the outside world, as Protocols. Adapters in `aws/` implement them with
boto3; tests hand in in-memory fakes (tests/support/fakes.py) or the real adapters against moto."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

# The domain's types name what the ports answer; no port builds one here, so none is imported at run time (the
# functions' cold start loads only the models of what they read).
if TYPE_CHECKING:
    from ecr_retention.domain.inventory.aws import (
        EcsService,
        EcsTask,
        FunctionAlias,
        FunctionCode,
        ScheduledTask,
        TaskDefinition,
    )
    from ecr_retention.domain.inventory.eks_clusters import EksCluster
    from ecr_retention.domain.inventory.inspector_manifest import Coverage
    from ecr_retention.domain.inventory.kubernetes import Resource
    from ecr_retention.domain.registry.creation_templates import RepositoryCreationTemplate
    from ecr_retention.domain.registry.images import ImageDetail
    from ecr_retention.domain.registry.replication import ReplicationConfiguration


class RepositoryGone(Exception):
    """The repository does not exist (any more): deleted between listing and evaluation."""


# The errors the adapters raise when a call fails after its retries (each adapter's own class derives from one
# of these and from aws.errors.AwsCallFailed). The services catch them by type; anything else is a defect
# (defects.py).


class StorageUnavailable(Exception):
    """A call on the inventory bucket failed (Bucket): the message names the object, the call and AWS's error."""


class LeaseUnavailable(Exception):
    """The lease table could not be read or written (LeaseStore). A lease another holder has is not an error:
    acquire answers False."""


class NotificationFailed(Exception):
    """The summary could not be published (Notifier)."""


class ReplicationUnreadable(Exception):
    """The registry's replication configuration could not be read (denied, throttled past the retries, an answer
    that is not one): the message names the call and AWS's error, or what is wrong with the answer. `denied`: AWS
    refused the call (AccessDenied), so the message is worth the grant it lacks; a call that succeeded with an
    answer this release cannot read lacks no permission."""

    def __init__(self, message: str, *, denied: bool = False) -> None:
        super().__init__(message)
        self.denied = denied


class RepositoriesUnlistable(Exception):
    """The registry's repositories could not be listed (DescribeRepositories denied, an outage of the Region's
    endpoint, throttled past the retries): the message names the call and AWS's error. A run of several Regions
    reports that Region as failed and prunes the others (services/targets_step.py list_registries)."""


class ImagesUnreadable(Exception):
    """A repository's images could not be looked up (DescribeImages denied, throttled past the retries, an answer that
    is not one): the message names the repository, the call and AWS's error. Raised where the lookup only informs
    (the run's in-use check), so the caller reports it and goes on; and by services.snapshot when the answer lists an
    image twice, where the repository then fails, nothing planned or deleted in it."""


class TemplatesUnreadable(Exception):
    """The registry's repository creation templates could not be read (access denied, throttled, another registry):
    they only inform the doctor, so a run goes on and its report says why they were not checked."""


@dataclass(frozen=True)
class ImageFailure:
    """One image a batch call did not act on. `code` is ECR's failureCode (ImageReferencedByManifestList, ...)
    or, when the whole call failed after its retries, the error code of the call (ThrottlingException, ...)."""

    image_digest: str
    code: str
    message: str


@dataclass(frozen=True)
class BatchOutcome:
    """What a delete, archive or restore call did, image by image. Nothing is counted as done unless ECR said so."""

    done: tuple[str, ...] = ()  # digests ECR confirmed deleted (or archived, or restoring: ACTIVATING)
    already_gone: tuple[str, ...] = ()  # ImageNotFound: absent before this call
    failed: tuple[ImageFailure, ...] = ()
    # ImageNotFound in the answer to a retried call: absent now, but perhaps deleted by an earlier attempt of the
    # same call whose answer was lost (a dropped connection, a timeout, a 500 after ECR acted). Neither claimed as
    # done nor taken for someone else's removal.
    unconfirmed: tuple[str, ...] = ()
    # A call failed after its retries and nothing after it was attempted: the caller should stop too.
    stopped: bool = False
    # restore_images: already ACTIVE or ACTIVATING when asked (nothing to do; the caller re-reads which).
    already: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImageManifest:
    """A manifest exactly as ECR returned it: `text` is byte-for-byte what PutImage must send back."""

    image_digest: str
    media_type: str
    text: str


# An image as ECR's imageIds name it: {"imageDigest": "sha256:..."} or {"imageTag": "dev"}.
ImageId = Mapping[str, str]

TagStatus = Literal["tagged", "already-tagged", "immutable", "failed"]


@dataclass(frozen=True)
class TagOutcome:
    status: TagStatus
    detail: str = ""


class Registry(Protocol):
    """One ECR registry (an account in a region)."""

    @property
    def registry_id(self) -> str: ...

    @property
    def region(self) -> str: ...

    def repository_names(self) -> list[str]:
        """Every repository of the registry (DescribeRepositories, all pages). Raises RepositoriesUnlistable."""
        ...

    def describe_images(self, repository: str) -> list[ImageDetail]:
        """Every image of a repository in any storage status (DescribeImages, all pages of 1,000).
        Raises RepositoryGone."""
        ...

    def describe_image_ids(self, repository: str, digests: Sequence[str]) -> dict[str, ImageDetail]:
        """Re-read these images now (DescribeImages by imageIds, 100 a call); a digest that no longer exists
        is absent from the result. Raises RepositoryGone."""
        ...

    def describe_images_by_id(self, repository: str, image_ids: Sequence[ImageId]) -> list[ImageDetail]:
        """The images that answer these ids now, in any storage status (DescribeImages by imageIds, 100 a call): an id
        is `{"imageDigest": ...}` or `{"imageTag": ...}`; one that answers nothing is left out. Raises RepositoryGone,
        and ImagesUnreadable when a call fails after its retries."""
        ...

    def get_manifests(
        self, repository: str, digests: Sequence[str], media_types: Sequence[str]
    ) -> dict[str, ImageManifest]:
        """BatchGetImage (100 ids a call) with these accepted media types; a digest ECR cannot return is
        absent. Every call counts as a pull, so callers ask only for what they do not have cached."""
        ...

    def lifecycle_policy(self, repository: str) -> str | None:
        """The repository's native lifecycle policy text, or None when it has none."""
        ...

    def replication_configuration(self) -> ReplicationConfiguration:
        """The registry's replication rules (DescribeRegistry); empty when it has none. Raises
        ReplicationUnreadable."""

    def creation_templates(self) -> list[RepositoryCreationTemplate]:
        """Every repository creation template of the registry (DescribeRepositoryCreationTemplates, all pages).
        Raises TemplatesUnreadable."""
        ...

    def delete_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        """BatchDeleteImage by digest, in the given order, 100 a call. When a call fails after its retries,
        that call's images and every later one are failed and nothing further is attempted."""
        ...

    def archive_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        """UpdateImageStorageClass to ARCHIVE, one image a call (ECR has no batch form); same failure rule."""
        ...

    def restore_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        """UpdateImageStorageClass to STANDARD, one image a call: `done` when ECR answers ACTIVATING (a restore under
        way), `already` when the image is ACTIVE (or a refused call finds it ACTIVE or ACTIVATING); same failure
        rule as archive_images."""
        ...

    def put_tag(self, repository: str, manifest: ImageManifest, tag: str) -> TagOutcome:
        """PutImage with the byte-identical manifest, its media type and its digest, under a new tag."""
        ...


class Bucket(Protocol):
    """The inventory bucket: in-use manifests, the manifest cache, run state and reports. Every method raises
    StorageUnavailable when its call fails."""

    @property
    def name(self) -> str: ...

    def list_objects(self, prefix: str) -> dict[str, int]:
        """Every key under the prefix with its size in bytes (ListObjectsV2, all pages)."""
        ...

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        """The object's bytes, or None when it does not exist. Raises InputError when it is larger than
        max_bytes (checked before the body is read)."""
        ...

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None: ...


@dataclass(frozen=True)
class DeleteMarker:
    """A key's latest version is a delete marker: an object had the key, and it was deleted (not never written)."""

    version_id: str
    deleted_at: datetime


class VersionedBucket(Bucket, Protocol):
    """The bucket, with what a versioned bucket tells of a missing key (a run's inventory, services/inventory.py)."""

    def delete_marker(self, key: str) -> DeleteMarker | None:
        """The delete marker that is the key's latest version (ListObjectVersions on the key); None when its latest
        version is an object, or it has none (never written, or its versions expired)."""
        ...


class ClaimingBucket(Bucket, Protocol):
    """The bucket, with writes that happen at most once per key (the sentinel's claim of an event's alert)."""

    def create(self, key: str, body: bytes, *, content_type: str = "application/json") -> bool:
        """Write only when no object has the key (S3's conditional write, If-None-Match: *): True when written,
        False when an object has it already, or another conditional write of the key is under way."""
        ...


class RunBucket(VersionedBucket, ClaimingBucket, Protocol):
    """The bucket, as a run uses it: versions (the in-use memory), and writes that happen at most once per key (a
    batch's first invocation: services.evaluate_step.run_work_batch)."""


class HoldingBucket(ClaimingBucket, Protocol):
    """The bucket, as `ecr-retention hold` uses it: holds are created once (a conditional write, so that two people
    placing a hold on one image at once never overwrite each other) and deleted by their key."""

    def delete(self, key: str) -> None:
        """DeleteObject (a versioned bucket keeps what it was)."""
        ...


class ManifestCache(Protocol):
    """Index manifests by digest (services/snapshot.py): a digest's manifest never changes, so a cached one saves a
    BatchGetImage, which counts as a pull."""

    def get(self, digest: str) -> str | None: ...

    def put(self, digest: str, text: str) -> None: ...


class ManifestStore(Protocol):
    """Where the collector stores its in-use manifests (services/aws_inventory.py): the inventory bucket, or a file
    for `export-aws --out`."""

    def store(self, name: str, body: bytes) -> str:
        """Store the manifest of `name` whole; return where it went. Raises StorageUnavailable (a bucket) or
        OSError (a file) when it cannot be written."""
        ...

    def stored(self, name: str) -> tuple[str, bytes | None]:
        """Where the manifest of `name` is, and its bytes as stored now (None: there is none). Raises
        StorageUnavailable, OSError or InputError (too large, not a file) when it cannot be read."""
        ...


class Notifier(Protocol):
    def publish(
        self, subject: str, message: str, attributes: Mapping[str, str], *, report_location: str | None = None
    ) -> None:
        """A message over the channel's size limit is cut and ends with a line pointing at report_location
        (where the full report is, e.g. s3://bucket/reports/...). Raises NotificationFailed."""
        ...


class LeaseStore(Protocol):
    """One evaluation per repository at a time, across Lambdas and CLI runs. Every method raises LeaseUnavailable."""

    def acquire(self, repository: str, holder: str, seconds: int) -> bool:
        """True when this holder now has the lease; False when a lease that has not expired is held, by another holder
        or by this one (another evaluation of the same run: aws/dynamodb_lease.py)."""
        ...

    def release(self, repository: str, holder: str) -> None: ...

    def holder(self, repository: str) -> str | None:
        """Who the repository's lease names (read only), expired or not; None when there is no lease. A lease naming a
        run that released nothing is an evaluation of that run that never ended (services.evaluate_step.run_batch_member)."""
        ...


# The AWS inventory collector (services/aws_inventory.py): what it reads in one account and region. Every method
# raises ReadFailed when a call fails after its retries, or answers what cannot be used; the collector then marks
# the manifest incomplete and goes on with the rest. Something deleted between a list and a read is absent.


class ReadFailed(Exception):
    """Part of an account could not be read: whatever it runs is missing from the collection."""


class EcsReader(Protocol):
    def cluster_arns(self) -> list[str]: ...

    def services(self, cluster_arn: str) -> list[EcsService]:
        """ListServices, then DescribeServices 10 at a time."""
        ...

    def tasks(self, cluster_arn: str) -> list[EcsTask]:
        """ListTasks (desired status RUNNING: running and pending tasks), then DescribeTasks 100 at a time."""
        ...

    def active_task_definition_arns(self) -> list[str]: ...

    def task_definition(self, arn: str) -> TaskDefinition:
        """DescribeTaskDefinition, once per ARN for the reader's lifetime."""
        ...


class ScheduledTaskReader(Protocol):
    def event_buses(self) -> list[str]: ...

    def rules(self, bus: str) -> list[str]: ...

    def rule_tasks(self, bus: str, rule: str) -> list[ScheduledTask]:
        """The rule's targets that run an ECS task (EcsParameters)."""
        ...

    def schedules(self) -> list[tuple[str, str]]:
        """(group, name) of every EventBridge Scheduler schedule whose target can run an ECS task."""
        ...

    def schedule_task(self, group: str, name: str) -> ScheduledTask | None:
        """GetSchedule: the ECS task it runs, or None when it runs none (or is gone)."""
        ...


class FunctionReader(Protocol):
    def image_functions(self) -> dict[str, list[str]]:
        """Function name -> its qualifiers ($LATEST and every published version), container-image functions only."""
        ...

    def aliases(self, function: str) -> list[FunctionAlias]: ...

    def code(self, function: str, qualifier: str) -> FunctionCode | None:
        """GetFunction's Code for one version (or alias); None when it is gone."""
        ...


@dataclass(frozen=True)
class AccountReaders:
    """Everything the collector reads in one account and region."""

    account: str
    region: str
    ecs: EcsReader
    scheduled: ScheduledTaskReader
    functions: FunctionReader


class CoverageReader(Protocol):
    """Amazon Inspector's coverage of ECR in one account and region (aws/inspector_coverage.py)."""

    def coverage(self, account: str) -> Coverage:
        """Every ECR repository and image of the account Inspector covers; raises ReadFailed."""
        ...


class AccountAccess(Protocol):
    """The accounts to collect and a way into each (the caller's own credentials, or an assumed role)."""

    def accounts(self) -> list[str]: ...

    def readers(self, account: str, region: str) -> AccountReaders:
        """Raises ReadFailed when the account cannot be entered (AssumeRole refused)."""
        ...


Item = TypeVar("Item")


class ObjectLister(Protocol):
    """A Kubernetes API server's objects of one kind, across all namespaces (ecr_retention.kube.client)."""

    def list_all(self, resource: Resource, read: Callable[[Mapping[str, Any]], Item | None]) -> list[Item]:
        """Raises ReadFailed when any page of the list cannot be read."""
        ...


class ClusterAccess(Protocol):
    """A way into each EKS cluster's API from outside it: its endpoint and CA, and a token of the caller's role."""

    def lister(self, cluster: EksCluster) -> ObjectLister:
        """Raises ReadFailed when the cluster cannot be described or the caller cannot sign a token for it."""
        ...
