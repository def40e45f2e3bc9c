"""The in-use references (SPEC "The sentinel"), read by the run's evaluations and in-use check, the report and the
sentinel: what the workloads pull from this registry, which of it is missing, and which workloads a removal made by
something else (a native lifecycle policy, a person, another script) takes an image from.

Pure. The sweep checks every pulled reference against the registry (`missing_references`: managed repositories
against the snapshot their evaluation reads, the others against DescribeImages by image id); the sentinel function
matches each removal event against them (`affected_by`) and confirms against the registry what is really gone.

What a pull asks for decides what is missing: a reference with a digest (`app@sha256:...`, `app:1.0@sha256:...`)
pulls that digest, a reference by tag pulls whatever the tag points to now. So a tag that moved to another digest is
not missing (the next pull gets the new image), and an ARCHIVED image is not missing either (it is restored, or
reported in use and archived, SPEC "Archived images").
"""

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Literal

from pydantic import Field, SerializationInfo, field_serializer

from ecr_retention.domain.config import Safety
from ecr_retention.domain.in_use.index import replica_note
from ecr_retention.domain.in_use.memory import still_protecting
from ecr_retention.domain.in_use.suspect_readings import suspect_readings
from ecr_retention.domain.inventory.clusters import ClusterId
from ecr_retention.domain.inventory.inspector import INSPECTOR_SOURCE, in_use_at, inspector_words
from ecr_retention.domain.inventory.manifest import InUseImage, InUseManifest, Inventory, RememberedImage, Workload
from ecr_retention.domain.planning.plan_model import PlanModel
from ecr_retention.domain.registry.coordinates import InReachedReplica, RegistryCoordinates, reference_into
from ecr_retention.domain.registry.digests import short_digest
from ecr_retention.domain.registry.references import ImageReference
from ecr_retention.domain.timestamps import UtcDatetime

if TYPE_CHECKING:  # the models of a registry's images load where images are read: the sentinel reads few
    from ecr_retention.domain.registry.images import ImageDetail

# The workloads a finding or an alert names before "and N more".
MAX_WORKLOADS_NAMED = 3


@dataclass(frozen=True, slots=True)
class PulledReference:
    """One image name that workloads pull from this registry, with every workload that pulls it. A reference to a
    destination our deletions replicate to is named by its source repository (the same name): a removal here is a
    removal there."""

    repository: str
    tag: str | None
    digest: str | None  # the reference's own digest: the next pull asks for exactly that image
    resolved: frozenset[str]  # the digests the clusters resolved it to (pod imageID), or the memory remembered
    workloads: tuple[Workload, ...]

    @property
    def image(self) -> str:
        """How people name it: `app:dev`, `app@sha256:1a2b3c4d5e6f`."""
        if self.digest is not None:
            return f"{self.repository}@{short_digest(self.digest, with_algorithm=True)}"
        return f"{self.repository}:{self.tag}"

    @property
    def image_id(self) -> dict[str, str]:
        """What DescribeImages is asked for to see whether the next pull succeeds."""
        return {"imageDigest": self.digest} if self.digest is not None else {"imageTag": str(self.tag)}

    def pulls(self, images: "Iterable[ImageDetail]") -> "ImageDetail | None":
        """The image the next pull gets among these, or None when none answers the reference."""
        for image in images:
            if self.digest is not None and image.image_digest == self.digest:
                return image
            if self.digest is None and self.tag in image.image_tags:
                return image
        return None


def _clusters_of(remembered: Sequence[RememberedImage]) -> list[ClusterId]:
    return sorted({image.cluster_id for image in remembered})


