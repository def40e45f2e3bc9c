"""EcrRegistry against moto's ECR, with moto's gaps filled by the emulator's EcrFidelity (see its docstring):

paging of describe_images/describe_repositories (moto returns one page), archived images and the imageStatus
filter, UpdateImageStorageClass (moto has none), BatchDeleteImage listing untagged deletions (moto returns
`imageIds: []`) and refusing referenced children with ImageReferencedByManifestList (moto deletes them), and
ImageTagAlreadyExistsException for immutable repositories (moto raises ImageAlreadyExistsException). Faults
(throttling, errors, a repository deleted mid-run) are served by moto through the same class, so botocore's real
retry logic answers them. API calls are counted client-side with support.api_calls.ApiCallRecorder.
"""

from __future__ import annotations

import json
import math
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config

from ecr_retention.aws.clients import MAX_ATTEMPTS, ClientFactory
from ecr_retention.aws.ecr_registry import BATCH_SIZE, EcrRegistry
from ecr_retention.ports import ImageFailure, ImageManifest, ImagesUnreadable, RepositoryGone
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.manifests import ALL_MEDIA_TYPES, IMAGE_MEDIA_TYPES, INDEX_MEDIA_TYPES
from ecr_retention_dev.emulator.seeding import MotoEcr
from support.api_calls import ApiCallRecorder

from .conftest import ACCOUNT, REGION

REPO = "team-a/web"
NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
DAY = timedelta(days=1)
POLICY = json.dumps(
    {
        "rules": [
            {
                "rulePriority": 1,
                "description": "expire untagged images after 14 days",
                "selection": {
                    "tagStatus": "untagged",
                    "countType": "sinceImagePushed",
                    "countUnit": "days",
                    "countNumber": 14,
                },
                "action": {"type": "expire"},
            }
        ]
    },
    indent=2,
)


def digests_of(failures: tuple[ImageFailure, ...]) -> list[str]:
    return [failure.image_digest for failure in failures]


def codes_of(failures: tuple[ImageFailure, ...]) -> dict[str, str]:
    return {failure.image_digest: failure.code for failure in failures}


# --- repositories and image details --------------------------------------------------------------


