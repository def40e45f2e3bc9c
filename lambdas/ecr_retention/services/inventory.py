"""Read the in-use inventory from the bucket: every `in-use/*.json`, size-capped before it is read, then
parsed by the same strict reader as `plan --manifests` uses offline."""

from __future__ import annotations

from dataclasses import replace

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory import Inventory, read_inventory
from ecr_retention.domain.limits import MAX_MANIFEST_BYTES
from ecr_retention.ports import Bucket

IN_USE_PREFIX = "in-use/"


def read_inventory_from_bucket(bucket: Bucket, prefix: str = IN_USE_PREFIX) -> Inventory:
    """An object that cannot be read (too large, not JSON, wrong schema) becomes a problem of the inventory,
    which blocks every deletion of the run: its images may be running."""
    documents: list[tuple[str, bytes]] = []
    problems: dict[str, str] = {}
    for key in sorted(bucket.list_objects(prefix)):
        if not key.endswith(".json"):
            continue
        try:
            body = bucket.read(key, max_bytes=MAX_MANIFEST_BYTES)
        except InputError as error:
            problems[key] = str(error)
            continue
        if body is not None:  # replaced between the listing and the read: the next run sees it
            documents.append((key, body))
    inventory = read_inventory(documents)
    if not problems:
        return inventory
    return replace(inventory, problems={**inventory.problems, **problems})