def pulled_references(
    inventory: Inventory,
    *,
    now: datetime,
    safety: Safety,
    registry: RegistryCoordinates,
    checked_elsewhere: frozenset[tuple[str, str]] = frozenset(),
) -> tuple[PulledReference, ...]:
    """What counts as running (SPEC "The sentinel"): every reference into this registry (or a destination its
    deletions reach) of every readable manifest, and, for each cluster whose current reading is suspect (missing,
    unreadable, incomplete, stale, empty, or naming fewer than half the references of its last reading:
    domain/in_use/suspect_readings.py), the in-use memory's references of that cluster within the grace, each workload
    worded with why the memory speaks. A reference that a healthy reading dropped is a workload that moved on: not
    counted. Sorted by repository, then name. `checked_elsewhere`: the (account, Region) of destinations the caller
    checks on their own (registries the same run prunes), whose references are theirs, not this registry's."""
    here = partial(_reference_here, registry=registry, checked_elsewhere=checked_elsewhere)
    workloads: dict[tuple[str, str | None, str | None], dict[tuple[object, ...], Workload]] = defaultdict(dict)
    resolved: dict[tuple[str, str | None, str | None], set[str]] = defaultdict(set)
    for read in inventory.protecting:
        for entry in _running(read.manifest, now, safety.in_use_grace):
            _collect(entry, str(read.cluster), None, here, workloads, resolved)
    remembered = still_protecting(inventory.memory, now, safety.in_use_grace)
    suspect = suspect_readings(inventory, _clusters_of(remembered), now, safety.inventory_max_age)
    for image in remembered:
        suspicion = suspect.get(image.cluster_id)
        if suspicion is not None:
            note = suspicion.note(image, now)
            _collect(image, image.cluster, note, here, workloads, resolved)
    return tuple(
        PulledReference(
            repository=key[0],
            tag=key[1],
            digest=key[2],
            resolved=frozenset(resolved[key]),
            workloads=tuple(sorted(usages.values(), key=lambda usage: usage.runs_where)),
        )
        for key, usages in sorted(workloads.items(), key=lambda item: (item[0][0], item[0][2] or "", item[0][1] or ""))
    )


def _running(manifest: InUseManifest, now: datetime, grace: timedelta) -> list[InUseImage]:
    """A manifest's entries that run now: all of them, but an Amazon Inspector entry only by Inspector's rule."""
    return [entry for entry in manifest.images if in_use_at(entry, manifest.generated_at, now, grace)]


def _collect(
    entry: InUseImage | RememberedImage,
    cluster: str,
    remembered: str | None,
    here: Callable[[str], tuple[ImageReference, str | None] | None],
    workloads: dict[tuple[str, str | None, str | None], dict[tuple[object, ...], Workload]],
    resolved: dict[tuple[str, str | None, str | None], set[str]],
) -> None:
    reference = here(entry.image)
    if reference is None:
        return
    parsed, replica = reference
    key = (parsed.repository, None if parsed.digest else parsed.tag, parsed.digest)
    usage = Workload(
        cluster=cluster,
        namespace=entry.namespace,
        workload=entry.workload,
        source=entry.source,
        replica=replica,
        remembered=remembered,
        inspector=inspector_words(entry) if entry.source == INSPECTOR_SOURCE else None,
    )
    workloads[key].setdefault(usage.runs_where, usage)
    if entry.digest:
        resolved[key].add(entry.digest)


def _reference_here(
    image: str, *, registry: RegistryCoordinates, checked_elsewhere: frozenset[tuple[str, str]]
) -> tuple[ImageReference, str | None] | None:
    """The reference and, for a destination our deletions reach, how reasons name it; None for anything else."""
    here = reference_into(image, registry)
    if here is None or (isinstance(here, InReachedReplica) and here.replica.registry in checked_elsewhere):
        return None
    note = replica_note(here.replica, registry.registry_id) if isinstance(here, InReachedReplica) else None
    return here.reference, note


def in_repository(references: Iterable[PulledReference], repository: str) -> tuple[PulledReference, ...]:
    return tuple(reference for reference in references if reference.repository == repository)


def by_repository(references: Iterable[PulledReference]) -> dict[str, tuple[PulledReference, ...]]:
    """The references grouped by repository, once per run: each evaluation then looks its own up instead of scanning
    every reference (10,000 repositories stay linear)."""
    grouped: dict[str, list[PulledReference]] = defaultdict(list)
    for reference in references:
        grouped[reference.repository].append(reference)
    return {repository: tuple(found) for repository, found in grouped.items()}


# --- removals: what the sentinel records of every removal it sees --------------------------------------------------

RemovalAction = Literal["deleted", "archived"]
# lifecycle: a native lifecycle policy's rule (PolicyExecutionEvent); api: a BatchDeleteImage call (CloudTrail, with
# its principal); image-action: ECR's own ECR Image Action event (DELETE, or UPDATE_STORAGE_CLASS to ARCHIVE), which
# says neither who nor why.
RemovalCause = Literal["lifecycle", "api", "image-action"]


