"""moto's ECR made to behave like real ECR where the pipeline depends on it: `with EcrFidelity():`.

Used by `ecr-retention demo` and by the tests. moto is a development dependency: only the demo command and the
tests import this package.

moto 5.2.5 gaps filled here, by replacing methods of moto's
`ECRResponse` class for the length of a `with EcrFidelity():` block (the replacements are in `responses` and
`creation_templates`). The patch is on the class, so it holds for the in-process `mock_aws` and for a
`ThreadedMotoServer` running in the same process alike:

- Paging: DescribeImages, ListImages and DescribeRepositories honour `maxResults` (default 100, at most 1,000) and
  `nextToken`; moto returns everything in one page, so an adapter's paging would never run.
- Storage status: DescribeImages and ListImages honour `filter.imageStatus` and default to ACTIVE only, as ECR does
  (moto has no archive at all); `filter.tagStatus` is honoured by DescribeImages too. The filter applies to
  DescribeImages by `imageIds` as well: an image it hides is not found. (Whether ECR does so is not documented;
  this is the strict reading, so an adapter must send imageStatus ANY to re-read archived images.)
- UpdateImageStorageClass (not implemented by moto): ARCHIVE sets the image ARCHIVED with `lastArchivedAt`;
  STANDARD sets an archived image ACTIVATING with `lastActivatedAt`. Archiving an archived image is a no-op, and so
  is restoring an ACTIVE or ACTIVATING one (it answers the image's status). ECR turns ACTIVATING into ACTIVE within
  about 20 minutes; here that happens on the first DescribeImages at least `activation_delay` after the restore
  started (never when it is None, the default), so a test of `restore --wait` is deterministic.
- Image details as ECR writes them: `imageSizeInBytes` is the sum of the layer sizes (moto: the config's size) and,
  for an index, the largest of its children present; `artifactMediaType` and `subjectManifestDigest` come from the
  manifest; `lastRecordedPullTime`, `imageStatus`, `lastArchivedAt`, `lastActivatedAt` are reported when set.
- BatchDeleteImage: at most 100 ids (InvalidParameterException); deleting an untagged image by digest lists it in
  `imageIds` (moto returns `imageIds: []` although it deleted it); a child still referenced by an index that is
  not deleted is refused with `ImageReferencedByManifestList` (moto deletes it). Ids are handled in request order,
  so an index listed before its children frees them within the same call. `refuse_delete` adds any other
  per-image failure (KmsError, ...). A deletion replicates: in a repository that a replication rule with
  `deleteReplication.enabled` sends to another Region of the account, the ids deleted are deleted there too, where
  present (moto replicates nothing; a test or the demo seeds the destination as replication would have).
- BatchGetImage: at most 100 ids; failures name the id asked for (moto names a tag "null"); `acceptedMediaTypes`
  is honoured: an index asked for without the index media types is resolved to its linux/amd64 (else first)
  child, under the child's digest, as ECR does; a media type not accepted otherwise fails UnsupportedImageType.
  Archived images fail ImageInaccessible (they cannot be pulled).
- PutImage: the digest is always sha256 of the manifest text (moto derives it from the layers, or at random for
  an index); an `imageDigest` that differs is ImageDigestDoesNotMatchException; in an IMMUTABLE repository a tag
  held by another image is ImageTagAlreadyExistsException (moto raises ImageAlreadyExistsException); in a mutable
  repository moving a tag leaves the image it came from untagged (moto deletes that image). An unknown
  repository is RepositoryNotFoundException.
- PutLifecyclePolicy validates the policy with ECR's rules as `ecr_retention.domain.lifecycle` models them
  (transitions, `tagPatternList`, storage classes), answering InvalidParameterException as ECR words it; moto's
  validator knows only `expire` and `tagPrefixList`. moto never applies a policy: `lifecycle` does, when asked.
- Repository creation templates (not implemented by moto): CreateRepositoryCreationTemplate stores a template per
  account and region (TemplateAlreadyExistsException for a prefix it has); DescribeRepositoryCreationTemplates
  answers them by prefix, with the registryId and paging of DescribeRepositories (`prefixes` narrows them).
- Faults (`faults`): `throttle`/`fail` answer chosen attempts of an operation with an error response, `before` runs
  an action right before a chosen call is served, `refuse_delete` adds a per-image failure to BatchDeleteImage.

`MotoEcr` (`seeding`) seeds a registry through the ECR API like a real push (correct digests, real manifest JSON,
from `manifests`) and sets in moto's backend what no API can: push times, last pull times, archive state.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from unittest import mock

from moto.ecr.responses import ECRResponse

from ecr_retention_dev.emulator import creation_templates, responses
from ecr_retention_dev.emulator.faults import FaultInjection


@dataclass
class EcrFidelity(FaultInjection):
    """`with EcrFidelity() as ecr:` patches moto's ECR for the block (see the module docstring), and serves the
    faults asked for (`FaultInjection`: `throttle`, `fail`, `before`, `refuse_delete`, the `served` counts)."""

    refuse_referenced_children: bool = True
    # How long a restore takes (ACTIVATING -> ACTIVE, seen by DescribeImages); None: restores never finish.
    activation_delay: timedelta | None = None
    _stack: ExitStack = field(default_factory=ExitStack)

    def __enter__(self) -> EcrFidelity:
        original_call_action = ECRResponse.call_action
        fidelity = self

        def call_action(response: ECRResponse) -> Any:
            return fidelity.serve(response._get_action(), lambda: original_call_action(response))

        def batch_delete_image(response: ECRResponse) -> Any:
            return responses.batch_delete_image(
                response, refusals=fidelity._refusals, refuse_referenced_children=fidelity.refuse_referenced_children
            )

        def describe_images(response: ECRResponse) -> Any:
            return responses.describe_images(response, activation_delay=fidelity.activation_delay)

        replacements: dict[str, Callable[..., Any]] = {
            "call_action": call_action,
            "describe_repositories": responses.describe_repositories,
            "list_images": responses.list_images,
            "describe_images": describe_images,
            "batch_get_image": responses.batch_get_image,
            "batch_delete_image": batch_delete_image,
            "put_image": responses.put_image,
            "update_image_storage_class": responses.update_image_storage_class,
            "put_lifecycle_policy": responses.put_lifecycle_policy,
            "create_repository_creation_template": creation_templates.create_repository_creation_template,
            "describe_repository_creation_templates": creation_templates.describe_repository_creation_templates,
        }
        for name, function in replacements.items():
            # moto dispatches to plain functions of the class only (inspect.isfunction), so wrap each one.
            self._stack.enter_context(mock.patch.object(ECRResponse, name, _as_function(function), create=True))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()


def _as_function(function: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: ECRResponse) -> Any:
        return function(self)

    method.__name__ = getattr(function, "__name__", "method")
    return method
