"""The tagger's decisions (the kube-ecr-tagger idea, serverless): which images of this registry run in the
clusters and namespaces a `tagging` rule selects, and the tag each one gets: `<tag_prefix><unix seconds>`,
once per image and prefix."""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from pydantic.alias_generators import to_camel

from ecr_retention.domain.config import RetentionConfig, TaggingRule
from ecr_retention.domain.inventory.clusters import ClusterId
from ecr_retention.domain.inventory.manifest import InUseImage, InUseManifest
from ecr_retention.domain.patterns import matches_any
from ecr_retention.domain.registry.coordinates import InThisRegistry, RegistryCoordinates, read_reference
from ecr_retention.domain.registry.references import ImageReference
from ecr_retention.domain.timestamps import UtcDatetime

TagEntryStatus = Literal["tagged", "would-tag", "already-tagged", "immutable", "gone", "failed"]


@dataclass(frozen=True, order=True)
class TagCandidate:
    repository: str
    image_digest: str
    tag_prefix: str
    tag: str


@dataclass(frozen=True)
class TagSelection:
    candidates: tuple[TagCandidate, ...]
    notes: tuple[str, ...]  # references that could not be tagged, and why


def select_for_tagging(
    config: RetentionConfig,
    manifests: Mapping[ClusterId, InUseManifest],
    *,
    registry: RegistryCoordinates,
    now: datetime,
) -> TagSelection:
    """Only images of this registry (account and region both match) with a known digest: a pod's resolved
    image ID or a digest-pinned reference. A tag-only reference names what a template asks for, not what
    runs, so it is noted and left alone. So is an image of a repository that no policy manages: a deployment
    tag only matters to a policy's keep rules, and the deployed tagger may write only where a policy applies
    (its IAM role's PutImage is scoped to the policies' repository patterns).

    Each image gets a tag of its own: PutImage moves a tag that another image of the repository carries (or,
    in an IMMUTABLE repository, refuses it), so images of one repository deployed together, a rollout, must not
    share `<prefix><seconds>`. The first (by digest) gets the run's second, each further one the second before,
    so that no tag names a time after the run.

    `manifests`: each cluster's own manifest (Inventory.standing): a rule's `prod` is this account's, and a spoke's
    cluster of that name tags nothing for it (a rule names the spoke's as `<account>/<name>`)."""
    selection = _Selection(
        managed=tuple(
            pattern
            for policy in config.policies
            if policy.applies_in(registry.region)
            for pattern in policy.repositories
        ),
        registry=registry,
    )
    for rule in config.tagging:
        for cluster in rule.clusters:
            selection.add_cluster(rule, cluster, manifests.get(cluster))
    return TagSelection(candidates=with_own_tags(selection.found, now), notes=tuple(dict.fromkeys(selection.notes)))


@dataclass
class _Selection:
    """What select_for_tagging has found so far, and its notes, in the order it came upon them."""

    managed: tuple[str, ...]  # the repository patterns of every policy that governs this registry's Region
    registry: RegistryCoordinates
    found: set[tuple[str, str, str]] = field(default_factory=set)  # (repository, digest, tag prefix)
    notes: list[str] = field(default_factory=list)

    def add_cluster(self, rule: TaggingRule, cluster: ClusterId, manifest: InUseManifest | None) -> None:
        if manifest is None:
            self.notes.append(f"tagging {rule.tag_prefix}*: cluster {cluster} has no readable in-use manifest")
            return
        for entry in manifest.images:
            if matches_any(entry.namespace, rule.namespaces):
                self.add_image(rule.tag_prefix, cluster, entry)

    def add_image(self, tag_prefix: str, cluster: ClusterId, entry: InUseImage) -> None:
        reference = self._of_this_registry(entry.image)
        if reference is None:
            return
        if not matches_any(reference.repository, self.managed):
            self.notes.append(f"{reference.repository}: no policy manages this repository; not tagged")
            return
        digest = entry.digest or reference.digest
        if digest is None:
            self.notes.append(f"{cluster}: {entry.image} has no resolved digest; not tagged")
            return
        self.found.add((reference.repository, digest, tag_prefix))

    def _of_this_registry(self, image: str) -> ImageReference | None:
        """The reference, when it names this registry (account and region both); None for anything else (a replica
        included: a tag written here is not the replica's)."""
        reading = read_reference(image, self.registry)
        return reading.reference if isinstance(reading, InThisRegistry) else None


def with_own_tags(found: Iterable[tuple[str, str, str]], now: datetime) -> tuple[TagCandidate, ...]:
    seconds = int(now.timestamp())
    taken: Counter[tuple[str, str]] = Counter()  # (repository, prefix) -> tags handed out
    candidates = []
    for repository, digest, prefix in sorted(found):
        tag = f"{prefix}{seconds - taken[repository, prefix]}"
        taken[repository, prefix] += 1
        candidates.append(TagCandidate(repository, digest, prefix, tag))
    return tuple(sorted(candidates))


def already_marked(tags: Sequence[str], prefix: str) -> bool:
    return any(tag.startswith(prefix) for tag in tags)


class TagModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class TagEntry(TagModel):
    repository_name: str
    image_digest: str
    tag: str
    status: TagEntryStatus
    detail: str = ""
    # The registry's Region when it is not the home one (a deployment of several Regions); None, and left out of the
    # wire: the home Region's, as every entry of a deployment of one Region.
    region: str | None = None

    @model_serializer(mode="wrap")
    def _home_region_unsaid(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data: dict[str, object] = handler(self)
        if self.region is None:
            data.pop("region", None)
        return data


class TagReport(TagModel):
    run_id: str
    dry_run: bool
    generated_at: UtcDatetime
    entries: tuple[TagEntry, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def has_problems(self) -> bool:
        return any(entry.status in ("immutable", "failed") for entry in self.entries)

    def count(self, status: TagEntryStatus) -> int:
        return sum(1 for entry in self.entries if entry.status == status)
