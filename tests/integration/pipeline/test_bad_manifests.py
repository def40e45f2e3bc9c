"""Bad in-use manifests in the bucket, read by a real run (run_pipeline through the real adapters on faithful moto):
truncated, over the size cap, of the wrong schema, dated in the future, stored under the wrong name, or naming
images that are not image references. Each blocks the whole run with a reason that names the object (or the
cluster, for what its file declares), and the run makes no mutating ECR call: nothing is deleted or archived.

The cap holds before parsing: an object over it is refused from its announced size, and not one byte of its
body is read."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from moto import mock_aws

from ecr_retention.domain.limits import IN_USE_MANIFEST
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.services.run import run_pipeline
from ecr_retention_dev.emulator.fidelity import EcrFidelity
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.scenario import in_use_entry
from support.pipeline_harness import NOW, Pipeline, build_pipeline
from support.realistic_registry import BUCKET, HOST, in_use_manifests

PROD = "in-use/prod.json"
# app alone: its plan deletes 10 images and archives 6, and a blocked run must do neither. The whole registry
# would cost a second a case and prove nothing more: a blocked run blocks every repository alike.
REPOSITORIES = ["app"]


@pytest.fixture(scope="module")
def registry() -> Iterator[Pipeline]:
    """One realistic registry for the module: a blocked run changes nothing in it (each test asserts so)."""
    with mock_aws(), EcrFidelity() as fidelity:
        yield build_pipeline(fidelity)


@pytest.fixture
def pipeline(registry: Pipeline) -> Pipeline:
    """The module's registry with the bucket's in-use/ as seeded, no report or message left, calls uncounted."""
    seeded = in_use_manifests(registry.seeded)
    for key in registry.keys("in-use/"):
        if key not in seeded:
            registry.s3.delete_object(Bucket=BUCKET, Key=key)
    for key, body in seeded.items():
        registry.s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    registry.messages()
    registry.recorder.clear()
    return registry


def prod_manifest(pipeline: Pipeline) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(pipeline.s3.get_object(Bucket=BUCKET, Key=PROD)["Body"].read())
    return document


def put(pipeline: Pipeline, key: str, body: bytes | dict[str, Any]) -> None:
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    pipeline.s3.put_object(Bucket=BUCKET, Key=key, Body=data)


def with_field(**fields: Any) -> Callable[[Pipeline], None]:
    def change(pipeline: Pipeline) -> None:
        put(pipeline, PROD, {**prod_manifest(pipeline), **fields})

    return change


def without_field(name: str) -> Callable[[Pipeline], None]:
    def change(pipeline: Pipeline) -> None:
        document = prod_manifest(pipeline)
        del document[name]
        put(pipeline, PROD, document)

    return change


def truncated(pipeline: Pipeline) -> None:
    body = pipeline.s3.get_object(Bucket=BUCKET, Key=PROD)["Body"].read()
    put(pipeline, PROD, body[: len(body) // 2])


def moved(to: str) -> Callable[[Pipeline], None]:
    """prod's manifest stored under another key, and not under its own."""

    def change(pipeline: Pipeline) -> None:
        put(pipeline, to, pipeline.s3.get_object(Bucket=BUCKET, Key=PROD)["Body"].read())
        pipeline.s3.delete_object(Bucket=BUCKET, Key=PROD)

    return change


def stray(key: str) -> Callable[[Pipeline], None]:
    """A cluster's manifest stored beside the others under a name that is not `<cluster>.json`."""

    def change(pipeline: Pipeline) -> None:
        put(pipeline, key, {**prod_manifest(pipeline), "cluster": "staging"})

    return change


def with_images(*images: dict[str, Any]) -> Callable[[Pipeline], None]:
    def change(pipeline: Pipeline) -> None:
        document = prod_manifest(pipeline)
        put(pipeline, PROD, {**document, "images": [*document["images"], *images]})

    return change


