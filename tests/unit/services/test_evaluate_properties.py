"""Invariants of the one code path that deletes (services.evaluate.evaluate_repository) over generated
repositories (single-platform images, indexes with children, cosign signatures), rules, in-use inventories and
faults injected per image and per call (hypothesis, the in-memory registry of support.fakes):

- what is gone is a subset of the plan's removals, made independently by the planner beforehand;
- nothing in use, younger than min_age, kept by a rule, a child of a kept index or a referrer of a kept subject is
  gone or changed, nor anything whose tags changed between the plan and the deletion;
- no image is gone while an index or subject it lives and dies with stayed;
- the report's `deleted` is exactly what was removed, except a removal whose answer was lost, which is reported
  failed (NotConfirmed); each planned removal is reported once, as deleted, archived, cancelled or failed;
- a dry, blocked or skipped evaluation changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.inventory.manifest import Inventory, read_inventory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.registry.images import Snapshot
from ecr_retention.domain.registry.replication import RegistryReplication
from ecr_retention.ports import BatchOutcome, ImageFailure
from ecr_retention.services.evaluate import RunInputs, evaluate_repository
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_repository
from support.builders import ACCOUNT, HOST, NOW, REGION, config, in_use, manifest_bytes
from support.fakes import FakeRegistry

TAGS = ["v1", "v2", "v3", "1.0", "1.1", "latest", "dev", "pr-1", "pr-2", "stable", "x"]
PATTERNS = ["v*", "*.*", "latest", "dev", "pr-*", "stable", "*"]
DURATIONS = ["1h", "1d", "3d", "10d", "30d"]
# hypothesis draws the first of a list most often: old images first, so that rules find something to remove.
AGES_IN_HOURS = [24 * 40, 24 * 90, 24 * 20, 24 * 5, 24 * 2, 12, 1]

EVALUATE = settings(
    max_examples=250,
    derandomize=True,  # the same examples on every machine and in CI
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class FaultyRegistry(FakeRegistry):
    """The in-memory registry, with a delete call that fails whole after its retries (the adapter's answer:
    that call's images failed with the call's error, every later one NotAttempted, stopped)."""

    failing_call: int | None = None

    def delete_images(self, repository: str, digests: Sequence[str]) -> BatchOutcome:
        if self.failing_call is not None and self.count("delete_images") + 1 == self.failing_call:
            self.calls.append(("delete_images", repository))
            batch, later = digests[:100], digests[100:]
            failed = [ImageFailure(d, "ThrottlingException", "Rate exceeded") for d in batch]
            failed += [ImageFailure(d, "NotAttempted", "an earlier call failed") for d in later]
            return BatchOutcome(failed=tuple(failed), stopped=True)
        return super().delete_images(repository, digests)


@dataclass
class Scenario:
    registry: FaultyRegistry
    config: RetentionConfig
    inventory: Inventory
    dry_run: bool
    in_use: set[str]
    parents: set[str]  # indexes, and images a signature signs


@dataclass
class Faults:
    """Drawn once the plan is known, on its removals: where a wrong order or a wrong claim would show."""

    retagged: dict[str, list[str]]  # digest -> the tags it gets between the plan and the re-check
    vanished: set[str]  # removed by someone else between the plan and the re-check
    budget: list[float] = field(default_factory=list)  # seconds left, asked once per removal batch


@st.composite
def rules(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A delete rule, then up to three more rules, a third of them keep rules."""
    selectors = st.sampled_from([{"untagged": True}, {}, *({"tags": [pattern]} for pattern in PATTERNS)])
    drawn: list[dict[str, Any]] = []
    for number in range(draw(st.integers(1, 4))):
        selector: dict[str, Any] = draw(selectors)
        if number > 0 and draw(st.sampled_from([False, False, True])):
            drawn.append({"keep": {**selector, "newest": draw(st.integers(1, 3))}})
        else:
            delete = {**selector, "older_than": draw(st.sampled_from(DURATIONS))}
            delete["keep_newest"] = draw(st.integers(0, 2))
            delete["archive"] = draw(st.sampled_from([False, False, False, True]))
            drawn.append({"delete": delete})
    return drawn


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    registry = FaultyRegistry(registry_id=ACCOUNT, region=REGION)
    digests: list[str] = []
    plain: list[str] = []
    parents: set[str] = set()  # indexes, and images a signature signs
    free_tags = list(TAGS)
    for n in range(draw(st.integers(1, 14))):
        role = draw(st.sampled_from(["plain", "signature", "plain", "index"]))
        age = NOW - timedelta(hours=draw(st.sampled_from(AGES_IN_HOURS)))
        tags = [t for t in draw(st.lists(st.sampled_from(TAGS), max_size=2, unique=True)) if t in free_tags]
        for tag in tags:
            free_tags.remove(tag)
        if role == "index" and plain:
            children = draw(st.lists(st.sampled_from(plain), min_size=1, max_size=3, unique=True))
            digests.append(registry.add_index("app", children, tags=tags, pushed_at=age))
            parents.add(digests[-1])
        elif role == "signature" and digests:
            subject = draw(st.sampled_from(digests))
            parents.add(subject)
            signature = [f"sha256-{subject.split(':')[1]}.sig"]
            digests.append(registry.add_image("app", tags=signature, pushed_at=age, seed=f"sig{n}"))
        else:
            digests.append(registry.add_image("app", tags=tags, pushed_at=age, seed=f"i{n}", size=100 + n))
            plain.append(digests[-1])
    used = set(draw(st.lists(st.sampled_from(digests), max_size=2, unique=True)))
    used_tags = draw(st.lists(st.sampled_from(TAGS), max_size=2, unique=True))
    stale = draw(st.sampled_from([False] * 7 + [True]))
    manifest = in_use(
        "prod",
        *((f"{HOST}/app@{d}", None) for d in sorted(used)),
        *((f"{HOST}/app:{tag}", None) for tag in used_tags),
        age=timedelta(hours=7) if stale else timedelta(minutes=5),
    )
    inventory = read_inventory([("in-use/prod.json", manifest_bytes(manifest))])
    in_use_digests = used | {
        d for d, stored in registry.repositories["app"].items() if set(stored.detail.image_tags) & set(used_tags)
    }
    cfg = config(
        draw(rules()),
        clusters=["prod"],
        min_age=draw(st.sampled_from(DURATIONS)),
        max_delete_fraction=draw(st.sampled_from([1.0, 0.9, 0.5])),
        inventory_max_age="6h",
    ).model_copy(update={"dry_run": False})  # the rules file lets runs delete; each evaluation says if it does
    dry_run = draw(st.sampled_from([False] * 4 + [True]))
    return Scenario(registry, cfg, inventory, dry_run, in_use_digests, parents)


