"""S3Bucket against moto S3: paging, the read cap, missing keys, and S3 errors as StorageError."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from ecr_retention.aws.s3_bucket import S3Bucket, StorageError
from ecr_retention.domain.errors import InputError
from tests.integration.aws.conftest import REGION
from tests.integration.aws.storage.faults import count_calls, disconnect, fail_with

BUCKET = "inventory-123456789012-eu-west-1"
KIB = 1024


@pytest.fixture
def s3() -> Any:
    client = boto3.client("s3", region_name=REGION)
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    return client


@pytest.fixture
def bucket(s3: Any) -> S3Bucket:
    return S3Bucket(BUCKET, s3)


class SpiedBody:
    """A GetObject body that counts the bytes handed out."""

    def __init__(self, body: Any) -> None:
        self._body = body
        self.bytes_read = 0
        self.closed = False

    def read(self, amt: int | None = None) -> bytes:
        data: bytes = self._body.read(amt)
        self.bytes_read += len(data)
        return data

    def close(self) -> None:
        self.closed = True
        self._body.close()


class SpiedClient:
    """The moto client, with GetObject's body spied on and, optionally, its ContentLength withheld (as when the
    size cannot be trusted: the object was replaced by a larger one between listing and reading)."""

    def __init__(self, client: Any, *, hide_length: bool = False) -> None:
        self._client = client
        self._hide_length = hide_length
        self.bodies: list[SpiedBody] = []

    def get_object(self, **kwargs: Any) -> dict[str, Any]:
        response: dict[str, Any] = self._client.get_object(**kwargs)
        response["Body"] = SpiedBody(response["Body"])
        if self._hide_length:
            del response["ContentLength"]
        self.bodies.append(response["Body"])
        return response


class TestListObjects:
    def test_lists_every_key_under_the_prefix_across_pages(self, s3: Any, bucket: S3Bucket) -> None:
        for number in range(2_001):
            s3.put_object(Bucket=BUCKET, Key=f"in-use/cluster-{number:04}.json", Body=b"x" * (number % 7))
        s3.put_object(Bucket=BUCKET, Key="manifests/sha256-aa.json", Body=b"{}")
        calls = count_calls(s3)

        objects = bucket.list_objects("in-use/")

        assert len(objects) == 2_001
        assert objects["in-use/cluster-0000.json"] == 0
        assert objects["in-use/cluster-2000.json"] == 2000 % 7
        assert "manifests/sha256-aa.json" not in objects
        assert calls["ListObjectsV2"] == 3  # moto pages at 1,000 keys like S3: 1,000 + 1,000 + 1

    def test_an_empty_prefix_lists_nothing(self, bucket: S3Bucket) -> None:
        assert bucket.list_objects("reports/") == {}

    def test_a_missing_bucket_is_a_storage_error(self, s3: Any) -> None:
        with pytest.raises(StorageError) as raised:
            S3Bucket("no-such-bucket", s3).list_objects("in-use/")

        assert str(raised.value).startswith("s3://no-such-bucket/in-use/: ListObjectsV2 failed: NoSuchBucket")
        assert raised.value.code == "NoSuchBucket"


class TestRead:
    def test_reads_the_object(self, s3: Any, bucket: S3Bucket) -> None:
        s3.put_object(Bucket=BUCKET, Key="in-use/prod.json", Body=b'{"version": 1}')

        assert bucket.read("in-use/prod.json", max_bytes=64 * KIB) == b'{"version": 1}'

    def test_reads_an_object_of_exactly_the_limit(self, s3: Any, bucket: S3Bucket) -> None:
        s3.put_object(Bucket=BUCKET, Key="in-use/prod.json", Body=b"a" * (3 * KIB))

        assert bucket.read("in-use/prod.json", max_bytes=3 * KIB) == b"a" * (3 * KIB)

    def test_reads_an_empty_object(self, s3: Any, bucket: S3Bucket) -> None:
        s3.put_object(Bucket=BUCKET, Key="in-use/empty.json", Body=b"")

        assert bucket.read("in-use/empty.json", max_bytes=KIB) == b""

    def test_a_missing_key_is_none(self, bucket: S3Bucket) -> None:
        assert bucket.read("manifests/sha256-0000.json", max_bytes=KIB) is None

    def test_an_object_over_the_limit_is_refused_before_its_body_is_read(self, s3: Any) -> None:
        s3.put_object(Bucket=BUCKET, Key="in-use/huge.json", Body=b"a" * (70 * KIB))
        spied = SpiedClient(s3)

        with pytest.raises(InputError) as raised:
            S3Bucket(BUCKET, spied).read("in-use/huge.json", max_bytes=64 * KIB)

        assert str(raised.value) == (
            f"s3://{BUCKET}/in-use/huge.json: 70.0 KiB is larger than the 64 KiB limit; not read"
        )
        assert spied.bodies[0].bytes_read == 0
        assert spied.bodies[0].closed

    def test_the_limit_holds_when_the_announced_length_cannot_be_trusted(self, s3: Any) -> None:
        s3.put_object(Bucket=BUCKET, Key="in-use/grown.json", Body=b"a" * (5 * 1024 * KIB))
        spied = SpiedClient(s3, hide_length=True)

        with pytest.raises(InputError, match=r"grown\.json: the body is larger than the 64 KiB limit; not read$"):
            S3Bucket(BUCKET, spied).read("in-use/grown.json", max_bytes=64 * KIB)

        assert spied.bodies[0].bytes_read == 64 * KIB + 1
        assert spied.bodies[0].closed

    def test_an_object_within_the_limit_reads_whole_without_a_length(self, s3: Any) -> None:
        body = bytes(range(256)) * 4 * KIB  # 1 MiB: more than one read chunk
        s3.put_object(Bucket=BUCKET, Key="in-use/prod.json", Body=body + b"!")
        spied = SpiedClient(s3, hide_length=True)

        assert S3Bucket(BUCKET, spied).read("in-use/prod.json", max_bytes=len(body) + 1) == body + b"!"

    def test_access_denied_is_a_storage_error_not_a_missing_key(self, s3: Any, bucket: S3Bucket) -> None:
        # Without s3:ListBucket, S3 answers a missing key with 403 AccessDenied: that must not read as "absent".
        fail_with(s3, "GetObject", "AccessDenied", status=403, message="Access Denied")

        with pytest.raises(StorageError) as raised:
            bucket.read("in-use/prod.json", max_bytes=KIB)

        assert str(raised.value) == f"s3://{BUCKET}/in-use/prod.json: GetObject failed: AccessDenied: Access Denied"
        assert raised.value.code == "AccessDenied"

    def test_a_missing_bucket_is_an_error_not_a_missing_key(self, s3: Any) -> None:
        with pytest.raises(StorageError, match="NoSuchBucket"):
            S3Bucket("no-such-bucket", s3).read("in-use/prod.json", max_bytes=KIB)

    def test_an_unreachable_endpoint_is_a_storage_error(self, s3: Any, bucket: S3Bucket) -> None:
        disconnect(s3, "GetObject")

        with pytest.raises(StorageError, match=r"GetObject failed: EndpointConnectionError: Could not connect"):
            bucket.read("in-use/prod.json", max_bytes=KIB)


class TestWrite:
    def test_writes_the_body_with_its_content_type(self, s3: Any, bucket: S3Bucket) -> None:
        bucket.write("reports/2026/11/30/run-1.json", b'{"runId": "run-1"}')
        bucket.write("reports/2026/11/30/run-1.txt", b"summary", content_type="text/plain; charset=utf-8")

        stored = s3.get_object(Bucket=BUCKET, Key="reports/2026/11/30/run-1.json")
        assert stored["Body"].read() == b'{"runId": "run-1"}'
        assert stored["ContentType"] == "application/json"
        text = s3.head_object(Bucket=BUCKET, Key="reports/2026/11/30/run-1.txt")
        assert text["ContentType"] == "text/plain; charset=utf-8"

    def test_a_refused_write_is_a_storage_error(self, s3: Any, bucket: S3Bucket) -> None:
        fail_with(s3, "PutObject", "AccessDenied", status=403, message="Access Denied")

        with pytest.raises(StorageError, match=r"^s3://[^ ]+/reports/x\.json: PutObject failed: AccessDenied"):
            bucket.write("reports/x.json", b"{}")


def test_create_writes_only_when_no_object_has_the_key(bucket: S3Bucket, s3: Any) -> None:
    """S3's conditional write (If-None-Match: *), as the sentinel claims an event's one alert with it."""
    assert bucket.create("removals/app/claim.json", b"first") is True
    assert bucket.create("removals/app/claim.json", b"second") is False
    assert s3.get_object(Bucket=BUCKET, Key="removals/app/claim.json")["Body"].read() == b"first"


def test_create_refused_by_a_concurrent_conditional_write_is_another_writers(bucket: S3Bucket, s3: Any) -> None:
    fail_with(s3, "PutObject", "ConditionalRequestConflict", status=409)
    assert bucket.create("removals/app/claim.json", b"x") is False


def test_create_that_fails_otherwise_is_a_storage_error(bucket: S3Bucket, s3: Any) -> None:
    fail_with(s3, "PutObject", "AccessDenied", status=403)
    with pytest.raises(StorageError, match="PutObject"):
        bucket.create("removals/app/claim.json", b"x")
