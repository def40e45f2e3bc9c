"""In-use protection for one run: which images the inventory protects in one registry, and why the
inventory blocks a run (an unreadable manifest anywhere, or an expected cluster without a fresh one).

Pure, like the planner: the planner and the lifecycle doctor both read in-use protection from here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ecr_retention.domain.config import Safety
from ecr_retention.domain.durations import format_duration, humanize_age
from ecr_retention.domain.inventory.clusters import ClusterId
from ecr_retention.domain.inventory.inspector import INSPECTOR_SOURCE, in_use_at, in_use_since, inspector_words
from ecr_retention.domain.inventory.manifest import (
    ClusterManifest,
    InUseImage,
    InUseManifest,
    Inventory,
    RememberedImage,
    Workload,
)
from ecr_retention.domain.registry.coordinates import (
    UNKNOWN_REGISTRY,
    EcrReading,
    InOtherRegistry,
    InReachedReplica,
    InUnreachedReplica,
    NotAReference,
    NotEcr,
    ReferenceReading,
    RegistryCoordinates,
    read_reference,
)
from ecr_retention.domain.registry.replication import Replica
from ecr_retention.layout import AWS_INVENTORY_NAME_PREFIX, INSPECTOR_NAME_PREFIX

if TYPE_CHECKING:  # the models of a registry's images load where images are read: the sentinel reads few
    from ecr_retention.domain.registry.images import ImageDetail

# A manifest a few minutes ahead of our clock is clock skew; further ahead, it is not to be trusted.
CLOCK_SKEW = timedelta(minutes=5)
MAX_WARNINGS_PER_CLUSTER = 20
# How the report names what Amazon Inspector's reading cannot see (docs/aws-inventory.md).
COVERAGE_GAP_PREFIX = "Inspector coverage gap: "


@dataclass(frozen=True)
class InventoryCheck:
    """What the in-use inventory means for a run: why it may delete nothing, and what people should know."""

    blocked: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def __add__(self, other: InventoryCheck) -> InventoryCheck:
        return InventoryCheck(blocked=self.blocked + other.blocked, warnings=self.warnings + other.warnings)


def check_inventory(
    safety: Safety,
    inventory: Inventory,
    in_use: InUseIndex,
    now: datetime,
    other_registries: Collection[tuple[str, str]] = (),
) -> InventoryCheck:
    """Every reason the inventory blocks a run, and every warning about it, in a stable order. `other_registries`:
    the (account, Region) of the run's other registries (a run that prunes several)."""
    return (
        inventory_blockers(safety, inventory, now)
        + InventoryCheck(warnings=in_use.warnings)
        + in_use.unresolved_blockers(safety.clusters)
        + InventoryCheck(warnings=in_use.foreign_registry_warnings(safety.clusters, other_registries))
        + InventoryCheck(warnings=inspector_gap_warnings(inventory))
    )


def inspector_gap_warnings(inventory: Inventory) -> tuple[str, ...]:
    """Why Amazon Inspector's reading may miss what runs (domain/inventory/inspector.py): each gap its collection
    wrote, and a reading that is incomplete. Inspector only adds protection, so a gap blocks nothing unless the rules
    file expects the reading (safety.clusters); it is named so that nobody takes Inspector's silence for "unused"."""
    warnings: list[str] = []
    for cluster, manifest in sorted(inventory.standing.items()):
        if not cluster.name.startswith(INSPECTOR_NAME_PREFIX):
            continue
        warnings.extend(f"{COVERAGE_GAP_PREFIX}{gap}" for gap in manifest.coverage_gaps or ())
        if not manifest.complete and not manifest.coverage_gaps:
            warnings.append(f"{COVERAGE_GAP_PREFIX}cluster {cluster}: Inspector's reading is incomplete")
    return tuple(warnings)


def _misfiled_warnings(inventory: Inventory) -> tuple[str, ...]:
    return tuple(
        f"{source} declares cluster {manifest.cluster}: a manifest is stored as <cluster>.json, so this one "
        "stands for no cluster; its images still protect"
        for source, manifest in sorted(inventory.misfiled.items())
    )