def draw_faults(data: st.DataObject, scenario: Scenario, removals: dict[str, str]) -> Faults:
    """Per-image refusals and lost answers on the plan's removals, parents first; a delete call failing whole;
    tags moved and images deleted by someone else between the plan and the re-check; the Lambda's deadline."""
    registry = scenario.registry
    everything = sorted(registry.repositories["app"])
    targets = sorted(removals, key=lambda d: (d not in scenario.parents, d)) or everything
    for digest in data.draw(st.lists(st.sampled_from(targets), max_size=3, unique=True)):
        registry.delete_failures[digest] = data.draw(st.sampled_from(["KmsError", "ImageReferencedByManifestList"]))
    registry.lost_answers.update(data.draw(st.lists(st.sampled_from(targets), max_size=3, unique=True)))
    registry.failing_call = data.draw(st.none() | st.integers(1, 3))
    retagged = {d: ["moved-here"] for d in data.draw(st.lists(st.sampled_from(everything), max_size=2, unique=True))}
    vanished = set(data.draw(st.lists(st.sampled_from(everything), max_size=2, unique=True))) - retagged.keys()
    budget = data.draw(st.lists(st.sampled_from([600.0, 600.0, 10.0]), max_size=6))
    return Faults(retagged, vanished, budget)


def parents_of(snapshot: Any) -> dict[str, set[str]]:
    """digest -> the indexes listing it and the subject it signs."""
    found: dict[str, set[str]] = {}
    for image in snapshot.image_details:
        for child in snapshot.children_of(image.image_digest) or ():
            found.setdefault(child, set()).add(image.image_digest)
        for tag in image.image_tags:
            if tag.startswith("sha256-") and tag.endswith(".sig"):
                found.setdefault(image.image_digest, set()).add("sha256:" + tag[len("sha256-") : -len(".sig")])
    return found


