"""Storing a manifest: one S3 PutObject, or a local file replaced in one rename. Never a partial write."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ecr_retention.domain.errors import InputError
from ecr_retention.kube.errors import ExportFailed

# Standard retry mode backs off on throttling and transient errors, with a retry quota, unlike legacy.
S3_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=10,
    read_timeout=60,
)


def new_s3_client() -> Any:
    """An S3 client from the default credential chain: EKS Pod Identity in the cluster, a profile elsewhere. Its
    Region is AWS_REGION (what deploy/cronjob.yaml sets), which boto3 alone ignores, else boto3's own (issue 43)."""
    return boto3.client("s3", region_name=os.environ.get("AWS_REGION") or None, config=S3_CLIENT_CONFIG)


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


def check_manifest_path(path: Path, label: str) -> None:
    """InputError when `path` can never take the manifest, so that it is said before the cluster is read.

    The manifest is written beside the target and renamed over it: the directory must exist and be
    writable, and the target must be a regular file (not a link to one) or absent. A later failure (a full disk,
    a directory removed meanwhile) is still an ExportFailed from `write_manifest_file`.
    """
    if path.is_dir():
        raise InputError(f"{label}: is a directory, not a file")
    # The rename would unlink what holds the name: a FIFO or a device would be destroyed, a symbolic link replaced
    # instead of the file it points to (and a link planted in a shared directory must not steer the write).
    if path.is_symlink():
        raise InputError(f"{label}: is a symbolic link; name a new or regular file")
    if path.exists() and not path.is_file():
        raise InputError(f"{label}: is not a regular file; name a new or regular file")
    directory = path.parent
    if not directory.exists():
        raise InputError(f"{label}: directory {directory} does not exist")
    if not directory.is_dir():
        raise InputError(f"{label}: {directory} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{label}: directory {directory} is not writable")


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
