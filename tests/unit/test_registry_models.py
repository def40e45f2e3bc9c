"""describe-images shapes: timestamps in every form AWS tools write, and snapshots that cannot be right."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.registry.images import ImageDetail, Snapshot, _checked_twins
from ecr_retention.domain.timestamps import LeanUtcDatetime, parse_timestamp
from ecr_retention.loading import load_snapshots

DIGEST = "sha256:" + "b" * 64


def detail(**fields: Any) -> ImageDetail:
    return ImageDetail.model_validate({"imageDigest": DIGEST, "imagePushedAt": "2026-01-01T00:00:00Z", **fields})


@pytest.mark.parametrize(
    "pushed",
    ["2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000+00:00", 1767225600, 1767225600.0],
)
def test_timestamps_with_any_offset_or_epoch_seconds_are_held_as_utc(pushed: object) -> None:
    assert detail(imagePushedAt=pushed).image_pushed_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_timestamp_without_offset_is_rejected() -> None:
    with pytest.raises(ValidationError, match="no UTC offset"):
        detail(imagePushedAt="2026-01-01T00:00:00")


def test_null_tags_mean_untagged_and_unknown_aws_fields_are_ignored() -> None:
    image = detail(imageTags=None, imageScanFindingsSummary={"findingSeverityCounts": {}})
    assert image.image_tags == ()


def test_last_activity_is_the_last_pull_or_the_push() -> None:
    assert detail().last_activity == datetime(2026, 1, 1, tzinfo=UTC)
    pulled = detail(lastRecordedPullTime="2026-02-01T00:00:00Z")
    assert pulled.last_activity == datetime(2026, 2, 1, tzinfo=UTC)


def test_invalid_digest_is_rejected() -> None:
    with pytest.raises(ValidationError, match="imageDigest"):
        ImageDetail.model_validate({"imageDigest": "latest", "imagePushedAt": 0})


def test_digest_twice_in_a_repository_is_rejected() -> None:
    image = {"imageDigest": DIGEST, "imagePushedAt": 0}
    with pytest.raises(ValidationError, match="appears twice"):
        Snapshot.model_validate({"repositories": [{"repositoryName": "app", "imageDetails": [image, image]}]})


def test_repository_twice_is_rejected() -> None:
    with pytest.raises(ValidationError, match="repository app appears twice"):
        Snapshot.model_validate({"repositories": [{"repositoryName": "app"}, {"repositoryName": "app"}]})


def test_registry_id_comes_from_image_details_when_absent() -> None:
    image = {"imageDigest": DIGEST, "imagePushedAt": 0, "registryId": "123456789012"}
    snapshot = Snapshot.model_validate({"repositories": [{"repositoryName": "app", "imageDetails": [image]}]})
    assert snapshot.effective_registry_id == "123456789012"


def test_index_manifest_children_must_name_digests() -> None:
    bad = {"repositoryName": "app", "manifests": {DIGEST: {"manifests": [{"size": 1}]}}}
    with pytest.raises(ValidationError, match="must be a list of objects with a digest"):
        Snapshot.model_validate({"repositories": [bad]})


@pytest.mark.parametrize("pushed", [1e20, -1e20, "0001-01-01T00:00:00+01:00"])
def test_timestamps_out_of_range_are_a_validation_error_not_a_crash(pushed: object) -> None:
    with pytest.raises(ValidationError, match="out of range"):
        detail(imagePushedAt=pushed)


# --- Lean and checked: the snapshot's images are read without a Python call per image (domain/registry/images.py) ---------

OTHER = "sha256:" + "c" * 64
IMAGE = {"imageDigest": DIGEST, "imageTags": ["v1"], "imagePushedAt": "2026-01-01T00:00:00Z"}


def snapshot_of(*images: object) -> dict[str, Any]:
    return {"repositories": [{"repositoryName": "app", "imageDetails": list(images)}]}


def second_image(**fields: object) -> dict[str, Any]:
    return snapshot_of({**IMAGE, "imageDigest": OTHER}, {**IMAGE, **fields})


AT = "repositories[0].imageDetails[1]"
NO_OFFSET = "has no UTC offset; add one, such as Z or +00:00"
INVALID = "expected ISO 8601 or epoch seconds"
# Each line as the models before the lean ones wrote it (recorded from them).
REFUSALS = {
    "naive": (
        second_image(imagePushedAt="2026-01-01T00:00"),
        f"{AT}.imagePushedAt: timestamp '2026-01-01T00:00' {NO_OFFSET}",
    ),
    "words": (second_image(imagePushedAt="now"), f"{AT}.imagePushedAt: invalid timestamp 'now': {INVALID}"),
    "impossible day": (
        second_image(imagePushedAt="2026-02-30T00:00:00Z"),
        f"{AT}.imagePushedAt: invalid timestamp '2026-02-30T00:00:00Z': {INVALID}",
    ),
    "year zero": (
        second_image(imagePushedAt="0000-01-01T00:00:00Z"),
        f"{AT}.imagePushedAt: invalid timestamp '0000-01-01T00:00:00Z': {INVALID}",
    ),
    "out of range": (
        second_image(imagePushedAt="0001-01-01T00:00+01:00"),
        f"{AT}.imagePushedAt: timestamp '0001-01-01T00:00+01:00' is out of range",
    ),
    "boolean": (second_image(imagePushedAt=True), f"{AT}.imagePushedAt: invalid timestamp True"),
    "null": (second_image(imagePushedAt=None), f"{AT}.imagePushedAt: invalid timestamp None: {INVALID}"),
    "numeric string": (
        second_image(imagePushedAt="1767225600"),
        f"{AT}.imagePushedAt: invalid timestamp '1767225600': {INVALID}",
    ),
    "pull time": (
        second_image(lastRecordedPullTime="2026-01-01 00:00"),
        f"{AT}.lastRecordedPullTime: timestamp '2026-01-01 00:00' {NO_OFFSET}",
    ),
    "tag twice": (second_image(imageTags=["v1", "v1"]), f"{AT}.imageTags: a tag appears twice on one image"),
    "empty tag": (second_image(imageTags=["v1", ""]), f"{AT}.imageTags: an image tag is empty"),
    "two empty tags": (second_image(imageTags=["", ""]), f"{AT}.imageTags: a tag appears twice on one image"),
    "tags as a string": (second_image(imageTags="v1"), f"{AT}.imageTags: should be a list, not a string"),
    "null tag": (second_image(imageTags=[None]), f"{AT}.imageTags[0]: should be a string, not null"),
    "negative size": (
        second_image(imageSizeInBytes=-1),
        f"{AT}.imageSizeInBytes: -1: input should be greater than or equal to 0",
    ),
    "image as a string": (snapshot_of(IMAGE, "x"), f"{AT}: should be an object, not a string"),
    "image as null": (snapshot_of(IMAGE, None), f"{AT}: should be an object, not null"),
    "digest twice": (snapshot_of(IMAGE, IMAGE), f"repositories[0]: imageDetails[1]: digest {DIGEST} appears twice"),
    "digest and tag twice": (
        snapshot_of(IMAGE, {**IMAGE, "imageTags": ["a", "a"]}),
        f"{AT}.imageTags: a tag appears twice on one image",
    ),
    "many": (
        snapshot_of({**IMAGE, "imagePushedAt": "x", "imageTags": ["a", "a"]}, "x", {**IMAGE, "imageSizeInBytes": -1}),
        "repositories[0].imageDetails[0].imageTags: a tag appears twice on one image (and 3 more problems)",
    ),
    "field names": (
        snapshot_of({"image_digest": DIGEST, "image_tags": ["a", "a"], "image_pushed_at": 0}),
        "repositories[0].imageDetails[0].image_tags: a tag appears twice on one image",
    ),
}


@pytest.mark.parametrize(("document", "line"), REFUSALS.values(), ids=REFUSALS.keys())
def test_a_refused_snapshot_reads_as_it_always_has(tmp_path: Path, document: dict[str, Any], line: str) -> None:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError) as refused:
        load_snapshots(path)[0]
    assert str(refused.value) == f"{path}: {line}"


def test_an_image_holds_its_fields_and_no_bookkeeping() -> None:
    image = detail(imageTags=["v1"])
    assert not hasattr(image, "__dict__")
    assert not hasattr(image, "__pydantic_fields_set__")
    assert image.model_copy(update={"image_tags": ("v2",)}).image_tags == ("v2",)
    assert image.model_dump(mode="json", by_alias=True)["imagePushedAt"] == "2026-01-01T00:00:00Z"


def test_reading_a_snapshot_calls_no_python_per_image() -> None:
    """The images' checks are pydantic's own; Python runs once per document."""

    def calls_reading(images: int) -> Counter[str]:
        pulled = {**IMAGE, "lastRecordedPullTime": "2026-02-01T00:00:00+00:00"}
        document = snapshot_of(*({**pulled, "imageDigest": f"sha256:{n:064x}"} for n in range(images)))
        calls: Counter[str] = Counter()

        def count(frame: FrameType, event: str, _: object) -> None:
            # The project's code and pydantic's: the interpreter's own caches (abc's subclass checks) warm up once
            # per process, and the test runner's generators may resume while the profile is set.
            if event == "call" and (
                "ecr_retention" in frame.f_code.co_filename or "pydantic" in frame.f_code.co_filename
            ):
                calls[f"{frame.f_code.co_filename}:{frame.f_code.co_name}"] += 1

        sys.setprofile(count)
        try:
            Snapshot.model_validate(document)
        finally:
            sys.setprofile(None)
        return calls

    calls_reading(1)  # caches of the first reading in this process
    assert calls_reading(200) == calls_reading(1)


# Values a timestamp may hold in a snapshot: canonical UTC strings (the common case), near misses, and anything else.
def canonical(moment: datetime, digits: int, offset: str) -> str:
    fraction = f".{moment.microsecond:06d}"[: digits + 1] if digits else ""
    return moment.isoformat(timespec="seconds") + fraction + offset


CANONICAL = st.builds(canonical, st.datetimes(), st.integers(0, 6), st.sampled_from(["Z", "+00:00"]))
NEAR_MISSES = st.builds(
    lambda text, position, replacement: text[:position] + replacement + text[position + 1 :],
    CANONICAL,
    st.integers(0, 32),
    st.sampled_from(["", " ", "t", "z", "0", "9", "-", ":", ".", "+", "٣", "\n", "Z", "1234567"]),
)
TIMESTAMPS: st.SearchStrategy[Any] = st.one_of(
    CANONICAL,
    NEAR_MISSES,
    st.datetimes(timezones=st.one_of(st.none(), st.just(UTC), st.timezones())),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=40),
    st.binary(max_size=30),
    CANONICAL.map(str.encode),  # pydantic's lax str would take bytes; parse_timestamp does not
    st.from_regex(
        r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?(Z|z|[+-][0-9]{2}:[0-9]{2})?\Z"
    ),
)


@settings(max_examples=2_000, deadline=None)
@given(TIMESTAMPS)
def test_lean_timestamps_accept_and_refuse_what_parse_timestamp_does(value: Any) -> None:
    try:
        expected: datetime | None = parse_timestamp(value)
    except ValueError:
        expected = None
    try:
        lean: datetime | None = TypeAdapter(LeanUtcDatetime).validate_python(value)
    except ValidationError:
        lean = None
    assert repr(lean) == repr(expected)  # the same instant, and the same tzinfo: datetime.UTC
    if lean is not None:
        assert lean.tzinfo is UTC


TAG_VALUES = st.one_of(st.sampled_from(["", "a", "b"]), st.none(), st.integers())
IMAGE_VALUES = st.fixed_dictionaries(
    {"imageDigest": st.sampled_from([DIGEST, OTHER, "latest"])},
    optional={
        "imagePushedAt": TIMESTAMPS,
        "lastRecordedPullTime": TIMESTAMPS,
        "imageTags": st.one_of(st.none(), st.text(max_size=3), st.lists(TAG_VALUES, max_size=3)),
        "imageSizeInBytes": st.one_of(st.none(), st.integers(-2, 2), st.floats()),
        "imageStatus": st.sampled_from(["ACTIVE", "ARCHIVED", "GONE"]),
    },
)


def fields_of(image: ImageDetail) -> str:
    return repr([getattr(image, name) for name in ImageDetail.__dataclass_fields__])  # datetimes with their tzinfo


def outcome(validate: Any, document: object) -> Any:
    """What a validation makes of the document: its value, or its errors (type, location, message)."""
    try:
        return validate(document)
    except ValidationError as error:
        return [(problem["type"], problem["loc"], problem["msg"]) for problem in error.errors()]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(IMAGE_VALUES, st.sampled_from(["x", None, 1])), max_size=4))
def test_lean_snapshots_accept_and_refuse_what_the_checked_models_do(images: list[Any]) -> None:
    document = snapshot_of(*images)
    checked = outcome(_checked_twins()[Snapshot].validate_python, document)  # the validators before lean ones
    lean = outcome(Snapshot.__pydantic_validator__.validate_python, document)  # the lean models, without the wording
    if isinstance(checked, list):
        assert isinstance(lean, list)
        assert outcome(Snapshot.model_validate, document) == checked  # worded by the checked models
        return
    assert lean.model_dump() == checked.model_dump()
    assert [fields_of(image) for image in lean.repositories[0].image_details] == [
        fields_of(image) for image in checked.repositories[0].image_details
    ]
