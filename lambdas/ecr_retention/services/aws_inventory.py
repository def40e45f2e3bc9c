"""The AWS inventory collector: what ECS and Lambda use in each account and region, stored as one ordinary in-use
manifest per account and region, `in-use/aws-<account>-<region>.json` (docs/aws-inventory.md).

Unlike the cluster exporter, which stores nothing when any list fails, the collector stores what it could read
with `complete: false`, and names every part it could not read: an incomplete manifest of a source listed in
`safety.clusters` blocks every deletion at once, and meanwhile still protects what was read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import ParamSpec, TypeVar

from ecr_retention.clock import utc_now
from ecr_retention.defects import Defect, contain
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.aws import (
    DEFAULT_REVISIONS,
    REVISIONS_NAMESPACE,
    FunctionCode,
    ImageUse,
    ScheduledTask,
    build_aws_manifest,
    cluster_name,
    function_use,
    inventory_name,
    newest_revisions,
    revision_workload,
    task_definition_use,
    task_use,
)
from ecr_retention.domain.inventory.manifest import (
    InUseManifest,
    InUseSource,
    manifest_json,
    manifest_key,
    parse_manifest,
)
from ecr_retention.domain.limits import IN_USE_MANIFEST
from ecr_retention.domain.timestamps import format_timestamp
from ecr_retention.layout import IN_USE_PREFIX
from ecr_retention.ports import AccountAccess, AccountReaders, Bucket, ManifestStore, ReadFailed, StorageUnavailable

logger = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class BucketManifestStore:
    """`in-use/<name>.json` in the inventory bucket, where the pipeline reads every manifest."""

    bucket: Bucket
    prefix: str = IN_USE_PREFIX

    def store(self, name: str, body: bytes) -> str:
        key = manifest_key(name, self.prefix)
        self.bucket.write(key, body)
        return f"s3://{self.bucket.name}/{key}"

    def stored(self, name: str) -> tuple[str, bytes | None]:
        key = manifest_key(name, self.prefix)
        return f"s3://{self.bucket.name}/{key}", self.bucket.read(key, max_bytes=IN_USE_MANIFEST.max_bytes)


@dataclass(frozen=True)
class ManifestCollection:
    """One source read and stored: an account and region of ECS and Lambda, or an EKS cluster."""

    manifest: InUseManifest
    problems: tuple[str, ...] = ()  # every part that could not be read; any makes the manifest incomplete
    counts: Mapping[str, int] = field(default_factory=dict)  # what was read: "services" -> 12, ...
    location: str | None = None  # where the manifest was stored
    store_error: str | None = None  # why it could not be stored

    @property
    def name(self) -> str:
        return self.manifest.cluster


@dataclass
class _Collection:
    """One account and region being read: the images found, and every part that could not be read."""

    readers: AccountReaders
    uses: list[ImageUse] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("clusters", "services", "tasks", "scheduled tasks", "task definitions", "functions", "function versions"),
            0,
        )
    )

    def attempt(self, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        """`read(*args)`, or None when it failed: the failure is a problem of the collection."""
        try:
            return read(*args, **kwargs)
        except ReadFailed as error:
            if str(error) not in self.problems:  # one unreadable definition named by many services: said once
                self.problems.append(str(error))
            return None

    def add_task_definition(self, namespace: str, workload: str, source: InUseSource, arn: str) -> None:
        definition = self.attempt(self.readers.ecs.task_definition, arn)
        if definition is not None:
            self.uses.append(task_definition_use(namespace, workload, source, definition))


def collect_aws_inventory(
    readers: AccountReaders, *, generated_at: datetime, revisions: int = DEFAULT_REVISIONS
) -> ManifestCollection:
    """Read one account in one region. Never raises for AWS failures: each becomes a problem and makes the
    manifest incomplete; everything else that could be read is in it."""
    collection = _Collection(readers)
    _collect_ecs(collection)
    _collect_scheduled_tasks(collection)
    _collect_revisions(collection, revisions)
    _collect_functions(collection)
    manifest = build_aws_manifest(
        inventory_name(readers.account, readers.region),
        generated_at,
        collection.uses,
        complete=not collection.problems,
    )
    return ManifestCollection(manifest=manifest, problems=tuple(collection.problems), counts=dict(collection.counts))


def _collect_ecs(collection: _Collection) -> None:
    """Services (every live deployment and task set: a rollout or rollback in progress keeps both sides) and
    running or pending tasks (with the digests ECS resolved)."""
    ecs = collection.readers.ecs
    clusters = collection.attempt(ecs.cluster_arns) or []
    collection.counts["clusters"] = len(clusters)
    for cluster_arn in clusters:
        namespace = cluster_name(cluster_arn)
        services = collection.attempt(ecs.services, cluster_arn) or []
        collection.counts["services"] += len(services)
        for service in services:
            for arn in service.task_definition_arns:
                collection.add_task_definition(namespace, f"Service/{service.name}", "ecs-service", arn)
        tasks = collection.attempt(ecs.tasks, cluster_arn) or []
        collection.counts["tasks"] += len(tasks)
        collection.uses.extend(task_use(task) for task in tasks)


def _collect_scheduled_tasks(collection: _Collection) -> None:
    """EventBridge rule targets on every bus and EventBridge Scheduler schedules that run an ECS task."""
    found = [*_rule_targets(collection), *_scheduler_tasks(collection)]
    collection.counts["scheduled tasks"] = len(found)
    for task in found:
        collection.add_task_definition(cluster_name(task.cluster_arn), task.workload, "ecs-task", task.task_definition)


def _rule_targets(collection: _Collection) -> list[ScheduledTask]:
    """The ECS tasks EventBridge rules run, on every bus."""
    scheduled = collection.readers.scheduled
    found: list[ScheduledTask] = []
    for bus in collection.attempt(scheduled.event_buses) or []:
        for rule in collection.attempt(scheduled.rules, bus) or []:
            found.extend(collection.attempt(scheduled.rule_tasks, bus, rule) or [])
    return found


def _scheduler_tasks(collection: _Collection) -> list[ScheduledTask]:
    """The ECS tasks EventBridge Scheduler schedules run."""
    scheduled = collection.readers.scheduled
    found: list[ScheduledTask] = []
    for group, name in collection.attempt(scheduled.schedules) or []:
        task = collection.attempt(scheduled.schedule_task, group, name)
        if task is not None:
            found.append(task)
    return found


def _collect_revisions(collection: _Collection, revisions: int) -> None:
    """The newest ACTIVE revisions of each family: what `update-service --task-definition <older>` goes back to."""
    if revisions <= 0:
        return
    ecs = collection.readers.ecs
    arns = newest_revisions(collection.attempt(ecs.active_task_definition_arns) or [], revisions)
    collection.counts["task definitions"] = len(arns)
    for arn in arns:
        definition = collection.attempt(ecs.task_definition, arn)
        if definition is not None:
            collection.uses.append(
                task_definition_use(REVISIONS_NAMESPACE, revision_workload(definition), "ecs-task", definition)
            )


def _collect_functions(collection: _Collection) -> None:
    """Container-image functions: $LATEST, every published version, and each alias by name."""
    functions = collection.readers.functions
    versions = collection.attempt(functions.image_functions) or {}
    collection.counts["functions"] = len(versions)
    for function, qualifiers in sorted(versions.items()):
        codes = _collect_versions(collection, function, qualifiers)
        collection.counts["function versions"] += len(qualifiers)
        _collect_aliases(collection, function, codes)


def _collect_versions(collection: _Collection, function: str, qualifiers: Sequence[str]) -> dict[str, FunctionCode]:
    """The function's versions ($LATEST and the published ones), each used by its qualifier; their code by it."""
    functions = collection.readers.functions
    codes = {}
    for qualifier in qualifiers:
        code = collection.attempt(functions.code, function, qualifier)
        if code is not None:
            codes[qualifier] = code
            collection.uses.append(function_use(function, qualifier, code))
    return codes