class Removal(PlanModel):
    """One removal of an image or of some of its tags, as an event told it (`removals/` in the bucket, one object per
    event and image). `image_tags` empty: the event named none (a removal by digest)."""

    schema_version: Literal[1] = 1
    repository_name: str
    image_digest: str | None = None
    image_tags: tuple[str, ...] = ()
    action: RemovalAction
    cause: RemovalCause
    rule_priority: int | None = None  # lifecycle: the rule of the repository's policy that acted
    principal: str | None = None  # api: who called
    removed_at: UtcDatetime
    event_id: str
    # The in-use images (as people name them: app:dev) that the sentinel's alert for this removal named, written once
    # the alert is published: another event telling the same removal does not alert them again.
    alerted: tuple[str, ...] = ()
    # The role of the sentinel that wrote the record (SENTINEL_ROLE_ARN): a reader counts only its own deployment's
    # (services/removals.py). None: a record of an older release, which counts for nothing.
    writer: str | None = None
    # The Region of the registry it happened in, when that is not the home Region (the event's `region`); None: the
    # home Region's, as every record of a deployment of one Region.
    region: str | None = None

    @property
    def by_what(self) -> str:
        """`lifecycle rule 1 of app's policy`, `a BatchDeleteImage call by arn:...`, `an ECR DELETE action`."""
        if self.cause == "lifecycle":
            rule = f"rule {self.rule_priority}" if self.rule_priority is not None else "a rule"
            return f"lifecycle {rule} of {self.repository_name}'s policy"
        if self.cause == "api":
            return "a BatchDeleteImage call" + (f" by {self.principal}" if self.principal else "")
        if self.action == "archived":
            return "an archive action (UpdateImageStorageClass to ARCHIVE, or a lifecycle transition)"
        return "an ECR DELETE action (an API call or a lifecycle expiry; a CloudTrail trail tells which)"

    @property
    def told(self) -> str:
        """`deleted 2026-12-01 09:14 UTC by lifecycle rule 1 of app's policy`."""
        return f"{self.action} {self.removed_at:%Y-%m-%d %H:%M} UTC by {self.by_what}"

    def names(self, reference: PulledReference) -> bool:
        """Whether this removal may have taken what the reference pulls (the registry confirms): its digest (or, for an
        index, a child of it), or its tag; a removal that names no tag took the whole image, and with it the tags of
        the digests the clusters resolved."""
        if reference.repository != self.repository_name or (self.image_digest is None and not self.image_tags):
            return False
        if reference.digest is not None:
            return reference.digest == self.image_digest
        if self.image_tags:
            return reference.tag in self.image_tags
        return self.image_digest in reference.resolved


def affected_by(
    removal: Removal,
    references: Iterable[PulledReference],
    children: Mapping[str, Sequence[str]] = {},
) -> tuple[PulledReference, ...]:
    """The references a removal may have broken: those it names, and those that pull an index whose child it removed
    (`children`: index digest -> its children, for the in-use indexes whose manifests are known). The registry then
    tells which are really gone: a tag removed from a digest that keeps its other tags breaks no digest reference."""
    found = []
    for reference in references:
        pulled = {reference.digest} if reference.digest is not None else set(reference.resolved)
        via_child = removal.repository_name == reference.repository and any(
            removal.image_digest in children.get(index, ()) for index in pulled
        )
        if removal.names(reference) or via_child:
            found.append(reference)
    return tuple(found)


# --- missing references: the sweep's backstop ------------------------------------------------------------------------

Missing = Literal["tag", "digest", "repository"]
# The finding's kind, as the sheet's rows and the page's check name it (not a plan's reason: it decides nothing).
IN_USE_MISSING = "in-use-missing"


def _unnamed(region: str | None) -> bool:
    return region is None


