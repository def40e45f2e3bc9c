"""Whether a kept snapshot is stored already is told from the part of the stored bytes a review reads, compared as
bytes, and the few after it read as JSON (services/swept.py WrittenSnapshot.read_at_of), not by reading the whole
object as JSON. The write decision must stay what it was: each stored object below, and objects edited at random, is
kept or rewritten exactly as the comparison before it decided (`decided_before`: the whole object read as JSON and
written again), with the same time of reading found; and what is written is the same bytes."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import RepositorySnapshot
from ecr_retention.domain.registry.swept import SweptRepository
from ecr_retention.services.swept import (
    SNAPSHOT_REWRITTEN_AFTER,
    WrittenSnapshot,
    _fields,
    _kept_as_it_is,
    _read_recently,
    keep_snapshot,
    read_swept,
)
from support.builders import ACCOUNT, NOW, REGION
from support.fakes import MemoryBucket
from tests.unit.services.test_snapshot_kept_compared_as_written import KEY, REPLICATED, snapshot, swept

EARLIER = NOW - timedelta(hours=1)


def written_as_before(found: bytes, fields: dict[str, Any]) -> object | None:
    """The fast comparison as it was before: the whole stored object read as JSON, written again with its own time
    of reading and run, and compared byte for byte."""
    try:
        data = json.loads(found)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("runId"), str) or "readAt" not in data:
        return None
    read_at: object = data["readAt"]
    return read_at if json.dumps({**fields, "readAt": read_at, "runId": data["runId"]}).encode() == found else None


def decided_before(found: bytes | None, fresh: SweptRepository) -> bool:
    """Whether the comparison before kept the stored object (True) or rewrote it."""
    if found is None:
        return False
    fields = _fields(fresh)
    read_at = written_as_before(found, fields)
    if read_at is not None:
        return _read_recently(read_at, fresh.read_at)
    try:
        kept = read_swept(f"s3://inventory/{KEY}", found)
    except InputError:
        return False
    if fresh.read_at - kept.read_at >= SNAPSHOT_REWRITTEN_AFTER:
        return False
    return _fields(kept.model_copy(update={"read_at": fresh.read_at, "run_id": fresh.run_id})) == fields


def decided_now(found: bytes | None, fresh: SweptRepository) -> bool:
    bucket = MemoryBucket()
    if found is not None:
        bucket.objects[KEY] = found
    return _kept_as_it_is(bucket, KEY, fresh, WrittenSnapshot.of(fresh))


def body(stored: SweptRepository, **changes: Any) -> bytes:
    fields = _fields(stored)
    fields.update(changes)
    return json.dumps(fields).encode()


def with_image(stored: SweptRepository, index: int, **changes: Any) -> bytes:
    """The stored object with one image's fields changed (fields a review reads)."""
    fields = _fields(stored)
    images = fields["repositories"][0]["imageDetails"]
    images[index] = {**images[index], **changes}
    return json.dumps(fields).encode()


def fewer() -> RepositorySnapshot:
    return snapshot().model_copy(update={"image_details": snapshot().image_details[1:]})


def read_at_nested(depth: int) -> bytes:
    """The stored object with a readAt nested deeper than the JSON parser goes (it raises RecursionError)."""
    text = json.dumps({**_fields(swept(EARLIER, "earlier")), "readAt": "nested"})
    return text.replace('"nested"', "[" * depth + "]" * depth).encode()


def fresh_swept(*, problem: str | None = None) -> SweptRepository:
    return swept(NOW, "this-run", problem=problem)