def inventory_blockers(safety: Safety, inventory: Inventory, now: datetime) -> InventoryCheck:
    """Why this run may delete nothing: any manifest file that cannot be read (whichever cluster it is
    for: its images may run; but a spoke's cluster that neither safety list names only warns, so that one writer of
    a spoke cannot stop every run), and each expected cluster without a fresh, complete manifest of its own: a
    cluster is its account and its name, and a manifest of another account never stands for it."""
    blocking, tolerated = _unreadable(safety, inventory)
    blockers = [f"{source}: unreadable in-use manifest: {problem}" for source, problem in blocking]
    if inventory.memory_problem is not None and safety.in_use_grace:
        blockers.append(
            f"{inventory.memory_problem}; the in-use memory may protect images no manifest names now, so nothing is "
            "deleted until it is readable (docs/operations.md)"
        )
    unreadable = {inventory.cluster_of(source) for source in inventory.problems}
    standing = inventory.standing
    for cluster in sorted(set(safety.clusters) - unreadable):
        problem = expected_manifest_problem(safety, inventory, standing.get(cluster), cluster, now)
        if problem is not None:
            blockers.append(problem)
    return InventoryCheck(
        blocked=tuple(blockers),
        warnings=(
            *_misfiled_warnings(inventory),
            *tolerated,
            *unlisted_cluster_warnings(safety, inventory),
        ),
    )


def _unreadable(safety: Safety, inventory: Inventory) -> tuple[list[tuple[str, str]], list[str]]:
    """The unreadable files that block the run, and the warnings of those that do not: a file under a spoke's folder
    for a cluster in neither safety list (any writer of a listed spoke account could otherwise halt all pruning;
    its images stay protected by the in-use memory for the grace), the first few of each spoke named, then how many
    in all (a flood of files must not flood the report either). Every other unreadable file blocks."""
    blocking: list[tuple[str, str]] = []
    tolerated: dict[str, list[str]] = defaultdict(list)  # spoke account -> its warnings
    for source, problem in sorted(inventory.problems.items()):
        cluster = inventory.cluster_of(source)
        if cluster.spoke_account is None or cluster in safety.listed:
            blocking.append((source, problem))
        else:
            tolerated[cluster.spoke_account].append(
                f"{source}: unreadable in-use manifest of cluster {cluster}, a spoke account's cluster in neither "
                f"safety.clusters nor safety.optional_clusters: {problem}; it blocks nothing, and what it ran stays "
                "protected only by the in-use memory (docs/security.md)"
            )
    return blocking, [warning for account in sorted(tolerated) for warning in _first_few(account, tolerated[account])]


def _first_few(account: str, warnings: list[str]) -> list[str]:
    if len(warnings) <= MAX_WARNINGS_PER_CLUSTER:
        return warnings
    more = len(warnings) - MAX_WARNINGS_PER_CLUSTER
    return [
        *warnings[:MAX_WARNINGS_PER_CLUSTER],
        f"in-use/{account}/: {more} more unreadable files of clusters in neither safety list (docs/security.md)",
    ]


def unlisted_cluster_warnings(safety: Safety, inventory: Inventory) -> tuple[str, ...]:
    """The bucket policy lets any cluster of a listed account and region write its own manifest (the lists of
    clusters no longer fit in it): one the rules file lists in neither safety list is named, and still protects. A
    spoke's cluster named like one of this account's is another cluster: the warning says how the lists name it,
    and never that this account's manifest should go."""
    standing = inventory.standing
    return tuple(
        f"cluster {cluster}: an in-use manifest of a cluster in neither safety.clusters nor safety.optional_clusters;"
        " its images still protect, but nothing expects it (docs/security.md)"
        + _same_name_note(cluster, {*standing, *safety.listed})
        for cluster in sorted(standing)
        if cluster not in safety.listed
        and not cluster.name.startswith((AWS_INVENTORY_NAME_PREFIX, INSPECTOR_NAME_PREFIX))
    )


def _same_name_note(cluster: ClusterId, known: Collection[ClusterId]) -> str:
    """For a spoke's cluster named like one of this account's (with a manifest, or listed): two clusters."""
    if cluster.of_this_account or ClusterId.here(cluster.name) not in known:
        return ""
    return (
        f"; it is account {cluster.account}'s cluster {cluster.name}, not this account's {cluster.name} "
        f"(in-use/{cluster.name}.json): each protects its own images and neither stands for the other; "
        f"the safety lists name the spoke's as {cluster} (docs/rules.md)"
    )