@EVALUATE
@given(scenarios(), st.data())
def test_what_evaluate_removes_is_planned_unprotected_and_reported_exactly(
    scenario: Scenario, data: st.DataObject
) -> None:
    registry = scenario.registry
    snapshot = snapshot_repository(registry, "app", MemoryManifestCache())
    plan = plan_registry(
        scenario.config, Snapshot(registry_id=ACCOUNT, region=REGION, repositories=(snapshot,)), scenario.inventory, NOW
    )
    [decisions] = plan.repositories
    removals = {d.image_digest: d.action for d in decisions.images if d.removes}
    before = {digest: stored.detail for digest, stored in registry.repositories["app"].items()}
    faults = draw_faults(data, scenario, removals)
    registry.calls.clear()

    def meanwhile(fake: FakeRegistry) -> None:
        """Between the plan and the re-check: tags move onto some images, someone deletes others."""
        for digest, tags in faults.retagged.items():
            fake.set_tags("app", digest, tags)
        for digest in faults.vanished:
            fake.repositories["app"].pop(digest)

    registry.before["describe_image_ids"] = meanwhile
    budget = iter(faults.budget)
    report = evaluate_repository(
        "app",
        RunInputs(
            replication=RegistryReplication(),
            run_id="r",
            config=scenario.config,
            inventory=scenario.inventory,
            dry_run=scenario.dry_run,
        ),
        registry=registry,
        cache=MemoryManifestCache(),
        clock=lambda: NOW,
        seconds_left=lambda: next(budget, 600.0),
    )

    after = {digest: stored.detail for digest, stored in registry.repositories["app"].items()}
    gone = before.keys() - after.keys()
    archived = {d for d in after if after[d].image_status == "ARCHIVED" != before[d].image_status}
    meddled = registry.count("describe_image_ids") > 0  # the re-check ran, and what happened meanwhile with it
    retagged = set(faults.retagged) if meddled else set()
    vanished = faults.vanished if meddled else set()
    removed = gone - vanished  # by this evaluation
    # Only planned removals happen, and nothing protected, nor anything whose tags moved since the plan.
    assert removed <= {d for d, action in removals.items() if action == "delete"}
    assert archived <= {d for d, action in removals.items() if action == "archive"}
    for digest, detail in after.items():
        if digest not in removals and digest not in retagged:
            assert detail == before[digest]
    assert not removed & scenario.in_use
    assert not removed & retagged
    assert all(NOW - before[d].image_pushed_at > scenario.config.safety.min_age for d in removed)
    for digest, parents in parents_of(snapshot).items():
        if digest in removed:
            assert not parents & after.keys(), "gone while an index or subject it lives and dies with stayed"
    # Dry, blocked and skipped evaluations change nothing.
    if scenario.dry_run or plan.blocked or decisions.skipped:
        assert registry.mutating_calls == []
        assert not removed
        assert not archived
        return
    # The report: deleted exactly what went, bar lost answers, which are failed NotConfirmed; each removal once.
    deleted = [e.image_digest for e in report.deleted]
    failed = {e.image_digest: e.error_code for e in report.failed}
    assert set(deleted) <= removed
    assert not set(deleted) & registry.lost_answers  # removed, but ECR's answer was lost: never claimed
    assert {d: failed.get(d) for d in removed - set(deleted)} == dict.fromkeys(removed - set(deleted), "NotConfirmed")
    assert removed - set(deleted) <= registry.lost_answers
    assert {e.image_digest for e in report.cancelled} >= vanished & removals.keys()
    listed = [e.image_digest for e in (*report.deleted, *report.archived, *report.cancelled, *report.failed)]
    assert sorted(listed) == sorted(removals)
    assert report.bytes_reclaimed == sum(before[d].image_size_in_bytes or 0 for d in deleted)
