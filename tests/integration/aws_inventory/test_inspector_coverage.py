"""Amazon Inspector's in-use reading (inspectorInUse, docs/aws-inventory.md "Amazon Inspector"): ListCoverage through
botocore's Stubber, which checks every request and response against the real inspector2 model (moto has no
inspector2 ListCoverage), read into `in-use/inspector-<account>-<region>.json`, and that manifest through the run:
an image only Inspector names is kept and listed under drift; a coverage that cannot be read is a gap, never an
emptied manifest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber

from ecr_retention.aws.clients import CLIENT_CONFIG, MAX_ATTEMPTS
from ecr_retention.aws.inspector_coverage import InspectorCoverage
from ecr_retention.domain.inventory.manifest import manifest_json, parse_manifest
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.reporting.run_report import report_of_plan
from ecr_retention.domain.reporting.summary import render_summary
from ecr_retention.services.aws_inventory import BucketManifestStore
from ecr_retention.services.inspector_inventory import collect_inspector_coverage, export_inspector_coverage
from ecr_retention.services.inventory import read_inventory_from_bucket
from ecr_retention.tables import describe_reason
from support.builders import ACCOUNT, HOST, NOW, REGION, action_of, config, decision_of, digest, image, repository
from support.builders import snapshot as snapshot_of
from support.fakes import MemoryBucket

NAME = f"inspector-{ACCOUNT}-{REGION}"
KEY = f"in-use/{NAME}.json"
LAST_IN_USE = datetime(2026, 11, 29, 10, 12, 37, tzinfo=UTC)
FILTERS = {
    "accountId": [{"comparison": "EQUALS", "value": ACCOUNT}],
    "resourceType": [
        {"comparison": "EQUALS", "value": "AWS_ECR_REPOSITORY"},
        {"comparison": "EQUALS", "value": "AWS_ECR_CONTAINER_IMAGE"},
    ],
}


def image_resource(seed: str, *, count: int | None = None, last: datetime | None = None) -> dict[str, Any]:
    """A CoveredResource of type AWS_ECR_CONTAINER_IMAGE, as ListCoverage answers (the model's shape)."""
    ecr_image: dict[str, Any] = {"tags": ["v1"], "imagePulledAt": LAST_IN_USE}
    if count is not None:
        ecr_image["inUseCount"] = count
    if last is not None:
        ecr_image["lastInUseAt"] = last
    return {
        "resourceType": "AWS_ECR_CONTAINER_IMAGE",
        "resourceId": f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/app/{digest(seed)}",
        "accountId": ACCOUNT,
        "scanType": "PACKAGE",
        "scanStatus": {"statusCode": "ACTIVE", "reason": "SUCCESSFUL"},
        "resourceMetadata": {
            "ecrRepository": {"name": "app", "scanFrequency": "CONTINUOUS_SCAN"},
            "ecrImage": ecr_image,
        },
    }


def repository_resource(name: str, status: str = "ACTIVE", reason: str = "SUCCESSFUL") -> dict[str, Any]:
    return {
        "resourceType": "AWS_ECR_REPOSITORY",
        "resourceId": f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{name}",
        "accountId": ACCOUNT,
        "scanType": "PACKAGE",
        "scanStatus": {"statusCode": status, "reason": reason},
        "resourceMetadata": {"ecrRepository": {"name": name, "scanFrequency": "CONTINUOUS_SCAN"}},
    }


@pytest.fixture
def inspector() -> Any:
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION)
    return session.client("inspector2", config=CLIENT_CONFIG)


@pytest.fixture
def stub(inspector: Any) -> Iterator[Stubber]:
    with Stubber(inspector) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def expect_pages(stub: Stubber, *pages: list[dict[str, Any]]) -> None:
    for number, resources in enumerate(pages):
        response: dict[str, Any] = {"coveredResources": resources}
        if number + 1 < len(pages):
            response["nextToken"] = f"page-{number + 2}"
        params: dict[str, Any] = {"filterCriteria": FILTERS, "maxResults": 200}
        if number:
            params["nextToken"] = f"page-{number + 1}"
        stub.add_response("list_coverage", response, params)


def collect(inspector: Any, *, at: datetime = NOW) -> Any:
    return collect_inspector_coverage(InspectorCoverage(inspector, REGION), ACCOUNT, REGION, generated_at=at)


def test_every_page_is_read_and_only_images_inspector_saw_in_use_are_written(inspector: Any, stub: Stubber) -> None:
    expect_pages(
        stub,
        [repository_resource("app"), image_resource("running", count=2, last=LAST_IN_USE)],
        [image_resource("stopped", count=0, last=LAST_IN_USE), image_resource("never", count=0)],
    )

    collection = collect(inspector)

    assert collection.problems == ()
    manifest = collection.manifest
    assert (manifest.cluster, manifest.complete, manifest.coverage_gaps) == (NAME, True, None)
    written = {(entry.digest, entry.in_use_count, entry.last_in_use_at) for entry in manifest.images}
    assert written == {(digest("running"), 2, LAST_IN_USE), (digest("stopped"), 0, LAST_IN_USE)}
    running = next(entry for entry in manifest.images if entry.digest == digest("running"))
    assert (running.image, running.source) == (f"{HOST}/app@{digest('running')}", "inspector")
    stored = json.loads(manifest_json(manifest))
    assert stored["images"][0]["inUseCount"] in (0, 2)
    assert {"lastInUseAt", "inUseCount"} <= set(stored["images"][0])


