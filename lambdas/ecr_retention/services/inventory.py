"""Read the in-use inventory from the bucket: every `in-use/*.json`, size-capped before it is read, then
parsed by the same strict reader as `plan --manifests` uses offline (domain.inventory.read_inventory)."""

from __future__ import annotations

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory import Inventory, ManifestDocument, read_inventory
from ecr_retention.domain.limits import IN_USE_MANIFEST
from ecr_retention.layout import IN_USE_PREFIX
from ecr_retention.ports import Bucket

MISNAMED = "not stored as <cluster>.json, the only name a manifest is read under; rename or remove it"


def read_inventory_from_bucket(bucket: Bucket, prefix: str = IN_USE_PREFIX) -> Inventory:
    """An object that cannot be read (too large, not JSON, wrong schema, not named `<cluster>.json`) is a problem of
    the inventory named by its key, which blocks every deletion of the run: its images may be running."""
    documents: list[ManifestDocument] = []
    for key in sorted(bucket.list_objects(prefix)):
        if key.endswith("/"):  # a folder marker (the S3 console's "Create folder"): no object of anyone's
            continue
        if not key.endswith(".json"):  # a manifest under another name would protect nothing without a word
            documents.append((key, InputError(f"{key}: {MISNAMED}")))
            continue
        try:
            body = bucket.read(key, max_bytes=IN_USE_MANIFEST.max_bytes)
        except InputError as error:
            documents.append((key, error))
            continue
        if body is not None:  # replaced between the listing and the read: the next run sees it
            documents.append((key, body))
    return read_inventory(documents)
