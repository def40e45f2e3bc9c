"""Invariants of the engine over generated registries, rules and inventories (hypothesis)."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.durations import format_duration
from ecr_retention.domain.inventory.manifest import InUseManifest, Inventory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.registry.images import Snapshot
from support.builders import (
    HOST,
    NOW,
    OCI_INDEX,
    config,
    digest,
    image,
    in_use,
    plan,
    plan_one_by_one,
    removed,
    snapshot,
)

TAGS = ["v1", "v2", "1.0", "1.1", "latest", "dev", "pr-1", "pr-2", "deployed-prod-1", "deployed-prod-2", "x"]
PATTERNS = ["v*", "*.*", "latest", "dev", "pr-*", "deployed-prod-*", "*", "?"]
DURATIONS = ["1h", "12h", "1d", "3d", "10d", "30d", "60d"]
PROTECTING_KINDS = {"keep-rule", "in-use", "min-age"}


@st.composite
def selectors(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["tags", "untagged", "tag_in_repositories", "none"]))
    if kind == "tags":
        return {"tags": draw(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=2, unique=True))}
    if kind == "untagged":
        return {"untagged": True}
    if kind == "tag_in_repositories":
        return {"tag_in_repositories": ["frontend"]}
    return {}


@st.composite
def keep_rules(draw: st.DrawFn) -> dict[str, Any]:
    rule = draw(selectors())
    if draw(st.booleans()):
        rule["pulled_within"] = draw(st.sampled_from(DURATIONS))
    if draw(st.booleans()):
        rule["newest"] = draw(st.integers(1, 4))
    return {"keep": rule}


@st.composite
def delete_rules(draw: st.DrawFn) -> dict[str, Any]:
    rule = draw(selectors())
    if draw(st.booleans()) or not rule:
        rule["older_than"] = draw(st.sampled_from(DURATIONS))
    if draw(st.booleans()):
        rule["not_pulled_within"] = draw(st.sampled_from(DURATIONS))
    rule["keep_newest"] = draw(st.integers(0, 3))
    rule["archive"] = draw(st.booleans())
    return {"delete": rule}


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[RetentionConfig, Snapshot, tuple[InUseManifest, ...]]:
    count = draw(st.integers(1, 14))
    tag_owner = {tag: draw(st.integers(0, count * 2)) for tag in TAGS}  # owners >= count: tag unused
    images: list[dict[str, Any]] = []
    for n in range(count):
        tags = [tag for tag, owner in tag_owner.items() if owner == n]
        age = timedelta(hours=draw(st.integers(0, 24 * 90)))
        pulled = draw(st.none() | st.integers(0, 24 * 90).map(lambda h: timedelta(hours=h)))
        role = draw(st.sampled_from(["plain", "plain", "index", "referrer"]))
        # i{count} names no image: an orphaned referrer, whose subject is gone
        subject = f"i{draw(st.integers(0, count))}" if role == "referrer" else None
        if subject == f"i{n}":
            subject = None
        media = OCI_INDEX if role == "index" else "application/vnd.oci.image.manifest.v1+json"
        images.append(image(f"i{n}", *tags, age=age, pulled_ago=pulled, media_type=media, subject=subject))
    manifests = {}
    for n, detail in enumerate(images):
        if detail["imageManifestMediaType"] == OCI_INDEX:
            plain = [m for m, d in enumerate(images) if d["imageManifestMediaType"] != OCI_INDEX and m != n]
            children = draw(st.lists(st.sampled_from(plain), max_size=3, unique=True)) if plain else []
            manifests[f"i{n}"] = {"manifests": [{"digest": digest(f"i{c}")} for c in children]}
    frontend_tags = draw(st.lists(st.sampled_from(TAGS), max_size=4, unique=True))
    snap = snapshot(
        {"repositoryName": "app", "imageDetails": images, "manifests": {digest(k): v for k, v in manifests.items()}},
        {"repositoryName": "frontend", "imageDetails": [image("f0", *frontend_tags)] if frontend_tags else []},
    )
    rules = draw(st.lists(keep_rules() | delete_rules(), min_size=1, max_size=5))
    cfg = config(rules, min_age=draw(st.sampled_from(DURATIONS)))
    used_digests = draw(st.lists(st.integers(0, count - 1), max_size=3, unique=True))
    used_tags = draw(st.lists(st.sampled_from(TAGS), max_size=2, unique=True))
    entries = [(f"{HOST}/app@{digest(f'i{n}')}", f"i{n}") for n in used_digests]
    entries += [(f"{HOST}/app:{tag}", None) for tag in used_tags]
    return cfg, snap, (in_use("prod", *entries),)


def in_use_digests(snap: Snapshot, manifests: tuple[InUseManifest, ...]) -> set[str]:
    protected = {entry.digest for m in manifests for entry in m.images if entry.digest}
    tags = {entry.image.rsplit(":", 1)[1] for m in manifests for entry in m.images if "@" not in entry.image}
    for repo in snap.repositories:
        protected |= {i.image_digest for i in repo.image_details if set(i.image_tags) & tags}
    return protected


FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The invariants that keep running images and the parts of kept images: more examples.
SAFETY = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SAFETY
@given(scenarios())
def test_no_in_use_digest_is_ever_removed(
    scenario: tuple[RetentionConfig, Snapshot, tuple[InUseManifest, ...]],
) -> None:
    cfg, snap, manifests = scenario
    assert not removed(plan(cfg, snap, *manifests)) & in_use_digests(snap, manifests)


@FAST
@given(scenarios(), keep_rules(), st.integers(0, 5))
def test_adding_a_keep_rule_never_adds_a_removal(
    scenario: tuple[RetentionConfig, Snapshot, tuple[InUseManifest, ...]], keep: dict[str, Any], position: int
) -> None:
    cfg, snap, manifests = scenario
    rules = [r.model_dump(mode="json", exclude_defaults=True) for r in cfg.policies[0].rules]
    rules.insert(min(position, len(rules)), keep)
    stricter = config(rules, min_age=format_duration(cfg.safety.min_age))
    assert removed(plan(stricter, snap, *manifests)) <= removed(plan(cfg, snap, *manifests))


@FAST
@given(scenarios(), st.randoms(use_true_random=False))
def test_plan_does_not_depend_on_input_order(
    scenario: tuple[RetentionConfig, Snapshot, tuple[InUseManifest, ...]], rng: random.Random
) -> None:
    cfg, snap, manifests = scenario
    data = snap.model_dump(mode="json", by_alias=True)
    for repo in data["repositories"]:
        rng.shuffle(repo["imageDetails"])
        for detail in repo["imageDetails"]:
            rng.shuffle(detail["imageTags"])
    rng.shuffle(data["repositories"])
    shuffled_manifests = []
    for manifest in manifests:
        dumped = manifest.model_dump(mode="json", by_alias=True)
        rng.shuffle(dumped["images"])
        shuffled_manifests.append(InUseManifest.model_validate(dumped))
    shuffled = Snapshot.model_validate(data)
    assert _json(plan(cfg, shuffled, *shuffled_manifests)) == _json(plan(cfg, snap, *manifests))


def _json(result: Plan) -> dict[str, object]:
    return result.to_json_dict()


@FAST
@given(scenarios())
def test_every_removed_image_has_a_removal_reason_and_no_protection(
    scenario: tuple[RetentionConfig, Snapshot, tuple[InUseManifest, ...]],
) -> None:
    cfg, snap, manifests = scenario
    result = plan(cfg, snap, *manifests)
    for repo in result.repositories:
        for decision in repo.images:
            kinds = {reason.kind for reason in decision.reasons}
            assert decision.reasons, decision
            if decision.action == "keep":
                continue
            assert kinds & {"delete-rule", "index-child", "referrer"}
            assert not kinds & PROTECTING_KINDS
            assert result.generated_at - decision.image_pushed_at > cfg.safety.min_age


@SAFETY
@given(scenarios())
def test_children_of_kept_indexes_and_referrers_of_kept_subjects_are_never_removed(
    scenario: tuple[RetentionConfig, Snapshot, tuple[InUseManifest, ...]],
) -> None:
    cfg, snap, manifests = scenario
    result = plan(cfg, snap, *manifests)
    gone = removed(result)
    app = next(r for r in snap.repositories if r.repository_name == "app")
    kept = {i.image_digest for i in app.image_details} - gone
    for parent in kept:
        for child in app.children_of(parent) or ():
            assert child not in gone
    for detail in app.image_details:
        if detail.subject_manifest_digest in kept:
            assert detail.image_digest not in gone


@FAST
@given(scenarios())
def test_an_orphaned_oci_referrer_is_deleted_unless_something_protects_it(
    scenario: tuple[RetentionConfig, Snapshot, tuple[InUseManifest, ...]],
) -> None:
    cfg, snap, manifests = scenario
    result = plan(cfg, snap, *manifests)
    app = next(r for r in snap.repositories if r.repository_name == "app")
    present = {i.image_digest for i in app.image_details}
    orphans = [i for i in app.image_details if i.subject_manifest_digest and i.subject_manifest_digest not in present]
    decisions = {d.image_digest: d for d in result.repositories[0].images}
    for orphan in orphans:
        decision = decisions[orphan.image_digest]
        kinds = {reason.kind for reason in decision.reasons}
        if decision.action == "keep":  # protected, or listed by a kept index (or one whose manifest is unknown)
            assert kinds & (PROTECTING_KINDS | {"index-child"}), decision
        else:
            assert "referrer" in kinds, decision


@FAST
@given(scenarios())
def test_plan_registry_equals_plan_repository_per_repository(
    scenario: tuple[RetentionConfig, Snapshot, tuple[InUseManifest, ...]],
) -> None:
    cfg, snap, manifests = scenario
    inventory = Inventory(manifests=manifests)
    assert plan_one_by_one(cfg, snap, inventory) == plan_registry(cfg, snap, inventory, NOW)