def expected_manifest_problem(
    safety: Safety, inventory: Inventory, manifest: InUseManifest | None, cluster: ClusterId, now: datetime
) -> str | None:
    """Why an expected cluster's (readable or absent) manifest blocks the run, or None when it is fresh and complete."""
    if manifest is None:
        return f"cluster {cluster}: no in-use manifest" + misfiled_note(inventory, cluster)
    if not manifest.complete:
        return f"cluster {cluster}: in-use manifest is incomplete (complete: false)"
    if now - manifest.generated_at > safety.inventory_max_age:
        age = humanize_age(now - manifest.generated_at)
        return (
            f"cluster {cluster}: in-use manifest is {age} old, older than inventory_max_age "
            f"{format_duration(safety.inventory_max_age)}"
        )
    if manifest.generated_at - now > CLOCK_SKEW:
        return (
            f"cluster {cluster}: in-use manifest is dated {humanize_age(manifest.generated_at - now)} "
            "in the future; check the exporter's clock"
        )
    return None


def misfiled_note(inventory: Inventory, cluster: ClusterId) -> str:
    """(in-use/prod.json declares cluster staging): the file a user would look for, or its declaration (of the same
    account: another account's file declaring this name is not this cluster's)."""
    notes = [
        f"{source} declares cluster {manifest.cluster}"
        for source, manifest in sorted(inventory.misfiled.items())
        if cluster in (inventory.cluster_of(source), ClusterId(inventory.cluster_of(source).account, manifest.cluster))
    ]
    return f" ({'; '.join(notes)})" if notes else ""


