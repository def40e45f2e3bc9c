"""The inventory bucket on S3 (ports.Bucket): list, capped reads, whole-object writes."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ecr_retention.aws.errors import AWS_CALL_ERRORS, AwsCallError, AwsCallFailed, describe_failure, error_code
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.reporting.sizes import human_bytes
from ecr_retention.ports import DeleteMarker, StorageUnavailable

# GetObject answers NoSuchKey for a missing key only when the caller may ListBucket; without that permission
# S3 answers AccessDenied, which is reported as a StorageError rather than mistaken for "absent".
MISSING_KEY_CODES = frozenset({"NoSuchKey", "404"})
READ_CHUNK_BYTES = 1024 * 1024
# A conditional write (If-None-Match: *) refused: an object has the key (412), or another conditional write of it is
# under way (409): either way, another writer has it.
CREATE_REFUSED_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "412", "409"})


class StorageError(AwsCallFailed, StorageUnavailable):
    """An S3 call on the bucket failed (after botocore's retries)."""


class S3Bucket:
    """One bucket through an injected boto3 S3 client (the client's Config carries the retry policy)."""

    def __init__(self, name: str, s3_client: Any) -> None:
        self._name = name
        self._client = s3_client

    @property
    def name(self) -> str:
        return self._name

    def list_objects(self, prefix: str) -> dict[str, int]:
        objects: dict[str, int] = {}
        try:
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self._name, Prefix=prefix):
                for entry in page.get("Contents", []):
                    objects[entry["Key"]] = int(entry["Size"])
        except AWS_CALL_ERRORS as error:
            raise self._failure("ListObjectsV2", prefix, error) from None
        return objects

    def read(self, key: str, *, max_bytes: int) -> bytes | None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, not {max_bytes}")
        response = self._get_object(key)
        if response is None:
            return None
        body = response["Body"]
        try:
            length = response.get("ContentLength")
            if length is not None and length > max_bytes:
                raise self._too_large(key, human_bytes(length), max_bytes)
            data = self._read_at_most(body, max_bytes + 1)
        except BotoCoreError as error:  # the connection broke or timed out while streaming the body
            raise self._failure("GetObject", key, error) from None
        finally:
            body.close()
        if len(data) > max_bytes:  # ContentLength absent or wrong: never hold more than the cap plus one byte
            raise self._too_large(key, "the body", max_bytes)
        return data

    def _get_object(self, key: str) -> Any:
        """GetObject's answer, None when there is no such key."""
        try:
            return self._client.get_object(Bucket=self._name, Key=key)
        except ClientError as error:
            if error_code(error) in MISSING_KEY_CODES:
                return None
            raise self._failure("GetObject", key, error) from None
        except AWS_CALL_ERRORS as error:
            raise self._failure("GetObject", key, error) from None

    def delete_marker(self, key: str) -> DeleteMarker | None:
        """S3 lists a key's versions and delete markers newest first, beside those of the keys it begins: the first
        entry of the key itself marked IsLatest is its latest version."""
        try:
            for page in self._client.get_paginator("list_object_versions").paginate(Bucket=self._name, Prefix=key):
                latest = _latest_of(page, key)
                if latest is not None:
                    kind, entry = latest
                    return DeleteMarker(entry["VersionId"], entry["LastModified"]) if kind == "DeleteMarkers" else None
        except AWS_CALL_ERRORS as error:
            raise self._failure("ListObjectVersions", key, error) from None
        return None

    def write(self, key: str, body: bytes, *, content_type: str = "application/json") -> None:
        try:
            self._client.put_object(Bucket=self._name, Key=key, Body=body, ContentType=content_type)
        except AWS_CALL_ERRORS as error:
            raise self._failure("PutObject", key, error) from None

    def delete(self, key: str) -> None:
        try:
            self._client.delete_object(Bucket=self._name, Key=key)
        except AWS_CALL_ERRORS as error:
            raise self._failure("DeleteObject", key, error) from None

    def create(self, key: str, body: bytes, *, content_type: str = "application/json") -> bool:
        try:
            self._client.put_object(Bucket=self._name, Key=key, Body=body, ContentType=content_type, IfNoneMatch="*")
        except ClientError as error:
            if error_code(error) in CREATE_REFUSED_CODES:
                return False
            raise self._failure("PutObject", key, error) from None
        except AWS_CALL_ERRORS as error:
            raise self._failure("PutObject", key, error) from None
        return True

    @staticmethod
    def _read_at_most(body: Any, limit: int) -> bytes:
        """Up to `limit` bytes; read(amt) may return less than asked before the end, so read until either."""
        chunks: list[bytes] = []
        total = 0
        while total < limit:
            chunk = body.read(min(READ_CHUNK_BYTES, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)

    def _too_large(self, key: str, what: str, max_bytes: int) -> InputError:
        limit = human_bytes(max_bytes).replace(".0 ", " ")
        return InputError(f"s3://{self._name}/{key}: {what} is larger than the {limit} limit; not read")

    def _failure(self, operation: str, key: str, error: AwsCallError) -> StorageError:
        code, description = describe_failure(operation, error)
        return StorageError(f"s3://{self._name}/{key}: {description}", code=code)


def _latest_of(page: dict[str, Any], key: str) -> tuple[str, dict[str, Any]] | None:
    """The key's latest version on one page of ListObjectVersions, with the list it is in (DeleteMarkers, Versions)."""
    latest = [
        (kind, entry)
        for kind in ("DeleteMarkers", "Versions")
        for entry in page.get(kind, [])
        if entry["Key"] == key and entry.get("IsLatest")
    ]
    return latest[0] if latest else None