def _collect_aliases(collection: _Collection, function: str, codes: Mapping[str, FunctionCode]) -> None:
    """Each alias used by its name, with the code of each version it routes to (read again if not yet read)."""
    functions = collection.readers.functions
    for alias in collection.attempt(functions.aliases, function) or []:
        for version in alias.versions:
            code = codes.get(version) or collection.attempt(functions.code, function, version)
            if code is not None:
                collection.uses.append(function_use(function, alias.name, code))


def unreachable_collection(account: str, region: str, generated_at: datetime, problem: str) -> ManifestCollection:
    """The account could not be entered: an empty, incomplete manifest, so that its staleness is not the only
    sign and an expected source blocks at once."""
    manifest = build_aws_manifest(inventory_name(account, region), generated_at, (), complete=False)
    return ManifestCollection(manifest=manifest, problems=(problem,))


def export_aws_inventory(
    access: AccountAccess,
    regions: Sequence[str],
    store: ManifestStore,
    *,
    revisions: int = DEFAULT_REVISIONS,
    clock: Callable[[], datetime] = utc_now,
) -> list[ManifestCollection]:
    """Collect and store one manifest per account and region, each whole in one write. A manifest that cannot
    be stored is reported in its collection (`store_error`) and the others are still collected and stored;
    callers fail the run for it. Raises ReadFailed only when the caller's own account cannot be named."""
    collections = []
    for account in access.accounts():
        for region in regions:
            # Taken before the first read, so that the manifest never claims to be fresher than its oldest data.
            generated_at = clock()
            try:
                readers = access.readers(account, region)
            except ReadFailed as error:
                collection = unreachable_collection(account, region, generated_at, str(error))
            else:
                collection = collect_aws_inventory(readers, generated_at=generated_at, revisions=revisions)
            collections.append(stored_collection(collection, store))
    return collections