CASES: list[tuple[str, Callable[[Pipeline], None], str]] = [
    ("truncated", truncated, "in-use/prod.json: unreadable in-use manifest: invalid JSON"),
    ("not UTF-8", lambda p: put(p, PROD, b"\xff\xfe{}"), "in-use/prod.json: unreadable in-use manifest: not UTF-8"),
    ("a list", lambda p: put(p, PROD, b"[]"), "in-use/prod.json: unreadable in-use manifest: an in-use manifest is"),
    ("schema 2", with_field(schemaVersion=2), "in-use/prod.json: unreadable in-use manifest: schemaVersion"),
    ("no images", without_field("images"), "in-use/prod.json: unreadable in-use manifest: images"),
    ("complete as text", with_field(complete="true"), "in-use/prod.json: unreadable in-use manifest: complete"),
    (
        "a digest that is none",
        with_images({**in_use_entry(f"{HOST}/app:v1.0.1", "shop", "Deployment/x"), "digest": "v1.0.1"}),
        "in-use/prod.json: unreadable in-use manifest: images",
    ),
    ("incomplete", with_field(complete=False), "cluster prod: in-use manifest is incomplete"),
    (
        "dated a day ahead",
        with_field(generatedAt=(NOW + timedelta(days=1)).isoformat()),
        "cluster prod: in-use manifest is dated",
    ),
    ("stale", with_field(generatedAt=(NOW - timedelta(hours=7)).isoformat()), "cluster prod: in-use manifest is 7h"),
    (
        "declaring another cluster",
        with_field(cluster="staging"),
        "cluster prod: no in-use manifest (in-use/prod.json declares cluster staging)",
    ),
    ("stored as .JSON", moved("in-use/prod.JSON"), "in-use/prod.JSON: unreadable in-use manifest: not stored as"),
    ("stored as .json.bak", moved("in-use/prod.json.bak"), "in-use/prod.json.bak: unreadable in-use manifest"),
    ("a stray .yaml beside", stray("in-use/staging.yaml"), "in-use/staging.yaml: unreadable in-use manifest"),
    (
        "an ECR image that is no reference",
        with_images(in_use_entry(f"{HOST}/app:not a tag!", "shop", "Deployment/broken")),
        "cluster prod:",
    ),
]


def registry_now(pipeline: Pipeline) -> dict[str, Any]:
    """Every image's detail, from moto's backend (no API call to count or wait for)."""
    return MotoEcr(pipeline.ecr).state(pipeline.seeded.repositories)


def assert_blocked_and_untouched(pipeline: Pipeline, report: RunReport, reason: str) -> None:
    assert report.outcome == "blocked"
    assert [r.repository_name for r in report.repositories] == REPOSITORIES
    assert any(line.startswith(reason) for line in report.blocked), report.blocked
    assert {r.outcome for r in report.repositories} == {"blocked"}
    assert all(r.deleted == () and r.archived == () for r in report.repositories)
    assert pipeline.recorder.mutating("ecr") == []


@pytest.mark.parametrize(("case", "spoil", "reason"), CASES, ids=[case for case, _, _ in CASES])
def test_a_bad_manifest_in_the_bucket_blocks_the_run_by_name_and_nothing_is_deleted(
    pipeline: Pipeline, case: str, spoil: Callable[[Pipeline], None], reason: str
) -> None:
    before = registry_now(pipeline)
    spoil(pipeline)

    report = run_pipeline(pipeline.config(dry_run=False), pipeline.adapters(), patterns=REPOSITORIES)

    assert_blocked_and_untouched(pipeline, report, reason)
    assert registry_now(pipeline) == before
    [message] = pipeline.messages()
    assert message["Subject"].startswith("ecr-retention run BLOCKED: nothing deleted")


class CountingBody:
    """A GetObject body that counts the bytes handed out."""

    def __init__(self, body: Any) -> None:
        self._body = body
        self.read_bytes = 0
        self.closed = False

    def read(self, amt: int | None = None) -> bytes:
        data: bytes = self._body.read(amt)
        self.read_bytes += len(data)
        return data

    def close(self) -> None:
        self.closed = True
        self._body.close()


@pytest.mark.slow
def test_a_manifest_over_the_cap_is_refused_before_a_byte_of_it_is_read(pipeline: Pipeline) -> None:
    before = registry_now(pipeline)
    put(pipeline, "in-use/dev.json", b" " * (IN_USE_MANIFEST.max_bytes + 1))
    bodies: list[tuple[int, CountingBody]] = []  # (announced length, body) of every object the run reads

    def count(parsed: dict[str, Any], **_: Any) -> None:
        if "Body" not in parsed:  # NoSuchKey: a manifest cache miss
            return
        body = CountingBody(parsed["Body"])
        bodies.append((int(parsed["ContentLength"]), body))
        parsed["Body"] = body

    adapters = pipeline.adapters()  # the run's S3 client is the factory's: count what it reads
    pipeline.clients.client("s3", "eu-west-1").meta.events.register("after-call.s3.GetObject", count)

    report = run_pipeline(pipeline.config(dry_run=False), adapters, patterns=REPOSITORIES)

    assert_blocked_and_untouched(pipeline, report, "in-use/dev.json: unreadable in-use manifest: ")
    assert any("64.0 MiB is larger than the 64 MiB limit; not read" in line for line in report.blocked)
    [oversized] = [body for length, body in bodies if length > IN_USE_MANIFEST.max_bytes]
    assert oversized.read_bytes == 0
    assert oversized.closed
    assert sum(body.read_bytes for _, body in bodies) < 1024 * 1024  # prod's manifest and the index cache
    assert registry_now(pipeline) == before
