"""The record of removals (`removals/`, domain/sentinel.py `Removal`): the sentinel writes one object per removal it
sees; the sentinel (other events of the same removal) and the run's in-use check (when and by what an image went)
read them. The one writer and the one reader of that prefix.

The record informs, it protects nothing: a record that cannot be read is left out and named, never a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date

from pydantic import ValidationError

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.sentinel import Removal
from ecr_retention.layout import removal_key, removals_prefix
from ecr_retention.ports import Bucket, StorageUnavailable

logger = logging.getLogger(__name__)

MAX_REMOVAL_BYTES = 64 * 1024  # one removal: a few hundred bytes, 100 tags at most
# The newest this many of a repository are read (the bucket's lifecycle expires older ones anyway), so a repository
# that a native policy emptied does not cost a report step minutes.
MAX_REMOVALS_READ = 1000
READ_THREADS = 16


def write_removal(bucket: Bucket, removal: Removal, position: int) -> str:
    """One object per removal, named by time, event and position: a retried event writes the same key again."""
    key = removal_key(removal.repository_name, removal.removed_at, removal.event_id, position)
    bucket.write(key, removal.model_dump_json(by_alias=True, exclude_none=True).encode())
    return key


@dataclass(frozen=True)
class RemovalsRead:
    """A repository's recorded removals, newest first, and the keys of those that could not be read."""

    removals: tuple[Removal, ...]
    unreadable: tuple[str, ...] = ()


def read_removals(bucket: Bucket, repository: str, days: Iterable[date] = ()) -> RemovalsRead:
    """The newest MAX_REMOVALS_READ removals recorded for a repository (of these days only, when given: the keys are
    dated). StorageUnavailable when the prefix cannot be listed."""
    prefix = removals_prefix(repository)
    prefixes = [f"{prefix}{day:%Y%m%d}" for day in days] or [prefix]
    keys = sorted({key for each in prefixes for key in bucket.list_objects(each)}, reverse=True)[:MAX_REMOVALS_READ]
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        read = list(pool.map(lambda key: _read_removal(bucket, key), keys))
    return RemovalsRead(
        removals=tuple(removal for removal in read if removal is not None),
        unreadable=tuple(key for key, removal in zip(keys, read, strict=True) if removal is None),
    )


def _read_removal(bucket: Bucket, key: str) -> Removal | None:
    try:
        body = bucket.read(key, max_bytes=MAX_REMOVAL_BYTES)
        return None if body is None else Removal.model_validate_json(body)
    except (StorageUnavailable, InputError, ValidationError) as error:
        logger.warning("the recorded removal %s cannot be read: %s", key, error)
        return None
