"""The doctor's fixes settle: the one fixed policy it writes, checked again, leaves nothing a policy edit fixes.

Generated repositories (version and mutable tags, multi-arch indexes, referrers, archived images),
policies (count and age rules of every tag status, archive rules) and in-use references (by digest and by
tag), with and without the pipeline's plan. Derandomized, so that CI runs the same examples every time.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecr_retention.domain.doctor.diagnosis import comparable_config, diagnose
from ecr_retention.domain.doctor.diagnosis_model import RepositoryDiagnosis
from ecr_retention.domain.doctor.fixes import intended_own_images
from ecr_retention.domain.doctor.tag_kinds import is_mutable_tag
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.lifecycle.evaluation import LifecycleEvaluation, evaluate
from ecr_retention.domain.lifecycle.matching import selects, storage_class_of, tag_matches
from ecr_retention.domain.lifecycle.parsing import parse_policy
from ecr_retention.domain.lifecycle.policy import LifecyclePolicy, LifecycleRule
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import RepositoryPlan
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.registry.images import ImageDetail, RepositorySnapshot, Snapshot
from support.builders import ACCOUNT, HOST, NOW, OCI_INDEX, REGION, config, digest, image, in_use, index_manifest

TAGS = ["1.0.0", "1.0.1", "1.1.0", "v2", "1.2.0-dev", "latest", "dev", "stable", "prod-1", "beta-3", "main"]
PATTERNS = ["*.*", "1.*", "v*", "dev", "latest", "prod*", "*-*", "*", "beta*", "*1*", "1.0.0"]
PREFIXES = ["1.", "v", "prod", "beta", "dev"]
SETTLED_PROBLEMS = ("delete the lifecycle policy", "at most 50 allowed")


@st.composite
def repositories(draw: st.DrawFn) -> tuple[list[ImageDetail], dict[str, Any]]:
    """Images with unique tags, some of them indexes of older children and some referrers of others."""
    count = draw(st.integers(min_value=0, max_value=10))
    used_tags: set[str] = set()
    details: list[dict[str, Any]] = []
    manifests: dict[str, Any] = {}
    for n in range(count):
        tags = [t for t in draw(st.lists(st.sampled_from(TAGS), max_size=3, unique=True)) if t not in used_tags]
        used_tags.update(tags)
        hours = draw(st.integers(min_value=0, max_value=24 * 40))
        status = draw(st.sampled_from(["ACTIVE"] * 6 + ["ARCHIVED"]))
        role = draw(st.sampled_from(["plain"] * 5 + ["index", "referrer"]))
        earlier = [f"img-{k}" for k in range(n)]
        detail = image(
            f"img-{n}",
            *tags,
            age=timedelta(hours=hours),
            status=status,
            media_type=OCI_INDEX if role == "index" else "application/vnd.oci.image.manifest.v1+json",
            subject=draw(st.sampled_from(earlier)) if role == "referrer" and earlier else None,
        )
        if status == "ARCHIVED":
            detail["lastArchivedAt"] = (NOW - timedelta(days=draw(st.integers(min_value=0, max_value=200)))).isoformat()
        if role == "index" and earlier:
            children = draw(st.lists(st.sampled_from(earlier), min_size=1, max_size=2, unique=True))
            manifests[digest(f"img-{n}")] = index_manifest(*children)
        details.append(detail)
    return [ImageDetail.model_validate({**d, "repositoryName": "app"}) for d in details], manifests


@st.composite
def selections(draw: st.DrawFn, status: str, storage: str = "standard") -> dict[str, Any]:
    selection: dict[str, Any] = {"tagStatus": status}
    if status == "tagged":
        if draw(st.booleans()):
            selection["tagPatternList"] = draw(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=2, unique=True))
        else:
            selection["tagPrefixList"] = draw(st.lists(st.sampled_from(PREFIXES), min_size=1, max_size=2, unique=True))
    if storage == "archive":
        selection.update(storageClass="archive", countType="sinceImageTransitioned", countUnit="days")
        selection["countNumber"] = draw(st.integers(min_value=90, max_value=150))
        return selection
    kind = draw(st.sampled_from(["imageCountMoreThan", "imageCountMoreThan", "sinceImagePushed", "sinceImagePulled"]))
    selection["countType"] = kind
    selection["countNumber"] = draw(st.integers(min_value=1, max_value=6))
    if kind != "imageCountMoreThan":
        selection["countUnit"] = "days"
    return selection


def rule_json(priority: int, selection: dict[str, Any]) -> dict[str, Any]:
    action = (
        {"type": "transition", "targetStorageClass": "archive"}
        if selection["countType"] == "sinceImagePulled"
        else {"type": "expire"}
    )
    return {"rulePriority": priority, "selection": selection, "action": action}


@st.composite
def policies(draw: st.DrawFn) -> LifecyclePolicy:
    """Valid policies: `any` last and one `untagged` rule per storage class; invalid draws are discarded."""
    standard = draw(st.lists(selections("tagged"), max_size=4))
    if draw(st.booleans()):
        standard.append(draw(selections("untagged")))
    standard = list(draw(st.permutations(standard)))
    if draw(st.booleans()) or not standard:
        standard.append(draw(selections("any")))
    archive = draw(st.lists(selections(draw(st.sampled_from(["tagged", "untagged", "any"])), "archive"), max_size=1))
    body = standard + archive
    priorities = sorted(
        draw(st.lists(st.integers(min_value=1, max_value=60), min_size=len(body), max_size=len(body), unique=True))
    )
    text = json.dumps({"rules": [rule_json(p, s) for p, s in zip(priorities, body, strict=True)]}, indent=2)
    try:
        return parse_policy(text)
    except InputError:  # e.g. two rules with the same tagPrefixList
        return draw(st.nothing())


@st.composite
def inventories(draw: st.DrawFn, images: list[ImageDetail]) -> Inventory:
    """In-use references to some of the images: by digest, or by one of their tags."""
    entries: list[tuple[str, str | None]] = []
    for detail in (
        draw(st.lists(st.sampled_from(images), max_size=3, unique_by=lambda i: i.image_digest)) if images else []
    ):
        seed = next(f"img-{n}" for n in range(20) if digest(f"img-{n}") == detail.image_digest)
        if detail.image_tags and draw(st.booleans()):
            entries.append((f"{HOST}/app:{draw(st.sampled_from(detail.image_tags))}", None))
        else:
            entries.append((f"{HOST}/app@{detail.image_digest}", seed))
    return Inventory(manifests=(in_use("prod", *entries),)) if entries else Inventory()


RULES_FILES = [
    [{"keep": {"tags": ["latest", "dev"]}}, {"delete": {"tags": ["*.*"], "older_than": "10d"}}],
    [
        {"delete": {"tags": ["*"], "older_than": "5d", "keep_newest": 2}},
        {"delete": {"untagged": True, "older_than": "1d"}},
    ],
]


def repository_plan(
    rules: list[dict[str, Any]], images: list[ImageDetail], manifests: dict[str, Any], inventory: Inventory
) -> RepositoryPlan:
    snapshot = Snapshot(
        registry_id=ACCOUNT,
        region=REGION,
        repositories=(RepositorySnapshot(repository_name="app", image_details=tuple(images), manifests=manifests),),
    )
    return plan_registry(comparable_config(config(rules)), snapshot, inventory, NOW).repositories[0]


def run(
    policy: LifecyclePolicy,
    images: list[ImageDetail],
    manifests: dict[str, Any],
    inventory: Inventory,
    plan: RepositoryPlan | None,
) -> RepositoryDiagnosis:
    return diagnose(
        policy,
        images,
        now=NOW,
        manifests=manifests,
        repository_name="app",
        registry=RegistryCoordinates(ACCOUNT, REGION),
        inventory=inventory,
        plan=plan,
    )


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(policy=policies(), repo=repositories(), data=st.data())
def test_the_fixed_policy_leaves_nothing_that_a_policy_edit_fixes(
    policy: LifecyclePolicy, repo: tuple[list[ImageDetail], dict[str, Any]], data: st.DataObject
) -> None:
    images, manifests = repo
    inventory = data.draw(inventories(images))
    rules = data.draw(st.sampled_from([None, *RULES_FILES]))
    plan = None if rules is None else repository_plan(rules, images, manifests, inventory)

    diagnosis = run(policy, images, manifests, inventory, plan)

    edited = [finding for finding in diagnosis.findings if finding.policy_edit is not None]
    if not edited:
        assert diagnosis.fixed_policy is None
        assert diagnosis.fixed_policy_problem is None
        return
    if diagnosis.fixed_policy is None:
        assert diagnosis.fixed_policy_problem is not None
        assert any(problem in diagnosis.fixed_policy_problem for problem in SETTLED_PROBLEMS), (
            diagnosis.fixed_policy_problem
        )
        return
    fixed = parse_policy(json.dumps(diagnosis.fixed_policy, indent=2))
    again = run(fixed, images, manifests, inventory, plan)
    assert [(f.code, f.message) for f in again.findings if f.policy_edit is not None] == []
    assert again.findings == diagnosis.fixed_policy_findings
    # Every edited finding is gone: the same code about the same image or rule does not come back.
    fixed_kinds = {(f.code, f.image_digest) for f in edited if f.image_digest is not None}
    assert not fixed_kinds & {(f.code, f.image_digest) for f in again.findings}
    # And the fix makes nothing worse: an image that must stay and that the policy keeps, the fix keeps.
    before, after = evaluate(policy, images, NOW, manifests), evaluate(fixed, images, NOW, manifests)
    for detail in images:
        if must_stay(detail, inventory) and before.action_of(detail.image_digest) is None:
            assert after.action_of(detail.image_digest) is None, detail.image_tags


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(policy=policies(), repo=repositories(), data=st.data())
def test_the_fixed_policy_loses_nothing_to_an_and_list_and_a_raised_count_keeps_the_authors_number(
    policy: LifecyclePolicy, repo: tuple[list[ImageDetail], dict[str, Any]], data: st.DataObject
) -> None:
    """Issue 35: an image a lower rule removes because a tag list is AND is reported, and the fixed policy removes it,
    if at all, by one entry's rule of the split; a count the fix raised keeps the author's number of its own images in
    this registry, now (the simulator says)."""
    images, manifests = repo
    inventory = data.draw(inventories(images))
    diagnosis = run(policy, images, manifests, inventory, None)
    before = evaluate(policy, images, NOW, manifests)
    lost = {rule.rule_priority: lost_to_the_and(before, rule) for rule in policy.ordered_rules}
    for priority in (priority for priority, digests in lost.items() if digests):
        assert any(f.code == "tag-list-is-and" and f.rule_priority == priority for f in diagnosis.findings)
    if diagnosis.fixed_policy is None:
        return
    fixed = parse_policy(json.dumps(diagnosis.fixed_policy, indent=2))
    after = evaluate(fixed, images, NOW, manifests)
    for priority, digests in lost.items():
        for digest_ in digests:
            verdict = after.verdicts.get(digest_)
            assert verdict is None or is_split_part(verdict.rule, policy, priority), (priority, verdict)
    for rule in fixed.ordered_rules:
        if rule.is_count_rule and intended_own_images(rule) != rule.selection.count_number:
            own, kept = own_images(after, rule)
            assert kept >= min(intended_own_images(rule), own), (rule.rule_priority, kept, own)


def lost_to_the_and(evaluation: LifecycleEvaluation, listing: LifecycleRule) -> set[str]:
    """The images of a multi-entry rule's storage class tagged for some entry (not every one) that a lower rule
    removes (expires or archives)."""
    selection = listing.selection
    if selection.tag_status != "tagged" or len(selection.patterns) < 2:
        return set()
    return {
        detail.image_digest
        for detail in evaluation.images
        if storage_class_of(detail) == selection.effective_storage_class
        and any(tag_matches(tag, pattern) for tag in detail.image_tags for pattern in selection.patterns)
        and not selects(selection, detail)
        and detail.image_digest in evaluation.verdicts
        and evaluation.verdicts[detail.image_digest].rule.rule_priority > listing.rule_priority
    }


def is_split_part(rule: LifecycleRule, policy: LifecyclePolicy, priority: int) -> bool:
    """A one-entry rule for an entry of a multi-entry rule at or above `priority` (two split rules that share an entry
    keep its first part only)."""
    entries = {
        pattern
        for listing in policy.ordered_rules
        if listing.rule_priority <= priority and len(listing.selection.patterns) > 1
        for pattern in listing.selection.patterns
    }
    return (
        rule.selection.tag_status == "tagged"
        and len(rule.selection.patterns) == 1
        and rule.selection.patterns[0] in entries
    )


def own_images(evaluation: LifecycleEvaluation, rule: LifecycleRule) -> tuple[int, int]:
    """How many images the rule selects first that it could act on (not an index's guarded child, not a referrer that
    goes with its subject), and how many of those stay."""
    rule_evaluation = evaluation.rule(rule.rule_priority)
    guarded = {image.image_digest for image, by in rule_evaluation.window_blocked if by is None}
    guarded |= {image.image_digest for image in rule_evaluation.index_children}
    own = [
        image
        for image in rule_evaluation.selected
        if evaluation.first_selector[image.image_digest] == rule.rule_priority
        and image.image_digest not in guarded
        and image.image_digest not in evaluation.cascaded
    ]
    return len(own), sum(1 for image in own if evaluation.action_of(image.image_digest) is None)


def must_stay(detail: ImageDetail, inventory: Inventory) -> bool:
    references = {entry.image for manifest in inventory.manifests for entry in manifest.images}
    in_use = f"{HOST}/app@{detail.image_digest}" in references or any(
        f"{HOST}/app:{tag}" in references for tag in detail.image_tags
    )
    return in_use or any(is_mutable_tag(tag) for tag in detail.image_tags)


# Tag lists read as AND on every shape (issue 35): a list of alternatives above lower rules, with moving tags that
# ride on one build each, so that some images carry every entry and most carry one.
FAMILIES = ["staging-", "release-", "main-"]
MOVING = ["dev", "rc"]
LIST_ENTRIES = ["staging-*", "release-*", "dev", "rc"]


@st.composite
def and_list_repositories(draw: st.DrawFn) -> list[ImageDetail]:
    details = []
    moving = {tag: draw(st.integers(min_value=0, max_value=13)) for tag in MOVING}
    for n in range(draw(st.integers(min_value=2, max_value=14))):
        family = draw(st.sampled_from(FAMILIES))
        riding = [tag for tag, at in moving.items() if at == n]
        hours = draw(st.integers(min_value=1, max_value=24 * 60))
        details.append(image(f"img-{n}", f"{family}{n}", *riding, age=timedelta(hours=hours)))
    return [ImageDetail.model_validate({**d, "repositoryName": "app"}) for d in details]


def count_or_age(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"countType": "imageCountMoreThan", "countNumber": draw(st.integers(min_value=1, max_value=6))}
    return {
        "countType": "sinceImagePushed",
        "countUnit": "days",
        "countNumber": draw(st.integers(min_value=1, max_value=40)),
    }


@st.composite
def and_list_policies(draw: st.DrawFn) -> LifecyclePolicy:
    listed = draw(st.lists(st.sampled_from(LIST_ENTRIES), min_size=2, max_size=3, unique=True))
    body = [{"tagStatus": "tagged", "tagPatternList": listed} | count_or_age(draw)]
    for family in draw(st.lists(st.sampled_from(FAMILIES), max_size=2, unique=True)):
        body.append({"tagStatus": "tagged", "tagPatternList": [f"{family}*"]} | count_or_age(draw))
    if draw(st.booleans()) or len(body) == 1:
        body.append({"tagStatus": "any"} | count_or_age(draw))
    rules = [{"rulePriority": n + 1, "selection": s, "action": {"type": "expire"}} for n, s in enumerate(body)]
    return parse_policy(json.dumps({"rules": rules}, indent=2))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(policy=and_list_policies(), images=and_list_repositories())
def test_an_and_list_loses_no_image_to_a_lower_rule_in_the_fixed_policy(
    policy: LifecyclePolicy, images: list[ImageDetail]
) -> None:
    diagnosis = run(policy, images, {}, Inventory(), None)
    before = evaluate(policy, images, NOW)
    lost = lost_to_the_and(before, policy.ordered_rules[0])
    if lost:
        assert any(f.code == "tag-list-is-and" and f.rule_priority == 1 for f in diagnosis.findings)
    if diagnosis.fixed_policy is None:
        assert not lost or diagnosis.fixed_policy_problem is not None
        return
    fixed = parse_policy(json.dumps(diagnosis.fixed_policy, indent=2))
    again = run(fixed, images, {}, Inventory(), None)
    assert [(f.code, f.message) for f in again.findings if f.policy_edit is not None] == []
    after = evaluate(fixed, images, NOW)
    for digest_ in lost:
        verdict = after.verdicts.get(digest_)
        assert verdict is None or is_split_part(verdict.rule, policy, 1), verdict
    for rule in fixed.ordered_rules:
        if rule.is_count_rule and intended_own_images(rule) != rule.selection.count_number:
            own, kept = own_images(after, rule)
            assert kept >= min(intended_own_images(rule), own), (rule.rule_priority, kept, own)
