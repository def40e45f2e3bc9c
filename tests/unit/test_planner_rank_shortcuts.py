"""The indexes and the referrers found by rank (guards._maybe_indexes when every image the snapshot has a manifest of
is of an index media type, guards._maybe_referrers with cosign signatures present): the images, in the order, that
looking each digest up finds, and the plan that looking at every image gives."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import pytest

from ecr_retention.domain.inventory.manifest import InUseManifest
from ecr_retention.domain.planning import guards
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.planning.repository import RepositoryImages
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import (
    HOST,
    NOW,
    OCI_INDEX,
    config,
    digest,
    image,
    in_use,
    index_manifest,
    plan,
    repository,
    snapshot,
)

DAY = timedelta(days=1)
RULES = [
    {"keep": {"tags": ["latest"]}},
    {"delete": {"untagged": True, "older_than": "1d"}},
    {"delete": {"older_than": "20d"}},
]


def _cosign_tag(seed: str) -> str:
    return "sha256-" + digest(seed).split(":")[1] + ".sig"


def _repository() -> dict[str, Any]:
    """Indexes with their manifest, pushed at one instant with their children (ties in rank order),
    OCI referrers present and gone, cosign signatures of an image here and of one elsewhere."""
    return repository(
        "app",
        image("latest", "latest", age=DAY * 2),
        image("index-a", "v1", media_type=OCI_INDEX, age=DAY * 50),
        image("child-a1", age=DAY * 50),
        image("child-a2", age=DAY * 50),
        image("index-b", "v2", media_type=OCI_INDEX, age=DAY * 60),
        image("child-b1", age=DAY * 60),
        image("subject", "v4", age=DAY * 30),
        image("signature", _cosign_tag("subject"), age=DAY * 30),
        image("stray-signature", _cosign_tag("absent"), age=DAY * 31),
        image("referrer", age=DAY * 45, subject="index-a"),
        image("orphan", age=DAY * 45, subject="gone"),
        *(image(f"filler-{n}", f"build-{n}", age=DAY * (100 + n)) for n in range(6)),
        manifests={"index-a": index_manifest("child-a1", "child-a2"), "index-b": index_manifest("child-b1")},
    )


def _images() -> RepositoryImages:
    return RepositoryImages.of(snapshot(_repository()).repositories[0], NOW)


def _planned() -> Plan:
    cluster: InUseManifest = in_use("prod", (f"{HOST}/app:v2", None))
    return plan(config(RULES, clusters=["prod"]), snapshot(_repository()), cluster)


def _every_image(images: RepositoryImages, *_: object) -> Iterable[ImageDetail]:
    return images.ordered


def test_the_indexes_found_by_rank_are_those_of_an_index_media_type_or_with_a_manifest_newest_first() -> None:
    images = _images()
    manifests = images.repository.manifests
    expected = [
        i for i in images.ordered if i.image_manifest_media_type in INDEX_MEDIA_TYPES or i.image_digest in manifests
    ]
    assert [i.image_digest for i in guards._maybe_indexes(images)] == [i.image_digest for i in expected]


def test_the_referrers_found_by_rank_are_the_subjects_and_cosign_signatures_newest_first() -> None:
    images = _images()
    tags = frozenset(t for t in images.rank_by_tag if guards.COSIGN_TAG.match(t))
    expected = [i for i in images.ordered if i.subject_manifest_digest or not tags.isdisjoint(i.image_tags)]
    found = list(guards._maybe_referrers(images, tags))
    assert [i.image_digest for i in found] == [i.image_digest for i in expected]
    assert {digest("signature"), digest("stray-signature"), digest("referrer"), digest("orphan")} == {
        i.image_digest for i in found
    }


def test_the_shortcuts_by_rank_plan_what_looking_at_every_image_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    shortcut = _planned()
    actions = {d.image_digest: d.action for d in shortcut.repositories[0].images}
    assert actions[digest("child-a1")] == actions[digest("index-a")] == "delete"  # a child follows its index
    assert actions[digest("child-b1")] == "keep"  # in use through its index
    for name in ("_maybe_indexes", "_maybe_referrers"):
        monkeypatch.setattr(guards, name, _every_image)
    assert _planned().to_json_dict() == shortcut.to_json_dict()