@dataclass
class InUseIndex:
    """In-use references resolved for one registry: by digest anywhere, and by repository and tag.
    Built once per run and only read afterwards."""

    registry: RegistryCoordinates = UNKNOWN_REGISTRY
    by_digest: dict[str, list[Workload]] = field(default_factory=lambda: defaultdict(list))
    by_tag: dict[tuple[str, str], list[Workload]] = field(default_factory=lambda: defaultdict(list))
    # cluster -> image strings that look like ECR references but cannot be parsed and carry no digest:
    # images this run cannot protect, so an expected cluster that has them blocks the run.
    unresolved: dict[ClusterId, list[str]] = field(default_factory=lambda: defaultdict(list))
    # cluster -> the ECR registries (account, region) its references name, and the clusters of which at
    # least one ECR reference is of the planned registry or of one of its replicas: a cluster with references but
    # none of those was exported from another account or region than the snapshot.
    registries: dict[ClusterId, set[tuple[str, str]]] = field(default_factory=lambda: defaultdict(set))
    in_known_registry: set[ClusterId] = field(default_factory=set)
    warnings: tuple[str, ...] = ()  # image strings of the manifests that are not references

    @classmethod
    def build(
        cls,
        manifests: Iterable[ClusterManifest],
        registry: RegistryCoordinates,
        remembered: Iterable[tuple[RememberedImage, str]] = (),
        at: tuple[datetime, timedelta] | None = None,
    ) -> InUseIndex:
        """`manifests`: every readable manifest with the cluster it is of (Inventory.protecting). `remembered`: the
        in-use memory's references that protect now, each with how its reason says when it was seen
        (domain/in_use/memory.py); they protect as the manifests' own do, and inform no warning. `at`: the run's clock
        and safety.in_use_grace, by which an Inspector entry is in use (domain/inventory/inspector.py); without it
        (a review without a clock) every Inspector entry that was ever in use protects, the safe side."""
        index = cls(registry=registry)
        warnings: list[str] = []
        for read in sorted(manifests, key=lambda read: read.cluster):
            manifest = read.manifest if at is None else in_use_part(read.manifest, *at)
            warnings.extend(index._add_manifest(read.cluster, manifest))
        index.warnings = tuple(warnings)
        for image, note in remembered:
            index.remember(image, note)
        return index

    def _add_manifest(self, cluster: ClusterId, manifest: InUseManifest) -> list[str]:
        """Index the manifest's references; the warnings of the image strings that are none (the first few named)."""
        warnings: list[str] = []
        lookalikes: list[str | None] = []
        invalid = 0
        for entry in _ever_in_use(manifest):
            usage = usage_of(str(cluster), entry)
            reading = read_reference(entry.image, self.registry)
            lookalikes.append(_lookalike_host_warning(cluster, entry, reading))
            if not isinstance(reading, NotAReference):
                self.add(cluster, reading, entry.digest, usage)
                continue
            if entry.digest:
                self.by_digest[entry.digest].append(usage)
            elif looks_like_ecr(entry.image, self.registry.registry_id):
                self.unresolved[cluster].append(entry.image)
                continue
            invalid += 1
            if invalid <= MAX_WARNINGS_PER_CLUSTER:
                kept = "protected by its digest only" if entry.digest else "not an ECR image, ignored"
                warnings.append(f"cluster {cluster}: {reading.error}; {kept}")
        if invalid > MAX_WARNINGS_PER_CLUSTER:
            warnings.append(f"cluster {cluster}: {invalid} image strings are not references in all")
        return warnings + _capped_lookalikes(cluster, lookalikes)

    def remember(self, image: RememberedImage, note: str) -> None:
        usage = usage_of(image.cluster, image, remembered=note)
        reading = read_reference(image.image, self.registry)
        if isinstance(reading, NotAReference):  # the manifest's reading warned of it; its digest, if any, protects
            if image.digest:
                self.by_digest[image.digest].append(usage)
            return
        self.add(image.cluster_id, reading, image.digest, usage, track=False)

    def add(
        self,
        cluster: ClusterId,
        reading: NotEcr | EcrReading,
        resolved: str | None,
        usage: Workload,
        *,
        track: bool = True,
    ) -> None:
        """One in-use reference (and the digest the cluster resolved it to, if any):
        - of this registry, or of a destination that our deletions reach (a replica with delete replication of
          the same repository): its digest protects in every repository, its tag the digest our tag points to;
        - of a replica that our deletions do not reach: nothing here (that copy stays whatever we delete);
        - of any other registry: its digest still protects (we cannot know how it relates to ours), its tag not.
        `track`: whether it counts for the registries each cluster's manifest names (a remembered one does not)."""
        if not isinstance(reading, NotEcr):
            if track:
                self._track(cluster, reading.ecr_registry, known=not isinstance(reading, InOtherRegistry))
            reached = self._protect_ecr_tag(reading, usage)
            if reached is None:
                return
            usage = reached
        reference = reading.reference
        if resolved:
            self.by_digest[resolved].append(usage)
        if reference.digest and reference.digest != resolved:
            self.by_digest[reference.digest].append(usage)

    def _protect_ecr_tag(self, reading: EcrReading, usage: Workload) -> Workload | None:
        """Protect by tag what an ECR reference names here; the usage its digests protect with (naming the replica
        it runs from), or None for a replica our deletions do not reach."""
        if isinstance(reading, InUnreachedReplica):
            return None
        if isinstance(reading, InOtherRegistry):
            return usage  # another registry: how its tags relate to ours is unknown
        if isinstance(reading, InReachedReplica):
            usage = usage.model_copy(update={"replica": replica_note(reading.replica, self.registry.registry_id)})
        reference = reading.reference
        if reference.tag:
            self.by_tag[(reference.repository, reference.tag)].append(usage)
        return usage

    def _track(self, cluster: ClusterId, registry: tuple[str, str], *, known: bool) -> None:
        self.registries[cluster].add(registry)
        if known:
            self.in_known_registry.add(cluster)

    def clusters_in(self, registry: tuple[str, str], clusters: Iterable[ClusterId]) -> list[str]:
        """The given clusters whose manifests reference images of that registry, as people read them."""
        return [str(cluster) for cluster in sorted(clusters) if registry in self.registries.get(cluster, ())]

    def unresolved_blockers(self, expected: Iterable[ClusterId]) -> InventoryCheck:
        """Images no guard could protect: they block an expected cluster's run, and are a warning otherwise."""
        expected = set(expected)
        blockers, warnings = [], []
        for cluster, images in sorted(self.unresolved.items()):
            problem = (
                f"cluster {cluster}: in-use image {images[0]!r}"
                + (f" and {len(images) - 1} more" if len(images) > 1 else "")
                + " looks like ECR but is not a valid reference and has no digest, so it cannot be protected"
            )
            if cluster in expected:
                blockers.append(problem)
            else:
                warnings.append(problem)
        return InventoryCheck(blocked=tuple(blockers), warnings=tuple(warnings))

    def foreign_registry_warnings(
        self, expected: Iterable[ClusterId], other_registries: Collection[tuple[str, str]] = ()
    ) -> tuple[str, ...]:
        """An expected cluster whose ECR references all name other registries than the snapshot's (and than the run's
        other registries): its tag references cannot protect anything here, which nobody would notice without a
        word."""
        registry_id, region = self.registry.registry_id, self.registry.region
        warnings = []
        for cluster in sorted(set(expected)):
            registries = sorted(self.registries.get(cluster, ()))
            if not registries or cluster in self.in_known_registry or set(registries) & set(other_registries):
                continue
            named = _registries_named(registries)
            warnings.append(
                f"cluster {cluster}: the snapshot is of registry {registry_id or 'unknown'} in {region or 'unknown'}, "
                f"but the in-use manifest references only ECR registr{'y' if len(registries) == 1 else 'ies'} "
                f"{named}; no tag reference of this cluster protects anything in this run (digests still "
                "do): is the snapshot of the right account and region?"
            )
        return tuple(warnings)

    def usages(self, repository: str, image: ImageDetail) -> list[Workload]:
        found = list(self.by_digest.get(image.image_digest, ()))
        for tag in image.image_tags:
            found.extend(self.by_tag.get((repository, tag), ()))
        return found