def test_repository_names_reads_every_page_of_1000(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    names = [f"service-{number:04d}" for number in range(1_003)]
    for name in names:
        seed.create_repository(name)

    assert sorted(registry.repository_names()) == names
    calls = recorder.of("DescribeRepositories")
    assert len(calls) == 2
    assert all(call.params["maxResults"] == 1000 and call.params["registryId"] == ACCOUNT for call in calls)


def test_describe_images_pages_by_1000_and_sees_archived_images(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 2_345)
    for image in bulk[-5:]:
        seed.archive(REPO, image.digest, NOW - 30 * DAY)

    details = registry.describe_images(REPO)

    assert sorted(detail.image_digest for detail in details) == sorted(image.digest for image in bulk)
    archived = [detail for detail in details if detail.image_status == "ARCHIVED"]
    assert {detail.image_digest for detail in archived} == {image.digest for image in bulk[-5:]}
    assert all(detail.last_archived_at == NOW - 30 * DAY for detail in archived)
    calls = recorder.of("DescribeImages")
    assert len(calls) == math.ceil(2_345 / 1000)
    assert all(call.params["maxResults"] == 1000 for call in calls)
    assert all(call.params["filter"] == {"imageStatus": "ANY"} for call in calls)


def test_describe_images_without_the_status_filter_would_miss_archived_images(seed: MotoEcr, ecr_client: Any) -> None:
    """The fidelity this adapter's filter is tested against: ECR lists ACTIVE images only by default."""
    seed.create_repository(REPO)
    kept, archived = seed.push_image(REPO, "v1"), seed.push_image(REPO, "v2")
    seed.archive(REPO, archived.digest, NOW)

    listed = ecr_client.describe_images(repositoryName=REPO)["imageDetails"]

    assert [detail["imageDigest"] for detail in listed] == [kept.digest]


def test_describe_images_gives_image_details_with_utc_times_sizes_and_references(
    seed: MotoEcr, registry: EcrRegistry
) -> None:
    seed.create_repository(REPO)
    image = seed.push_image(
        REPO, "v1.2.0", "latest", layer_sizes=(30_000_000, 2_000_000), pushed_at=NOW - 40 * DAY, pulled_at=NOW - 2 * DAY
    )
    index = seed.push_index(REPO, "v2.0.0", pushed_at=NOW - 3 * DAY)
    sbom = seed.push_referrer(REPO, image, pushed_at=NOW - 40 * DAY)

    details = {detail.image_digest: detail for detail in registry.describe_images(REPO)}

    tagged = details[image.digest]
    assert tagged.image_tags == ("v1.2.0", "latest")
    assert tagged.image_pushed_at == NOW - 40 * DAY
    assert tagged.image_pushed_at.tzinfo == UTC
    assert tagged.last_recorded_pull_time == NOW - 2 * DAY
    assert tagged.image_size_in_bytes == 32_000_000
    assert tagged.repository_name == REPO
    assert tagged.registry_id == ACCOUNT
    assert details[index.digest].image_manifest_media_type == "application/vnd.oci.image.index.v1+json"
    assert {child.digest for child in index.children} <= set(details)
    assert all(details[child.digest].image_tags == () for child in index.children)
    assert details[sbom.digest].subject_manifest_digest == image.digest
    assert details[sbom.digest].artifact_media_type == "application/spdx+json"


def test_describe_images_of_a_missing_repository_raises_repository_gone(registry: EcrRegistry) -> None:
    with pytest.raises(RepositoryGone, match="team-a/web"):
        registry.describe_images(REPO)


def test_repository_deleted_between_two_pages_raises_repository_gone(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    seed.seed_images(REPO, 1_500)
    fidelity.before("DescribeImages", lambda: seed.delete_repository(REPO), call=2)

    with pytest.raises(RepositoryGone):
        registry.describe_images(REPO)
    assert len(recorder.of("DescribeImages")) == 2


def test_describe_images_rides_out_a_throttling_burst(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity, recorder: ApiCallRecorder, retry_delays: list[float]
) -> None:
    seed.create_repository(REPO)
    seed.seed_images(REPO, 1_200)
    fidelity.throttle("DescribeImages", times=3, after=1)  # the second page is throttled three times

    assert len(registry.describe_images(REPO)) == 1_200
    assert [call.attempts for call in recorder.of("DescribeImages")] == [1, 4]
    assert len(retry_delays) == 3


# --- re-reading by id ----------------------------------------------------------------------------


def test_describe_image_ids_rereads_in_batches_of_100_and_leaves_out_missing_images(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder, ecr_client: Any
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 250)
    seed.archive(REPO, bulk[10].digest, NOW)
    missing = [bulk[5].digest, bulk[150].digest]
    seed.client.batch_delete_image(repositoryName=REPO, imageIds=[{"imageDigest": digest} for digest in missing])

    found = registry.describe_image_ids(REPO, [image.digest for image in bulk])

    assert set(found) == {image.digest for image in bulk} - set(missing)
    assert found[bulk[10].digest].image_status == "ARCHIVED"
    assert found[bulk[0].digest].image_tags == ("bulk-0",)
    calls = recorder.of("DescribeImages")
    assert all(len(call.params["imageIds"]) <= BATCH_SIZE for call in calls)
    assert all(call.params["filter"] == {"imageStatus": "ANY"} for call in calls)
    # three batches; the two holding a missing image are halved down to it: at most 2 x 7 more calls each
    assert 3 < len(calls) <= 3 + 2 * 2 * 7


def test_describe_image_ids_makes_one_call_per_batch_when_nothing_is_missing(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 201)

    found = registry.describe_image_ids(REPO, [image.digest for image in bulk] + [bulk[0].digest])

    assert len(found) == 201
    assert [len(call.params["imageIds"]) for call in recorder.of("DescribeImages")] == [100, 100, 1]


def test_describe_image_ids_sees_a_moved_tag(seed: MotoEcr, registry: EcrRegistry) -> None:
    seed.create_repository(REPO)
    old = seed.push_image(REPO, "stable")
    new = seed.push_image(REPO, "stable")  # the tag moves; the old image stays, untagged

    found = registry.describe_image_ids(REPO, [old.digest, new.digest])

    assert found[old.digest].image_tags == ()
    assert found[new.digest].image_tags == ("stable",)


def test_describe_image_ids_of_a_missing_repository_raises_repository_gone(registry: EcrRegistry) -> None:
    with pytest.raises(RepositoryGone):
        registry.describe_image_ids(REPO, ["sha256:" + "a" * 64])


def test_describe_images_by_id_finds_images_by_tag_and_by_digest_and_leaves_out_what_is_gone(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    # Given dev and an archived digest that exist, and a tag and a digest that do not
    seed.create_repository(REPO)
    dev = seed.push_image(REPO, "dev")
    archived = seed.push_image(REPO, "1.0")
    seed.archive(REPO, archived.digest, NOW)
    gone = "sha256:" + "f" * 64
    ids = [{"imageTag": "dev"}, {"imageDigest": archived.digest}, {"imageTag": "nope"}, {"imageDigest": gone}]
    # When they are looked up by id
    found = registry.describe_images_by_id(REPO, ids)
    # Then what exists answers (archived in its status), what does not is left out
    assert {(detail.image_digest, detail.image_status) for detail in found} == {
        (dev.digest, "ACTIVE"),
        (archived.digest, "ARCHIVED"),
    }
    calls = recorder.of("DescribeImages")
    assert all(call.params["filter"] == {"imageStatus": "ANY"} for call in calls)
    assert calls[0].params["imageIds"] == ids


def test_describe_images_by_id_asks_100_ids_a_call(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 150, tag_every=1)  # tagged bulk-0 ... bulk-149

    found = registry.describe_images_by_id(REPO, [{"imageTag": f"bulk-{n}"} for n in range(150)])

    assert len(found) == 150
    assert {detail.image_digest for detail in found} == {image.digest for image in bulk}
    assert [len(call.params["imageIds"]) for call in recorder.of("DescribeImages")] == [100, 50]


def test_describe_images_by_id_of_a_missing_repository_raises_repository_gone(registry: EcrRegistry) -> None:
    with pytest.raises(RepositoryGone):
        registry.describe_images_by_id("no/such", [{"imageTag": "dev"}])


def test_describe_images_by_id_that_stays_throttled_raises_images_unreadable(
    seed: MotoEcr, fidelity: EcrFidelity, registry: EcrRegistry
) -> None:
    seed.create_repository(REPO)
    seed.push_image(REPO, "dev")
    fidelity.throttle("DescribeImages", times=MAX_ATTEMPTS)

    with pytest.raises(ImagesUnreadable, match=r"repository team-a/web: DescribeImages failed: ThrottlingException"):
        registry.describe_images_by_id(REPO, [{"imageTag": "dev"}])


# --- manifests -------------------------------------------------------------------------------------


def test_get_manifests_returns_index_manifests_byte_for_byte(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    oci = seed.push_index(REPO, "v1", attestation=True)
    docker = seed.push_index(REPO, "v2", docker=True)

    manifests = registry.get_manifests(REPO, [oci.digest, docker.digest], INDEX_MEDIA_TYPES)

    assert manifests[oci.digest] == ImageManifest(
        oci.digest, "application/vnd.oci.image.index.v1+json", oci.index.manifest
    )
    assert manifests[docker.digest].text == docker.index.manifest
    assert manifests[docker.digest].media_type == "application/vnd.docker.distribution.manifest.list.v2+json"
    [call] = recorder.of("BatchGetImage")
    assert call.params["acceptedMediaTypes"] == list(INDEX_MEDIA_TYPES)


def test_get_manifests_asks_100_ids_a_call_and_leaves_out_what_ecr_cannot_return(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 150)
    absent = "sha256:" + "0" * 64

    manifests = registry.get_manifests(REPO, [absent] + [image.digest for image in bulk], ALL_MEDIA_TYPES)

    assert set(manifests) == {image.digest for image in bulk}
    assert all(manifests[image.digest].text == image.manifest for image in bulk)
    assert [len(call.params["imageIds"]) for call in recorder.of("BatchGetImage")] == [100, 51]


def test_get_manifests_ignores_a_platform_manifest_answered_for_an_index(seed: MotoEcr, registry: EcrRegistry) -> None:
    """Without the index media types ECR answers an index with one platform's manifest, under that digest."""
    seed.create_repository(REPO)
    index = seed.push_index(REPO, "v1")

    assert registry.get_manifests(REPO, [index.digest], IMAGE_MEDIA_TYPES) == {}


# --- lifecycle policy ----------------------------------------------------------------------------


def test_lifecycle_policy_text_or_none(seed: MotoEcr, registry: EcrRegistry) -> None:
    seed.create_repository(REPO, lifecycle_policy=POLICY)
    seed.create_repository("team-a/api")

    assert registry.lifecycle_policy(REPO) == POLICY
    assert registry.lifecycle_policy("team-a/api") is None
    with pytest.raises(RepositoryGone):
        registry.lifecycle_policy("team-a/gone")


# --- deleting ----------------------------------------------------------------------------------------


def test_delete_images_sends_chunks_of_100_in_the_callers_order(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 260)
    order = [image.digest for image in reversed(bulk[:250])]

    outcome = registry.delete_images(REPO, order)

    assert outcome.done == tuple(order)
    assert outcome.already_gone == ()
    assert outcome.failed == ()
    sent = [
        [image_id["imageDigest"] for image_id in call.params["imageIds"]] for call in recorder.of("BatchDeleteImage")
    ]
    assert sent == [order[:100], order[100:200], order[200:]]
    assert seed.digests(REPO) == {image.digest for image in bulk[250:]}


def test_delete_index_before_its_children_in_one_call_even_though_ecr_refuses_referenced_children(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    index = seed.push_index(REPO, "v1", attestation=True)
    untagged = seed.push_image(REPO)  # untagged: moto alone would not report this deletion
    order = [index.digest, *(child.digest for child in index.children), untagged.digest]

    outcome = registry.delete_images(REPO, order)

    assert outcome.done == tuple(order)
    assert seed.digests(REPO) == set()
    assert len(recorder.of("BatchDeleteImage")) == 1


def test_delete_reports_referenced_children_and_missing_images_exactly_and_never_as_done(
    seed: MotoEcr, registry: EcrRegistry
) -> None:
    seed.create_repository(REPO)
    first = seed.push_index(REPO, "v1")
    shared = first.children[0]
    second = seed.push_index(REPO, "v2", children=[shared], platforms=["linux/amd64"])
    plain = seed.push_image(REPO, "v0")
    absent = "sha256:" + "f" * 64

    # the shared child stays referenced by the second index; the first's own child is listed before its index
    outcome = registry.delete_images(
        REPO, [first.children[1].digest, first.digest, shared.digest, absent, plain.digest]
    )

    assert outcome.done == (first.digest, plain.digest)
    assert outcome.already_gone == (absent,)
    assert codes_of(outcome.failed) == {
        first.children[1].digest: "ImageReferencedByManifestList",
        shared.digest: "ImageReferencedByManifestList",
    }
    assert all("manifest list" in failure.message for failure in outcome.failed)
    assert seed.digests(REPO) == {second.digest, shared.digest, first.children[1].digest}


def test_delete_reports_each_failure_code_ecr_gives(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity
) -> None:
    seed.create_repository(REPO)
    images = [seed.push_image(REPO, f"v{number}") for number in range(4)]
    fidelity.refuse_delete(images[1].digest, "KmsError", "KMS key disabled")
    fidelity.refuse_delete(images[2].digest, "ImageInaccessible")

    outcome = registry.delete_images(REPO, [image.digest for image in images])

    assert outcome.done == (images[0].digest, images[3].digest)
    assert outcome.failed == (
        ImageFailure(images[1].digest, "KmsError", "KMS key disabled"),
        ImageFailure(images[2].digest, "ImageInaccessible", "refused: ImageInaccessible"),
    )
    assert seed.digests(REPO) == {images[1].digest, images[2].digest}


def test_delete_image_ecr_does_not_confirm_is_not_done(registry: EcrRegistry) -> None:
    class Unconfirming:
        """An ECR answer that names a digest neither as deleted nor as failed."""

        def batch_delete_image(self, **request: Any) -> dict[str, Any]:
            return {"imageIds": [], "failures": []}

    digest = "sha256:" + "c" * 64
    outcome = EcrRegistry(Unconfirming(), ACCOUNT, REGION).delete_images(REPO, [digest])

    assert outcome.done == ()
    assert codes_of(outcome.failed) == {digest: "NotConfirmed"}


def test_delete_rides_out_a_throttling_burst(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 150)
    fidelity.throttle("BatchDeleteImage", times=MAX_ATTEMPTS - 1)

    outcome = registry.delete_images(REPO, [image.digest for image in bulk])

    assert len(outcome.done) == 150
    assert [call.attempts for call in recorder.of("BatchDeleteImage")] == [MAX_ATTEMPTS, 1]
    assert fidelity.served["BatchDeleteImage"] == MAX_ATTEMPTS + 1
    assert seed.digests(REPO) == set()


def test_delete_stops_at_a_throttling_storm_and_claims_nothing_of_it(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 250)
    order = [image.digest for image in bulk]
    fidelity.throttle("BatchDeleteImage", times=100, after=1)  # the first call passes, then nothing does

    outcome = registry.delete_images(REPO, order)

    assert outcome.done == tuple(order[:100])
    assert codes_of(outcome.failed) == {
        **dict.fromkeys(order[100:200], "ThrottlingException"),
        **dict.fromkeys(order[200:], "NotAttempted"),
    }
    assert digests_of(outcome.failed) == order[100:]
    calls = recorder.of("BatchDeleteImage")
    assert [(call.attempts, call.error_code) for call in calls] == [(1, None), (MAX_ATTEMPTS, "ThrottlingException")]
    assert seed.digests(REPO) == set(order[100:])


def test_delete_whose_answer_was_lost_and_retried_claims_nothing_and_says_it_is_gone_unconfirmed(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    images = [seed.push_image(REPO, f"v{number}") for number in range(3)]
    absent = "sha256:" + "e" * 64
    # ECR deletes, the answer is lost (a 500 after the deletion); botocore retries, ECR answers ImageNotFound.
    fidelity.fail("BatchDeleteImage", "InternalFailure", status=500, served=True)

    outcome = registry.delete_images(REPO, [*(image.digest for image in images), absent])

    assert outcome.done == ()
    assert outcome.already_gone == ()
    assert outcome.unconfirmed == (*(image.digest for image in images), absent)
    assert outcome.failed == ()
    assert [call.attempts for call in recorder.of("BatchDeleteImage")] == [2]
    assert seed.digests(REPO) == set()


def test_delete_of_an_image_gone_before_a_call_that_was_not_retried_is_already_gone(
    seed: MotoEcr, registry: EcrRegistry
) -> None:
    seed.create_repository(REPO)
    image = seed.push_image(REPO, "v1")
    absent = "sha256:" + "e" * 64

    outcome = registry.delete_images(REPO, [image.digest, absent])

    assert (outcome.done, outcome.already_gone, outcome.unconfirmed) == ((image.digest,), (absent,), ())


def test_delete_after_a_server_error_fails_the_rest(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 120)
    fidelity.fail("BatchDeleteImage", "AccessDeniedException", message="not authorized to perform ecr:BatchDeleteImage")

    outcome = registry.delete_images(REPO, [image.digest for image in bulk])

    assert outcome.done == ()
    assert [failure.code for failure in outcome.failed] == ["AccessDeniedException"] * 100 + ["NotAttempted"] * 20
    assert "ecr:BatchDeleteImage" in outcome.failed[0].message
    assert len(seed.digests(REPO)) == 120


def test_delete_in_a_deleted_repository_claims_nothing(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity
) -> None:
    seed.create_repository(REPO)
    bulk = seed.seed_images(REPO, 150)
    fidelity.before("BatchDeleteImage", lambda: seed.delete_repository(REPO), call=2)

    outcome = registry.delete_images(REPO, [image.digest for image in bulk])

    assert len(outcome.done) == 100
    assert set(codes_of(outcome.failed).values()) == {"RepositoryNotFoundException"}
    assert digests_of(outcome.failed) == [image.digest for image in bulk[100:]]


def test_delete_when_ecr_cannot_be_reached_claims_nothing(recorder: ApiCallRecorder) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = boto3.client(
        "ecr",
        region_name=REGION,
        endpoint_url=f"http://127.0.0.1:{port}",
        config=Config(retries={"mode": "standard", "total_max_attempts": 2}, connect_timeout=1, read_timeout=1),
    )
    recorder.attach(unreachable)
    digests = ["sha256:" + str(number) * 64 for number in range(3)]

    outcome = EcrRegistry(unreachable, ACCOUNT, REGION).delete_images(REPO, digests)

    assert outcome.done == ()
    assert [failure.code for failure in outcome.failed] == ["EndpointConnectionError"] * 3
    assert [call.error_code for call in recorder.of("BatchDeleteImage")] == ["EndpointConnectionError"]


def test_delete_sends_a_digest_given_twice_once(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    image = seed.push_image(REPO, "v1")

    outcome = registry.delete_images(REPO, [image.digest, image.digest])

    assert outcome.done == (image.digest,)
    [call] = recorder.of("BatchDeleteImage")
    assert call.params["imageIds"] == [{"imageDigest": image.digest}]


# --- archiving -------------------------------------------------------------------------------------


def test_archive_images_one_call_an_image(seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder) -> None:
    seed.create_repository(REPO)
    old, older = seed.push_image(REPO, "v1"), seed.push_image(REPO, "v0")
    absent = "sha256:" + "e" * 64

    outcome = registry.archive_images(REPO, [old.digest, absent, older.digest])

    assert outcome.done == (old.digest, older.digest)
    assert outcome.already_gone == (absent,)
    details = {detail.image_digest: detail for detail in registry.describe_images(REPO)}
    assert details[old.digest].image_status == "ARCHIVED"
    assert details[old.digest].last_archived_at is not None
    calls = recorder.of("UpdateImageStorageClass")
    assert [call.params["imageId"]["imageDigest"] for call in calls] == [old.digest, absent, older.digest]
    assert {call.params["targetStorageClass"] for call in calls} == {"ARCHIVE"}


def test_archive_refusal_of_one_image_does_not_stop_the_others(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity
) -> None:
    seed.create_repository(REPO)
    first, second = seed.push_image(REPO, "v1"), seed.push_image(REPO, "v2")
    fidelity.fail("UpdateImageStorageClass", "ImageStorageClassUpdateNotSupportedException")

    outcome = registry.archive_images(REPO, [first.digest, second.digest])

    assert codes_of(outcome.failed) == {first.digest: "ImageStorageClassUpdateNotSupportedException"}
    assert outcome.done == (second.digest,)


def test_archive_stops_at_a_throttling_storm(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    images = [seed.push_image(REPO, f"v{number}") for number in range(3)]
    fidelity.throttle("UpdateImageStorageClass", times=MAX_ATTEMPTS, after=1)

    outcome = registry.archive_images(REPO, [image.digest for image in images])

    assert outcome.done == (images[0].digest,)
    assert codes_of(outcome.failed) == {images[1].digest: "ThrottlingException", images[2].digest: "NotAttempted"}
    assert len(recorder.of("UpdateImageStorageClass")) == 2


# --- restoring -------------------------------------------------------------------------------------


def test_restore_images_starts_a_restore_of_each_archived_image(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    first, second = seed.push_image(REPO, "v1"), seed.push_image(REPO, "v2")
    for image in (first, second):
        seed.archive(REPO, image.digest, datetime(2026, 1, 1, tzinfo=UTC))
    absent = "sha256:" + "e" * 64

    outcome = registry.restore_images(REPO, [first.digest, absent, second.digest])

    assert outcome.done == (first.digest, second.digest)
    assert outcome.already_gone == (absent,)
    details = registry.describe_image_ids(REPO, [first.digest, second.digest])
    assert {detail.image_status for detail in details.values()} == {"ACTIVATING"}
    assert all(detail.last_activated_at is not None for detail in details.values())
    calls = recorder.of("UpdateImageStorageClass")
    assert [call.params["imageId"]["imageDigest"] for call in calls] == [first.digest, absent, second.digest]
    assert {call.params["targetStorageClass"] for call in calls} == {"STANDARD"}


def test_restore_of_an_active_image_is_already_done(seed: MotoEcr, registry: EcrRegistry) -> None:
    """An ACTIVATING answer is a restore under way whoever started it: ECR's answer does not tell them apart."""
    seed.create_repository(REPO)
    active, activating = seed.push_image(REPO, "v1"), seed.push_image(REPO, "v2")
    seed.archive(REPO, activating.digest, datetime(2026, 1, 1, tzinfo=UTC))
    registry.restore_images(REPO, [activating.digest])

    outcome = registry.restore_images(REPO, [active.digest, activating.digest])

    assert outcome.already == (active.digest,)
    assert outcome.done == (activating.digest,)
    assert outcome.failed == ()


def test_restore_refused_for_an_active_image_is_already_done_after_a_reread(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity, recorder: ApiCallRecorder
) -> None:
    """What ECR answers for an image that is not archived is not documented: a refusal of such an image is read
    again, and the image's status decides."""
    seed.create_repository(REPO)
    active, archived = seed.push_image(REPO, "v1"), seed.push_image(REPO, "v2")
    seed.archive(REPO, archived.digest, datetime(2026, 1, 1, tzinfo=UTC))
    fidelity.fail("UpdateImageStorageClass", "ImageStorageClassUpdateNotSupportedException", times=2)

    outcome = registry.restore_images(REPO, [active.digest, archived.digest])

    assert outcome.already == (active.digest,)
    assert codes_of(outcome.failed) == {archived.digest: "ImageStorageClassUpdateNotSupportedException"}
    assert len(recorder.of("DescribeImages")) == 2


def test_restore_stops_at_a_throttling_storm(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    images = [seed.push_image(REPO, f"v{number}") for number in range(3)]
    for image in images:
        seed.archive(REPO, image.digest, datetime(2026, 1, 1, tzinfo=UTC))
    fidelity.throttle("UpdateImageStorageClass", times=MAX_ATTEMPTS, after=1)

    outcome = registry.restore_images(REPO, [image.digest for image in images])

    assert outcome.done == (images[0].digest,)
    assert codes_of(outcome.failed) == {images[1].digest: "ThrottlingException", images[2].digest: "NotAttempted"}
    assert outcome.stopped


def test_emulator_finishes_a_restore_after_its_activation_delay(
    seed: MotoEcr, registry: EcrRegistry, fidelity: EcrFidelity
) -> None:
    seed.create_repository(REPO)
    image = seed.push_image(REPO, "v1")
    seed.archive(REPO, image.digest, datetime(2026, 1, 1, tzinfo=UTC))
    registry.restore_images(REPO, [image.digest])
    assert registry.describe_image_ids(REPO, [image.digest])[image.digest].image_status == "ACTIVATING"

    fidelity.activation_delay = timedelta(0)

    assert registry.describe_image_ids(REPO, [image.digest])[image.digest].image_status == "ACTIVE"


# --- tagging ---------------------------------------------------------------------------------------


def test_put_tag_adds_a_tag_with_the_byte_identical_manifest(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO)
    index = seed.push_index(REPO, "v1")
    docker = seed.push_image(REPO, "v2", media_type="application/vnd.docker.distribution.manifest.v2+json")
    manifests = registry.get_manifests(REPO, [index.digest, docker.digest], ALL_MEDIA_TYPES)

    assert registry.put_tag(REPO, manifests[index.digest], "keep-1764482400").status == "tagged"
    assert registry.put_tag(REPO, manifests[docker.digest], "keep-1764482401").status == "tagged"

    assert seed.tags(REPO, index.digest) == ["v1", "keep-1764482400"]
    assert seed.tags(REPO, docker.digest) == ["v2", "keep-1764482401"]
    assert len(seed.digests(REPO)) == 4  # the index, its two children, the Docker image: no new image
    first = recorder.of("PutImage")[0].params
    assert first["imageManifest"] == index.index.manifest
    assert first["imageDigest"] == index.digest
    assert first["imageManifestMediaType"] == "application/vnd.oci.image.index.v1+json"


def test_put_tag_already_on_the_image_is_already_tagged(seed: MotoEcr, registry: EcrRegistry) -> None:
    seed.create_repository(REPO)
    image = seed.push_image(REPO, "v1")
    manifest = registry.get_manifests(REPO, [image.digest], ALL_MEDIA_TYPES)[image.digest]

    assert registry.put_tag(REPO, manifest, "v1").status == "already-tagged"
    assert registry.put_tag(REPO, manifest, "keep-1").status == "tagged"
    assert registry.put_tag(REPO, manifest, "keep-1").status == "already-tagged"


def test_put_tag_refused_by_an_immutable_repository_is_reported_and_not_retried(
    seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder
) -> None:
    seed.create_repository(REPO, immutable=True)
    holder = seed.push_image(REPO, "keep-1764482400")
    image = seed.push_image(REPO, "v1")
    manifest = registry.get_manifests(REPO, [image.digest], ALL_MEDIA_TYPES)[image.digest]

    outcome = registry.put_tag(REPO, manifest, "keep-1764482400")

    assert outcome.status == "immutable"
    assert "immutable" in outcome.detail
    assert seed.tags(REPO, holder.digest) == ["keep-1764482400"]
    assert [call.attempts for call in recorder.of("PutImage")] == [1]
    assert registry.put_tag(REPO, manifest, "keep-1764482401").status == "tagged"  # a new tag is allowed


def test_put_tag_with_an_altered_manifest_fails_and_creates_nothing(seed: MotoEcr, registry: EcrRegistry) -> None:
    seed.create_repository(REPO)
    image = seed.push_image(REPO, "v1")
    reserialised = json.dumps(json.loads(image.manifest))  # what a json round trip does to the bytes
    altered = ImageManifest(image.digest, image.media_type, reserialised)

    outcome = registry.put_tag(REPO, altered, "keep-1")

    assert outcome.status == "failed"
    assert outcome.detail.startswith("ImageDigestDoesNotMatchException")
    assert seed.digests(REPO) == {image.digest}


def test_put_tag_in_a_deleted_repository_fails(seed: MotoEcr, registry: EcrRegistry) -> None:
    seed.create_repository(REPO)
    image = seed.push_image(REPO, "v1")
    manifest = registry.get_manifests(REPO, [image.digest], ALL_MEDIA_TYPES)[image.digest]
    seed.delete_repository(REPO)

    outcome = registry.put_tag(REPO, manifest, "keep-1")

    assert (outcome.status, outcome.detail.split(":")[0]) == ("failed", "RepositoryNotFoundException")


# --- the registry itself -------------------------------------------------------------------------


def connect(clients: ClientFactory, *, region: str | None = None, registry_id: str | None = None) -> EcrRegistry:
    """The registry of the given account, or of the caller's account (STS GetCallerIdentity) when none is named,
    in the given region or the environment's: as the functions' wiring and the CLI build theirs."""
    ecr = clients.client("ecr", region)
    resolved_region: str = ecr.meta.region_name
    if registry_id is None:
        registry_id = str(clients.client("sts", resolved_region).get_caller_identity()["Account"])
    return EcrRegistry(ecr, registry_id, resolved_region)


def test_connect_discovers_the_account_with_sts(clients: ClientFactory, recorder: ApiCallRecorder) -> None:
    registry = connect(clients)

    assert (registry.registry_id, registry.region) == (ACCOUNT, REGION)
    assert recorder.counts() == {"GetCallerIdentity": 1}


def test_connect_takes_the_registry_id_from_configuration_without_sts(
    clients: ClientFactory, recorder: ApiCallRecorder
) -> None:
    registry = connect(clients, region="us-east-2", registry_id="210987654321")

    assert (registry.registry_id, registry.region) == ("210987654321", "us-east-2")
    assert recorder.calls == []


def test_every_request_names_the_registry(seed: MotoEcr, registry: EcrRegistry, recorder: ApiCallRecorder) -> None:
    seed.create_repository(REPO, lifecycle_policy=POLICY)
    image = seed.push_image(REPO, "v1")
    registry.repository_names()
    registry.describe_images(REPO)
    registry.describe_image_ids(REPO, [image.digest])
    manifest = registry.get_manifests(REPO, [image.digest], ALL_MEDIA_TYPES)[image.digest]
    registry.lifecycle_policy(REPO)
    registry.put_tag(REPO, manifest, "keep-1")
    registry.archive_images(REPO, [image.digest])
    registry.delete_images(REPO, [image.digest])

    assert set(recorder.counts()) == {
        "DescribeRepositories",
        "DescribeImages",
        "BatchGetImage",
        "GetLifecyclePolicy",
        "PutImage",
        "UpdateImageStorageClass",
        "BatchDeleteImage",
    }
    assert all(call.params.get("registryId") == ACCOUNT for call in recorder.calls)
