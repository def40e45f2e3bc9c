"""The planner finds the few images a step applies to without a Python call per image (issue 46 item 4): the images an
in-use reference may name, the indexes, the referrers, the images pulled within a window, the untagged ones. Each
shortcut must give the plan that looking at every image gives, whatever the repository holds: a tag on two images (a
snapshot written by hand), indexes with and without their manifest, OCI subjects present and gone, cosign signatures,
archived images, references by tag and by digest, a window reaching before the calendar."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ecr_retention.domain.inventory.manifest import InUseManifest, Inventory
from ecr_retention.domain.planning import build_run_context, guards, rules
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.planning.repository import RepositoryImages
from ecr_retention.domain.registry.images import ImageDetail
from support.builders import (
    HOST,
    NOW,
    OCI_INDEX,
    action_of,
    config,
    digest,
    image,
    in_use,
    index_manifest,
    kinds_of,
    plan,
    repository,
    snapshot,
)

DAY = timedelta(days=1)


def cosign_tag(seed: str) -> str:
    return "sha256-" + digest(seed).split(":")[1] + ".sig"


def _rich_repository(*, unknown_index: bool = False) -> dict[str, Any]:
    """More images than the in-use references name, of every kind a shortcut skips or picks. `unknown_index`: with an
    index whose manifest the snapshot lacks (then every image that is no index may be its child, and is kept)."""
    return repository(
        "app",
        image("release", "v1", "latest", age=DAY * 90, pulled_ago=DAY),
        image("twin-new", "shared-tag", age=DAY * 40),
        image("twin-old", "shared-tag", "old", age=DAY * 80),
        image("index", "v2", media_type=OCI_INDEX, age=DAY * 50),
        image("child-a", age=DAY * 50),
        image("child-b", age=DAY * 50, archived_ago=DAY * 20),
        *([image("unknown-index", "v3", media_type=OCI_INDEX, age=DAY * 60)] if unknown_index else []),
        image("listed-index", "v4", age=DAY * 70),  # a manifest media type, but the snapshot lists its children
        image("listed-child", age=DAY * 70),
        image("referrer", age=DAY * 45, subject="release"),
        image("orphan", age=DAY * 45, subject="gone"),
        image("subject", "v5", age=DAY * 30),
        image("signature", cosign_tag("subject"), age=DAY * 30),
        image("stray-signature", cosign_tag("absent"), age=DAY * 30),
        image("archived", "pr-1", age=DAY * 200, archived_ago=DAY * 10),
        image("pulled", "pr-2", age=DAY * 200, pulled_ago=DAY * 2),
        image("untagged", age=DAY * 300),
        *(image(f"filler-{n}", f"build-{n}", age=DAY * (100 + n)) for n in range(12)),
        manifests={
            "index": index_manifest("child-a", "child-b"),
            "listed-index": index_manifest("listed-child"),
        },
    )


RULES = [
    {"keep": {"tags": ["latest"]}},
    {"keep": {"pulled_within": "3d"}},
    {"delete": {"tags": ["pr-*"], "not_pulled_within": "7d", "archive": True}},
    {"delete": {"untagged": True, "older_than": "1d"}},
    {"delete": {"older_than": "20d"}},
]


def _cluster() -> InUseManifest:
    return in_use(
        "prod",
        (f"{HOST}/app:shared-tag", None),
        (f"{HOST}/app:v2", None),
        (f"{HOST}/app@{digest('archived')}", "archived"),
        (f"{HOST}/other@{digest('elsewhere')}", "elsewhere"),
    )


def _every_image(images: RepositoryImages, *_: object) -> Iterable[ImageDetail]:
    return images.ordered


def _planned(*, unknown_index: bool = False) -> Plan:
    cfg = config(RULES, clusters=["prod"])
    return plan(cfg, snapshot(_rich_repository(unknown_index=unknown_index)), _cluster())


@pytest.mark.parametrize("unknown_index", [False, True])
def test_the_shortcuts_plan_what_looking_at_every_image_plans(
    monkeypatch: pytest.MonkeyPatch, unknown_index: bool
) -> None:
    shortcut = _planned(unknown_index=unknown_index)
    assert {d.action for d in shortcut.repositories[0].images} >= {"keep", "delete" if not unknown_index else "keep"}
    for name in ("_maybe_in_use", "_maybe_indexes", "_maybe_referrers"):
        monkeypatch.setattr(guards, name, _every_image)
    assert _planned(unknown_index=unknown_index).to_json_dict() == shortcut.to_json_dict()


def test_the_shortcuts_are_taken_for_this_repository() -> None:
    """The index holds fewer references than the repository images: the in-use shortcut applies (else the
    comparison above would compare a path with itself)."""
    repo = snapshot(_rich_repository()).repositories[0]
    images = RepositoryImages.of(repo, NOW)
    assert not images.one_image_per_tag  # shared-tag is on two images: every image is looked at for in-use tags
    unique = snapshot(repository("app", *(image(f"i{n}", f"t{n}") for n in range(5)))).repositories[0]
    assert RepositoryImages.of(unique, NOW).one_image_per_tag


def test_a_tag_on_two_images_that_a_cluster_runs_keeps_both() -> None:
    assert action_of(_planned(), "app", "twin-new") == "keep"
    assert action_of(_planned(), "app", "twin-old") == "keep"
    assert "in-use" in kinds_of(_planned(), "app", "twin-new")
    assert "in-use" in kinds_of(_planned(), "app", "twin-old")


def test_in_use_candidates_of_a_large_repository_are_those_its_references_name() -> None:
    snap = snapshot(
        repository("app", *(image(f"i{n}", f"t{n}", age=DAY * (n + 1)) for n in range(8)), image("u", age=DAY * 20))
    )
    images = RepositoryImages.of(snap.repositories[0], NOW)
    cluster = in_use("prod", (f"{HOST}/app:t3", None), (f"{HOST}/app@{digest('i6')}", "i6"), (f"{HOST}/other:t1", None))
    run = build_run_context(
        config(RULES, clusters=["prod"]),
        Inventory(manifests=(cluster,)),
        NOW,
        registry=snap.registry,
        tags_by_repository={},
    )
    found = [image.image_tags for image in guards._maybe_in_use(images, run.in_use)]
    assert found == [("t3",), ("t6",)]  # newest first; other:t1 names another repository


def test_a_cosign_signature_whose_subject_is_here_follows_it_and_a_stray_one_stays_an_image() -> None:
    planned = _planned()
    assert "referrer" in kinds_of(planned, "app", "signature")
    assert "referrer" not in kinds_of(planned, "app", "stray-signature")
    assert "referrer" in kinds_of(planned, "app", "orphan")


def test_every_child_of_a_removed_index_names_it_in_the_same_words() -> None:
    planned = _planned()
    reasons = [
        [reason for reason in next(d for d in planned.repositories[0].images if d.image_digest == digest(seed)).reasons
         if reason.kind == "index-child"]
        for seed in ("child-a", "child-b")
    ]  # fmt: skip
    assert reasons[0]
    assert reasons[0] == reasons[1]


def _ranks(images: RepositoryImages) -> list[int]:
    return list(range(len(images.ordered)))


@pytest.mark.parametrize("inclusive", [True, False])
def test_a_pull_window_is_read_as_now_minus_the_last_activity(inclusive: bool) -> None:
    """At the edge too: pulled exactly `window` ago is within a not_pulled_within window (inclusive), outside a
    pulled_within one."""
    window = DAY * 3
    repo = snapshot(
        repository(
            "app",
            image("edge", "a", pulled_ago=window),
            image("inside", "b", pulled_ago=window - timedelta(microseconds=1)),
            image("outside", "c", pulled_ago=window + timedelta(microseconds=1)),
            image("pushed-inside", "d", age=DAY),
            image("future", "e", age=-DAY),
        )
    ).repositories[0]
    images = RepositoryImages.of(repo, NOW)
    ranks = _ranks(images)
    by_definition = [
        rank
        for rank in ranks
        if (NOW - images.ordered[rank].last_activity <= window if inclusive else NOW - images.ordered[rank].last_activity < window)
    ]  # fmt: skip
    assert rules._active_within(images, ranks, window, NOW, inclusive=inclusive) == by_definition
    assert {images.ordered[rank].image_tags[0] for rank in by_definition} == (
        {"a", "b", "d", "e"} if inclusive else {"b", "d", "e"}
    )


def test_a_window_reaching_before_the_calendar_holds_every_image() -> None:
    """`--now` in year 50 and a window of 100 years: now - window is no datetime; every image is within it."""
    now = datetime(50, 1, 1, tzinfo=UTC)
    repo = snapshot(repository("app", image("a", "a"), image("b", "b", pulled_ago=DAY))).repositories[0]
    images = RepositoryImages.of(repo, now)
    window = timedelta(days=36500)
    assert rules._active_within(images, _ranks(images), window, now) == _ranks(images)
    assert rules._active_within(images, _ranks(images), window, now, inclusive=False) == _ranks(images)


def test_the_untagged_images_are_the_ranks_without_tags() -> None:
    repo = snapshot(_rich_repository()).repositories[0]
    images = RepositoryImages.of(repo, NOW)
    assert rules._untagged(images) == [rank for rank, image in enumerate(images.ordered) if not image.image_tags]