class MissingReference(PlanModel):
    """An in-use reference that the next pull cannot get (finding `in-use-missing`): its tag is in no image of its
    repository, its digest is absent, or the repository does not exist. `removed` says when and by what, when the
    sentinel recorded the removal."""

    repository_name: str
    image: str  # as people name it: app:dev, app@sha256:1a2b3c4d5e6f
    image_tag: str | None = None
    image_digest: str | None = None
    missing: Missing
    in_use_by: tuple[Workload, ...]
    # The digests the clusters resolved the reference to (pod imageID) or the memory remembered: what ran, so a lost
    # tag can be put back on a digest that is still there, and a removal recorded by digest alone still names it.
    resolved_digests: tuple[str, ...] = ()
    removed: Removal | None = None
    # The Region of the registry the reference pulls from (its host names it), when the run prunes several; left out
    # of one Region's report, whose texts name none.
    region: str | None = Field(default=None, exclude_if=_unnamed)

    @field_serializer("removed")
    def _removal_as_told(self, removed: Removal | None, info: SerializationInfo) -> dict[str, object] | None:
        """What removed the image, without who wrote the record: the report step counted only this deployment's
        sentinel's records, so a report names the removal, not its writer."""
        if removed is None:
            return None
        data: dict[str, object] = removed.model_dump(
            mode=info.mode, by_alias=info.by_alias, exclude_none=info.exclude_none
        )
        data.pop("writer", None)
        if removed.region is None:
            data.pop("region", None)
        return data

    @property
    def reference(self) -> PulledReference:
        """The reference this finding is about, as the removals are matched against it."""
        return PulledReference(
            repository=self.repository_name,
            tag=self.image_tag,
            digest=self.image_digest,
            resolved=frozenset(self.resolved_digests),
            workloads=self.in_use_by,
        )

    def told_by(self, removals: Sequence[Removal]) -> "MissingReference":
        """This finding with the latest recorded removal that names it (unchanged when none does)."""
        removed = last_removal(self.reference, removals)
        return self if removed is None else self.model_copy(update={"removed": removed})

    @property
    def detail(self) -> str:
        """`the next pull of prod/Deployment/app fails: app:dev no longer exists (deleted 2026-12-01 09:14 UTC by
        lifecycle rule 1 of app's policy)` (`no longer exists in us-east-1` when the run prunes several Regions), then
        why the in-use memory names a workload when it does (`; dev's manifest now reports 0 images; by the in-use
        memory dev ran it 2h ago`)."""
        where = f" in {self.region}" if self.region is not None else ""
        what = {
            "tag": f"{self.image} no longer exists{where}",
            "digest": f"{self.image} no longer exists{where}",
            "repository": f"repository {self.repository_name} does not exist{where}",
        }[self.missing]
        when = f" ({self.removed.told})" if self.removed is not None else ""
        names = workload_names(self.in_use_by)
        return f"the next pull of {names} fails: {what}{when}{memory_notes(self.in_use_by)}"


def workload_names(workloads: Sequence[Workload]) -> str:
    """`prod: prod/Deployment/app (pod)`, up to three, then `and N more`; what the in-use memory says of them is
    `memory_notes`, said once after the sentence."""
    shown = workloads[:MAX_WORKLOADS_NAMED]
    named = ", ".join(str(workload.model_copy(update={"remembered": None})) for workload in shown)
    more = len(workloads) - MAX_WORKLOADS_NAMED
    return named + (f" and {more} more" if more > 0 else "")


def memory_notes(workloads: Sequence[Workload]) -> str:
    """`; dev's manifest now reports 0 images; by the in-use memory dev ran it 2h ago`: why the memory names the
    workloads `workload_names` shows, each note once; empty when no manifest's silence is in question."""
    shown = workloads[:MAX_WORKLOADS_NAMED]
    return "".join(f"; {note}" for note in dict.fromkeys(w.remembered for w in shown if w.remembered))


def missing_references(
    references: Iterable[PulledReference],
    images: "Sequence[ImageDetail] | None",
    removals: Sequence[Removal] = (),
) -> tuple[MissingReference, ...]:
    """Which of one repository's references the next pull cannot get. `images`: the repository's images in every
    storage class as the registry answered (all of them, or at least those the references name), None when the
    repository does not exist. `removals`: what the sentinel recorded for the repository, to say when and by what."""
    references = tuple(references)
    if not references:  # most repositories: no set of a large repository's digests and tags is built for nothing
        return ()
    missing = []
    present = _Present.of(images) if images is not None else None
    for reference in references:
        if present is not None and present.answers(reference):
            continue
        kind: Missing = "repository" if images is None else "digest" if reference.digest is not None else "tag"
        missing.append(
            MissingReference(
                repository_name=reference.repository,
                image=reference.image,
                image_tag=reference.tag,
                image_digest=reference.digest,
                missing=kind,
                in_use_by=reference.workloads,
                resolved_digests=tuple(sorted(reference.resolved)),
                removed=last_removal(reference, removals),
            )
        )
    return tuple(missing)


@dataclass(frozen=True, slots=True)
class _Present:
    """A repository's digests and tags, gathered once: each reference is then answered at once, not by a scan of
    the repository's images (a repository of 100,000 images that a thousand references name)."""

    digests: frozenset[str]
    tags: frozenset[str]

    @classmethod
    def of(cls, images: "Sequence[ImageDetail]") -> "_Present":
        return cls(
            frozenset(image.image_digest for image in images),
            frozenset(tag for image in images for tag in image.image_tags),
        )

    def answers(self, reference: PulledReference) -> bool:
        """Whether the next pull of the reference gets an image (as PulledReference.pulls says, without the scan)."""
        if reference.digest is not None:
            return reference.digest in self.digests
        return reference.tag in self.tags


def last_removal(reference: PulledReference, removals: Sequence[Removal]) -> Removal | None:
    """The latest recorded removal that names what the reference pulls."""
    naming = [removal for removal in removals if removal.names(reference)]
    return max(naming, key=lambda removal: removal.removed_at, default=None)