def test_a_throttled_listing_is_retried_and_the_reading_stays_complete(inspector: Any) -> None:
    # Not the Stubber: it answers before botocore's retries. The HTTP answers themselves, through the real parser.
    answers = [
        (400, {"__type": "ThrottlingException", "message": "Rate exceeded"}),
        (429, {"__type": "ThrottlingException", "message": "Rate exceeded"}),
        (200, {"coveredResources": [_wire(image_resource("running", count=1, last=LAST_IN_USE))]}),
    ]
    sent: list[str] = []

    def answer(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.url)
        status, body = answers[len(sent) - 1]
        return AWSResponse(request.url, status, {"content-type": "application/json"}, _Raw(json.dumps(body)))

    inspector.meta.events.register("before-send.inspector2.ListCoverage", answer)

    collection = collect(inspector)

    assert len(sent) == 3 <= MAX_ATTEMPTS
    assert collection.problems == ()
    assert collection.manifest.complete is True
    assert [entry.digest for entry in collection.manifest.images] == [digest("running")]


@pytest.mark.parametrize(
    ("code", "status"),
    [("AccessDeniedException", 403), ("ValidationException", 400)],
)
def test_a_coverage_that_cannot_be_read_is_a_gap_and_keeps_what_the_last_reading_named(
    inspector: Any, stub: Stubber, code: str, status: int
) -> None:
    bucket = MemoryBucket()
    store = BucketManifestStore(bucket)
    expect_pages(stub, [image_resource("running", count=1, last=LAST_IN_USE)])
    stub.add_client_error("list_coverage", code, "Inspector is not enabled", http_status_code=status)

    def reader(account: str, region: str) -> InspectorCoverage:
        return InspectorCoverage(inspector, region)

    [first] = export_inspector_coverage(reader, ACCOUNT, [REGION], store, clock=lambda: NOW - timedelta(hours=1))
    [second] = export_inspector_coverage(reader, ACCOUNT, [REGION], store, clock=lambda: NOW)

    assert first.problems == ()
    assert second.store_error is None
    stored = parse_manifest(KEY, bucket.objects[KEY])
    assert stored.complete is False
    assert [entry.digest for entry in stored.images] == [digest("running")]  # carried over, still protecting
    [gap] = stored.coverage_gaps or ()
    assert gap.startswith(f"Inspector in {ACCOUNT} {REGION}: ListCoverage failed: {code}")
    assert code in gap
    assert "is Inspector enabled" in gap
    assert second.problems[0] == gap


def test_no_coverage_at_all_and_an_unmonitored_repository_are_gaps(inspector: Any, stub: Stubber) -> None:
    expect_pages(stub, [])
    expect_pages(stub, [repository_resource("app"), repository_resource("batch", "INACTIVE", "SCAN_FREQUENCY_MANUAL")])

    nothing = collect(inspector).manifest
    unmonitored = collect(inspector).manifest

    assert nothing.complete is True
    assert nothing.images == ()
    assert nothing.coverage_gaps == (
        f"Inspector in {ACCOUNT} {REGION}: no ECR repository or image is covered; is enhanced scanning on for this "
        "registry?",
    )
    assert unmonitored.coverage_gaps == (
        f"Inspector in {ACCOUNT} {REGION}: repository batch is not covered (INACTIVE, SCAN_FREQUENCY_MANUAL)",
    )


def test_a_stubbed_coverage_protects_an_image_no_manifest_names_and_the_report_lists_it_under_drift(
    inspector: Any, stub: Stubber
) -> None:
    # Given Inspector counts two tasks running app's image "a", which no cluster's manifest names,
    expect_pages(stub, [repository_resource("app"), image_resource("a", count=2, last=LAST_IN_USE)])
    bucket = MemoryBucket()
    export_inspector_coverage(
        lambda account, region: InspectorCoverage(inspector, region), ACCOUNT, [REGION], BucketManifestStore(bucket)
    )
    snap = snapshot_of(
        repository("app", image("a", "v1", age=timedelta(days=200)), image("b", "v2", age=timedelta(days=200)))
    )
    rules = config([{"delete": {"tags": ["*"], "older_than": "30d"}}])

    # when the run reads the bucket,
    plan = plan_registry(rules, snap, read_inventory_from_bucket(bucket), NOW)

    # then "a" is kept for Inspector's reading, "b" goes, and the report names "a" under drift.
    assert action_of(plan, "app", "a") == "keep"
    assert action_of(plan, "app", "b") == "delete"
    reason = decision_of(plan, "app", "a").main_reason
    assert describe_reason(reason) == "in-use: Inspector: in use by 2 (last 2026-11-29 10:12 UTC)"
    report = report_of_plan(plan, run_id="run-1", manifests=())
    [drift] = [warning for warning in report.warnings if warning.startswith("drift: ")]
    assert drift.startswith(f"drift: app@{digest('a')}: Inspector: in use by 2 (last 2026-11-29 10:12 UTC), but no ")
    assert drift in render_summary(report)[1]


class _Raw:
    """An HTTP body as botocore's AWSResponse reads it."""

    def __init__(self, text: str) -> None:
        self._body = text.encode()

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        body, self._body = self._body, b""
        return body


def _wire(resource: dict[str, Any]) -> dict[str, Any]:
    """A resource as the rest-json wire carries it: timestamps as epoch seconds."""
    return json.loads(json.dumps(resource, default=lambda moment: moment.timestamp()))