def carried_forward(collection: ManifestCollection, store: ManifestStore) -> ManifestCollection:
    """An incomplete collection keeps the references of the manifest it replaces that it could not read again, so
    that what the last reading found running stays protected while the source cannot be read (an exporter that
    fails stores nothing, which leaves its previous manifest in place to the same effect). The manifest stays
    `complete: false`; a complete collection replaces the previous manifest whole."""
    if collection.manifest.complete:
        return collection
    try:
        source, body = store.stored(collection.name)
    except (StorageUnavailable, OSError, InputError) as error:
        logger.warning("reading the previous %s failed: %s", collection.name, error)
        return _held_back(collection, f"the previous manifest could not be read ({_described(error)})")
    if body is None:
        return collection
    try:
        previous = parse_manifest(source, body)
    except InputError as error:
        return _held_back(collection, f"the previous manifest is unreadable ({error})")
    if previous.cluster != collection.name:
        return collection  # a misfiled manifest protects as it is read from its own key; not ours to carry
    return _carried_over(collection, previous)


def _carried_over(collection: ManifestCollection, previous: InUseManifest) -> ManifestCollection:
    """The collection with the previous manifest's references it did not read again, noted as carried over."""
    seen = set(collection.manifest.images)
    carried = tuple(dict.fromkeys(image for image in previous.images if image not in seen))
    if not carried:
        return collection
    manifest = collection.manifest.model_copy(update={"images": (*collection.manifest.images, *carried)})
    references = "1 image reference" if len(carried) == 1 else f"{len(carried)} image references"
    note = (
        f"{references} carried over from the previous manifest (generated {format_timestamp(previous.generated_at)}),"
        " not read again"
    )
    return ManifestCollection(manifest=manifest, problems=(*collection.problems, note), counts=collection.counts)


def _held_back(collection: ManifestCollection, problem: str) -> ManifestCollection:
    """An incomplete collection is never stored over a manifest that could not be read: the unreadable one may
    protect more than this reading found, and while it stays it blocks every run, which is the safe side."""
    return ManifestCollection(
        manifest=collection.manifest,
        problems=collection.problems,
        counts=collection.counts,
        store_error=(
            f"not stored: {problem}, and this collection is incomplete, so it would replace what the previous "
            "manifest may protect; the previous one stays in place"
        ),
    )


def stored_collection(collection: ManifestCollection, store: ManifestStore) -> ManifestCollection:
    """A store that fails in any way (a bucket, or a local file for the CLI) is reported in the result and fails the
    run; the other accounts still go out. The store's declared errors are caught by type; anything else is a defect,
    contained so that it, too, fails only this collection."""
    stored = contain(
        partial(_stored, collection, store), log=logger, what=f"storing the in-use manifest {collection.name}"
    )
    if not isinstance(stored, Defect):
        return stored
    return ManifestCollection(
        manifest=collection.manifest, problems=collection.problems, counts=collection.counts, store_error=str(stored)
    )


def _stored(collection: ManifestCollection, store: ManifestStore) -> ManifestCollection:
    # Serialised as the exporter does: camelCase keys, `digest` only where AWS resolved one.
    collection = carried_forward(collection, store)
    if collection.store_error is not None:
        return collection
    try:
        location = store.store(collection.name, manifest_json(collection.manifest))
    except (StorageUnavailable, OSError) as error:
        logger.warning("storing the in-use manifest %s failed: %s", collection.name, error)
        return ManifestCollection(
            manifest=collection.manifest,
            problems=collection.problems,
            counts=collection.counts,
            store_error=_described(error),
        )
    return ManifestCollection(
        manifest=collection.manifest, problems=collection.problems, counts=collection.counts, location=location
    )


def _described(error: Exception) -> str:
    # As the reports have always worded a store's failure: the adapter's error class, then its message.
    return f"{type(error).__name__}: {error}"


def failed_collections(collections: Iterable[ManifestCollection]) -> list[ManifestCollection]:
    """Collections that are incomplete or were not stored: the run found problems."""
    return [c for c in collections if c.problems or c.store_error is not None]
