"""What a run must do, worked out independently of the code under test: from a snapshot taken before the run
and the plan the offline planner makes of it.

- the registry after a run: every planned delete gone, every planned archive ARCHIVED, everything else exactly as
  it was (compared on full describe-images details);
- the minimum number of API calls of a sweep, by operation (docs/architecture.md, "One run, step by step").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ecr_retention.domain.planning.plan import Plan, RepositoryPlan
from ecr_retention.domain.registry.digests import INDEX_MEDIA_TYPES
from ecr_retention.domain.registry.images import RepositorySnapshot, Snapshot

State = dict[str, dict[str, dict[str, Any]]]  # repository -> digest -> describe-images detail

PAGE = 1000  # DescribeImages and DescribeRepositories page size
BATCH = 100  # imageIds per DescribeImages, BatchGetImage and BatchDeleteImage call
COSIGN_TAG = re.compile(r"^sha256-([0-9a-f]{64})\.(sig|att|sbom)$")


def planned(plan: Plan, action: str) -> dict[str, set[str]]:
    """repository -> digests the plan gives this action."""
    return {
        repository.repository_name: {d.image_digest for d in repository.images if d.action == action}
        for repository in plan.repositories
    }


def candidates(plan: Plan) -> dict[str, dict[str, str]]:
    """repository -> digest -> action, for every image the plan removes."""
    return {
        repository.repository_name: {d.image_digest: d.action for d in repository.images if d.removes}
        for repository in plan.repositories
    }


def without_archive_time(detail: Mapping[str, Any]) -> dict[str, Any]:
    """The detail without `lastArchivedAt`, which moto stamps with the wall clock when it archives."""
    return {key: value for key, value in detail.items() if key != "lastArchivedAt"}


def expected_after(before: State, plan: Plan, *, untouched: Iterable[str] = ()) -> State:
    """The registry after a run that did exactly what the plan says (repositories in `untouched` are left as
    they were: busy, blocked, gone)."""
    deletes, archives = planned(plan, "delete"), planned(plan, "archive")
    skip = set(untouched)
    state: State = {}
    for repository, details in before.items():
        if repository in skip:
            state[repository] = {digest: dict(detail) for digest, detail in details.items()}
            continue
        gone, archived = deletes.get(repository, set()), archives.get(repository, set())
        state[repository] = {
            digest: ({**detail, "imageStatus": "ARCHIVED"} if digest in archived else dict(detail))
            for digest, detail in details.items()
            if digest not in gone
        }
    return state


def assert_registry_is(after: State, expected: State, *, archived: Mapping[str, set[str]]) -> None:
    """Equal detail for detail. An image this run archived must carry a fresh `lastArchivedAt`; apart from it,
    its detail must be the expected one."""
    assert sorted(after) == sorted(expected)
    for repository in expected:
        assert sorted(after[repository]) == sorted(expected[repository]), repository
        for digest, detail in expected[repository].items():
            actual = after[repository][digest]
            if digest in archived.get(repository, set()):
                assert "lastArchivedAt" in actual, (repository, digest)
                assert without_archive_time(actual) == without_archive_time(detail), (repository, digest)
            else:
                assert actual == detail, (repository, digest)


def parents(repository: RepositorySnapshot) -> dict[str, set[str]]:
    """digest -> the images it lives and dies with: the indexes listing it, the subject it signs or refers to."""
    present = {image.image_digest for image in repository.image_details}
    found: dict[str, set[str]] = {}
    for image in repository.image_details:
        manifest = repository.manifests.get(image.image_digest) or {}
        for entry in manifest.get("manifests", []):
            if entry["digest"] in present:
                found.setdefault(entry["digest"], set()).add(image.image_digest)
        subjects = {image.subject_manifest_digest} if image.subject_manifest_digest else set()
        subjects |= {
            f"sha256:{match.group(1)}" for tag in image.image_tags if (match := COSIGN_TAG.match(tag)) is not None
        }
        for subject in subjects & present:
            found.setdefault(image.image_digest, set()).add(subject)
    return found


def deletion_waves(repository: RepositorySnapshot, removed: Mapping[str, str]) -> list[dict[str, str]]:
    """The removals in waves: an image goes one wave after the last of its parents that is removed too."""
    links = parents(repository)
    depth: dict[str, int] = {}

    def depth_of(digest: str) -> int:
        if digest not in depth:
            removed_parents = [parent for parent in links.get(digest, ()) if parent in removed]
            depth[digest] = 1 + max((depth_of(parent) for parent in removed_parents), default=-1)
        return depth[digest]

    waves: list[dict[str, str]] = []
    for digest, action in removed.items():
        number = depth_of(digest)
        while len(waves) <= number:
            waves.append({})
        waves[number][digest] = action
    return waves


def minimum_calls(
    snapshot: Snapshot,
    plan: Plan,
    *,
    tag_sources: Mapping[str, Iterable[str]],
    cached_indexes: Iterable[str] = (),
    dry_run: bool = False,
) -> Counter[str]:
    """The fewest ECR calls a sweep of every repository a policy matches can make, by operation. A repository whose plan
    changes the registry is read twice in a run that acts: once without its lease, and again under the lease before
    acting (services/evaluate.py; docs/safety.md 12)."""
    cached = set(cached_indexes)
    by_name = {repository.repository_name: repository for repository in snapshot.repositories}
    managed = [repository for repository in plan.repositories if repository.policy is not None]
    removals = candidates(plan)
    calls: Counter[str] = Counter()
    calls["DescribeRepositories"] = math.ceil(max(len(by_name), 1) / PAGE)
    calls["DescribeRegistry"] = 1  # the replication rules, once per run
    calls["DescribeRepositoryCreationTemplates"] = 1  # the doctor's pass over the templates, once per run
    for repository_plan in managed:
        name = repository_plan.repository_name
        repository = by_name[name]
        calls["GetLifecyclePolicy"] += 1
        times = readings(repository_plan, dry_run=dry_run)
        calls["DescribeImages"] += times * pages(repository)
        calls["DescribeImages"] += times * sum(pages(by_name[source]) for source in tag_sources.get(name, ()))
        indexes = [
            image.image_digest
            for image in repository.image_details
            if image.image_manifest_media_type in INDEX_MEDIA_TYPES and image.image_digest not in cached
        ]
        calls["BatchGetImage"] += math.ceil(len(indexes) / BATCH)
        removed = removals[name]
        if dry_run or not removed:
            continue
        calls["DescribeImages"] += math.ceil(len(removed) / BATCH)  # the re-check by imageIds
        for wave in deletion_waves(repository, removed):
            calls["BatchDeleteImage"] += math.ceil(sum(1 for a in wave.values() if a == "delete") / BATCH)
        calls["UpdateImageStorageClass"] += sum(1 for action in removed.values() if action == "archive")
    return +calls


def readings(repository_plan: RepositoryPlan, *, dry_run: bool = False) -> int:
    """How many times a run reads a managed repository: twice when its plan changes the registry and the run acts
    (once without the lease, once under it), once otherwise."""
    acts = not dry_run and any(d.removes or d.action == "restore" for d in repository_plan.images)
    return 2 if acts else 1


def pages(repository: RepositorySnapshot) -> int:
    """DescribeImages pages of 1,000 for a whole repository (an empty one still takes one call)."""
    return max(1, math.ceil(len(repository.image_details) / PAGE))
