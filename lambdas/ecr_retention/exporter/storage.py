"""Storing a manifest: one S3 PutObject, or a local file replaced in one rename. Never a partial write."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ecr_retention.exporter.errors import ExportFailed

# Standard retry mode backs off on throttling and transient errors, with a retry quota, unlike legacy.
S3_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=10,
    read_timeout=60,
)


def new_s3_client() -> Any:
    """An S3 client from the default credential chain: EKS Pod Identity in the cluster, a profile elsewhere."""
    return boto3.client("s3", config=S3_CLIENT_CONFIG)


def put_manifest(s3_client: Any, bucket: str, key: str, body: bytes) -> None:
    """One PutObject: readers see the previous manifest or this one, never a mix."""
    try:
        s3_client.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")
    except ClientError as error:
        details = error.response.get("Error", {})
        raise ExportFailed(
            f"upload to s3://{bucket}/{key} failed: {details.get('Code', 'error')}: {details.get('Message', '')}"
        ) from None
    except BotoCoreError as error:
        raise ExportFailed(f"upload to s3://{bucket}/{key} failed: {error}") from None


def write_manifest_file(path: str | Path, body: bytes) -> None:
    """Write beside the target, then rename over it, so a reader never sees half a manifest."""
    target = Path(path)
    try:
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    except OSError as error:
        raise ExportFailed(f"writing {path} failed: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(body)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o644)  # mkstemp creates 0600; a manifest is meant to be read by other tools
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise ExportFailed(f"writing {path} failed: {error.strerror or error}") from None