STORED: dict[str, Any] = {
    "none": lambda: None,
    "as written an hour before": lambda: body(swept(EARLIER, "earlier")),
    "as written just under a week before": lambda: body(
        swept(NOW - SNAPSHOT_REWRITTEN_AFTER + timedelta(microseconds=1), "earlier")
    ),
    "as written a week before": lambda: body(swept(NOW - SNAPSHOT_REWRITTEN_AFTER, "earlier")),
    "as written by this very run": lambda: body(swept(NOW, "this-run")),
    "read in the future": lambda: body(swept(NOW + timedelta(days=3), "later")),
    # A change in a field a review reads, and only there:
    "an image's tag changed": lambda: with_image(swept(EARLIER, "earlier"), 1, imageTags=["v2", "stable"]),
    "an image's last pull changed": lambda: with_image(
        swept(EARLIER, "earlier"), 0, lastRecordedPullTime="2026-11-29T01:00:00Z"
    ),
    "an image archived": lambda: with_image(swept(EARLIER, "earlier"), 0, imageStatus="ARCHIVED"),
    "an image's size changed by one byte": lambda: with_image(swept(EARLIER, "earlier"), 0, imageSizeInBytes=1),
    "an image fewer": lambda: body(swept(EARLIER, "earlier").model_copy(update={"repositories": (fewer(),)})),
    "another registry id": lambda: body(swept(EARLIER, "earlier"), registryId="210987654321"),
    "another replication": lambda: body(swept(EARLIER, "earlier"), replication={"rules": []}),
    "the replication rules unread": lambda: body(swept(EARLIER, "earlier", problem="AccessDenied")),
    "another reason the replication rules were unread": lambda: body(swept(EARLIER, "earlier", problem="Throttled")),
    # When and by which run, in forms the fast comparison does not write:
    "read at in another offset's form": lambda: body(swept(EARLIER, "earlier"), readAt=EARLIER.isoformat()),
    "read at a time no tool writes": lambda: body(swept(EARLIER, "earlier"), readAt="yesterday"),
    "read at in epoch seconds": lambda: body(swept(EARLIER, "earlier"), readAt=EARLIER.timestamp()),
    "read at null": lambda: body(swept(EARLIER, "earlier"), readAt=None),
    "read at NaN": lambda: body(swept(EARLIER, "earlier"), readAt=float("nan")),
    "read at a list": lambda: body(swept(EARLIER, "earlier"), readAt=[EARLIER.isoformat()]),
    "read at nested beyond the parser's depth": lambda: read_at_nested(100_000),
    "read at missing": lambda: json.dumps(
        {k: v for k, v in _fields(swept(EARLIER, "earlier")).items() if k != "readAt"}
    ).encode(),
    "a run id that is a number": lambda: body(swept(EARLIER, "earlier"), runId=7),
    "a run id that is null": lambda: body(swept(EARLIER, "earlier"), runId=None),
    "a run id with characters to escape": lambda: body(swept(EARLIER, "earlier"), runId='run "é"\n'),
    "a run id missing": lambda: json.dumps(
        {k: v for k, v in _fields(swept(EARLIER, "earlier")).items() if k != "runId"}
    ).encode(),
    # Forms json.dumps does not write:
    "a key written twice": lambda: body(swept(EARLIER, "earlier"))[:-1] + b', "runId": "again"}',
    "read at written twice": lambda: body(swept(EARLIER, "earlier"))[:-1] + b', "readAt": "2026-11-30T05:00:00Z"}',
    "a field more at the end": lambda: body(swept(EARLIER, "earlier"))[:-1] + b', "note": 1}',
    "a line break at the end": lambda: body(swept(EARLIER, "earlier")) + b"\n",
    "no space after a colon at the end": lambda: body(swept(EARLIER, "earlier")).replace(b'"runId": "', b'"runId":"'),
    "a byte order mark": lambda: b"\xef\xbb\xbf" + body(swept(EARLIER, "earlier")),
    "UTF-16": lambda: json.dumps(_fields(swept(EARLIER, "earlier"))).encode("utf-16"),
    "not ASCII-escaped": lambda: json.dumps(
        {**_fields(swept(EARLIER, "earlier")), "runId": "run-é"}, ensure_ascii=False
    ).encode(),
    "another writer's indentation and key order": lambda: json.dumps(
        _fields(swept(EARLIER, "earlier")), indent=2, sort_keys=True
    ).encode(),
    "cut short in the images": lambda: body(swept(EARLIER, "earlier"))[:200],
    "cut short after the images": lambda: body(swept(EARLIER, "earlier"))[:-5],
    "not UTF-8 after the images": lambda: body(swept(EARLIER, "earlier")).replace(b'"earlier"', b'"earl\xffier"'),
    "no JSON": lambda: b"{not json",
    "JSON but no object": lambda: b"[]",
    "empty": lambda: b"",
}