def _registries_named(registries: Sequence[tuple[str, str]]) -> str:
    """The first three registries, `<account> in <region>`, and how many more."""
    named = ", ".join(f"{account} in {where}" for account, where in registries[:3])
    return named + (f" and {len(registries) - 3} more" if len(registries) > 3 else "")


def replica_note(replica: Replica, source_registry_id: str | None) -> str:
    """How a reason names the destination a workload runs in: `us-east-1, replicated`."""
    account = "" if replica.registry_id == source_registry_id else f", account {replica.registry_id}"
    return f"{replica.region}{account}, replicated"


def unknown_ecr_host_warnings(read: ClusterManifest | InUseManifest) -> list[str]:
    """The manifest's images whose host says it is ECR's (`.dkr.ecr.`, `.dkr-ecr.`) but is no ECR host of any
    partition this tool reads (docs/safety.md section 32): read as another registry's, so a tag there protects
    nothing; never in silence (the first few named, then how many in all). `read`: a manifest with the cluster it is
    of (Inventory.protecting); a bare manifest is one of this account's (Inventory.manifests)."""
    if isinstance(read, InUseManifest):
        read = ClusterManifest(ClusterId.here(read.cluster), read)
    return _capped_lookalikes(
        read.cluster, (_lookalike_host_warning(read.cluster, entry) for entry in read.manifest.images)
    )


def _capped_lookalikes(cluster: ClusterId, found: Iterable[str | None]) -> list[str]:
    warnings = [warning for warning in found if warning is not None]
    if len(warnings) > MAX_WARNINGS_PER_CLUSTER:
        more = len(warnings) - MAX_WARNINGS_PER_CLUSTER
        return [*warnings[:MAX_WARNINGS_PER_CLUSTER], f"cluster {cluster}: {more} more such images"]
    return warnings


def _lookalike_host_warning(
    cluster: ClusterId, entry: InUseImage, reading: ReferenceReading | None = None
) -> str | None:
    """`reading`: the image as the caller already read it (whether it is ECR does not depend on the registry)."""
    if reading is None:
        if "dkr" not in entry.image.lower():
            return None  # no ECR host, nor one that looks like it
        reading = read_reference(entry.image, UNKNOWN_REGISTRY)
    if not (isinstance(reading, NotEcr) and reading.looks_like_ecr):
        return None
    kept = "protected by its digest only" if entry.digest or reading.reference.digest else "not protected"
    return (
        f"cluster {cluster}: in-use image {entry.image!r} names host {reading.reference.host}, which "
        f"looks like ECR but is no ECR registry host of any partition known here; read as another "
        f"registry's, {kept}"
    )


def looks_like_ecr(text: str, registry_id: str | None) -> bool:
    return ".dkr.ecr" in text or ".dkr-ecr" in text or bool(registry_id and registry_id in text)


def usage_of(cluster: str, entry: InUseImage, *, remembered: str | None = None) -> Workload:
    """Where an entry runs, as reasons name it; an Amazon Inspector entry in Inspector's words."""
    return Workload(
        cluster=cluster,
        namespace=entry.namespace,
        workload=entry.workload,
        source=entry.source,
        remembered=remembered,
        inspector=inspector_words(entry) if entry.source == INSPECTOR_SOURCE else None,
    )


def _ever_in_use(manifest: InUseManifest) -> list[InUseImage]:
    """The entries that can protect: all, but an Amazon Inspector entry Inspector never saw in use."""
    return [entry for entry in manifest.images if in_use_since(entry, manifest.generated_at) is not None]


def in_use_part(manifest: InUseManifest, now: datetime, grace: timedelta) -> InUseManifest:
    """The manifest without the Inspector entries that are not in use at `now` (inUseCount 0 and lastInUseAt more
    than the grace ago); the manifest itself when it has none."""
    kept = tuple(entry for entry in manifest.images if in_use_at(entry, manifest.generated_at, now, grace))
    if len(kept) == len(manifest.images):
        return manifest
    return manifest.model_copy(update={"images": kept})