@pytest.mark.parametrize("problem", [None, "AccessDenied"])
@pytest.mark.parametrize("stored", sorted(STORED))
def test_the_stored_snapshot_is_kept_or_rewritten_as_the_comparison_before_decided(
    stored: str, problem: str | None
) -> None:
    found = STORED[stored]()
    fresh = fresh_swept(problem=problem)

    assert decided_now(found, fresh) == decided_before(found, fresh)
    if found is not None:
        told, before = WrittenSnapshot.of(fresh).read_at_of(found), written_as_before(found, _fields(fresh))
        assert repr(told) == repr(before)  # the same time of reading found (NaN included), or None alike


def test_an_unchanged_snapshot_is_kept_and_one_changed_only_where_a_review_reads_is_rewritten() -> None:
    fresh = fresh_swept()

    assert decided_now(STORED["as written an hour before"](), fresh)
    assert WrittenSnapshot.of(fresh).read_at_of(STORED["as written an hour before"]()) == "2026-11-30T05:00:00Z"
    for changed in ("an image's tag changed", "an image's last pull changed", "an image's size changed by one byte"):
        assert not decided_now(STORED[changed](), fresh), changed
        assert WrittenSnapshot.of(fresh).read_at_of(STORED[changed]()) is None, changed


def edit(found: bytes, at: int, cut: int, insert: bytes) -> bytes:
    return found[:at] + insert + found[at + cut :]


STORED_TO_EDIT = ("as written an hour before", "the replication rules unread", "as written a week before")


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(STORED_TO_EDIT),
    st.floats(0, 1),
    st.integers(0, 3),
    st.binary(max_size=3) | st.sampled_from([b'"', b",", b" ", b"}", b"\\", b'"x"', b"1", b"null"]),
    st.booleans(),
)
def test_an_object_edited_anywhere_is_kept_or_rewritten_as_the_comparison_before_decided(
    stored: str, where: float, cut: int, insert: bytes, near_the_end: bool
) -> None:
    found = STORED[stored]()
    # Edits in the last hundred bytes (when and by which run it was read) as often as anywhere else.
    at = len(found) - 1 - int(where * 100) if near_the_end else int(where * (len(found) - 1))
    edited = edit(found, max(at, 0), cut, insert)
    for fresh in (fresh_swept(), fresh_swept(problem="AccessDenied")):
        assert decided_now(edited, fresh) == decided_before(edited, fresh)
        assert repr(WrittenSnapshot.of(fresh).read_at_of(edited)) == repr(written_as_before(edited, _fields(fresh)))


@pytest.mark.parametrize("problem", [None, "AccessDenied"])
def test_the_snapshot_is_written_as_json_dumps_writes_its_fields_and_told_by_its_bytes(problem: str | None) -> None:
    fresh = fresh_swept(problem=problem)
    written = WrittenSnapshot.of(fresh)

    assert written.body == json.dumps(_fields(fresh)).encode()
    assert written.read_part is not None  # the comparison by bytes is the one taken
    assert written.body.startswith(written.read_part)
    assert written.body[len(written.read_part) :].startswith(b'"readAt": ')


def test_a_changed_snapshot_is_written_with_the_bytes_it_was_compared_as() -> None:
    bucket = MemoryBucket()
    bucket.objects[KEY] = STORED["an image's tag changed"]()
    coordinates = RegistryCoordinates(ACCOUNT, REGION, REPLICATED)

    assert keep_snapshot(bucket, "this-run", snapshot(), NOW, registry=coordinates) == ()

    assert bucket.objects[KEY] == json.dumps(_fields(fresh_swept())).encode()


def test_a_snapshot_read_later_by_another_run_is_kept_as_it_is() -> None:
    bucket = MemoryBucket()
    coordinates = RegistryCoordinates(ACCOUNT, REGION, REPLICATED)
    keep_snapshot(bucket, "first-run", snapshot(), NOW, registry=coordinates)
    first = bucket.objects[KEY]

    keep_snapshot(bucket, "second-run", snapshot(), NOW + timedelta(days=1), registry=coordinates)

    assert bucket.objects[KEY] == first
    assert read_swept("s3://inventory/" + KEY, first).run_id == "first-run"


def test_a_written_snapshot_without_the_part_a_review_reads_leaves_the_comparison_to_reading_the_object() -> None:
    fields = {"readAt": "2026-11-30T05:00:00Z", "runId": "earlier", "repositories": []}
    written = WrittenSnapshot(fields, json.dumps(fields).encode())

    assert written.read_at_of(written.body) is None
